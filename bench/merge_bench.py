"""Gradient-merge benchmark: the same data-parallel trainer compiled with
each --merge strategy, measured on 4 ranks over shared memory and, as root,
over the emulated 1 Gbit/s cluster (scripts/emulated-cluster.sh).

usage: merge_bench.py [--models M ...] [--ranks P] [--steps N] [--batch B]
                      [--repeats R] [--rounds 1|2] [--cluster | --no-cluster]
                      [--cluster-rate RATE] [--no-shm] BUILD_DIR

For each network: once the host is quiet (each core's median chunk of
host_noise.py within 1.25x of the quietest seen, waiting at most 3
minutes), the unmerged trainer runs first --repeats times with
--profile (the planner's model measured there: computation before each
exchange, and the all-reduce cost fitted on the P ranks), and the fastest
run's profile is kept: the machine's noise only adds time, so that one is
the least disturbed, as the fastest run of each strategy it predicts;
then (--rounds 2, the default) the first round's optimal plan and the
single bucket run once each with --profile, and the planners and the
simulator take the lines beside and after the backward pass refitted to
the exchanges of all three profiles (refit-profiles=): the unmerged
trainer's exchanges within the backward pass are small, the buckets large;
then the strategies: none (one
exchange per gradient, WFBP), threshold 25 MiB with a 1 MiB first bucket
(PyTorch DDP), threshold 128 MiB (Horovod), a single bucket, mgwfbp and
optimal (both planned with those lines). Each trainer runs --steps steps
(one kernel thread per rank, rank r pinned to core r mod cores, with its
communication thread); the step time is the last half's, the fastest of
--repeats runs (default 2) taken round robin over the strategies, every
other round in reverse order (a machine that slows down or speeds up over
the rounds then favours none of them). The table gives the buckets, the
measured step time, its spread (the slowest run's time over the
fastest's), its ratio to none, and the step time that
--dtrain-simulate-step predicts from the profile (network=profile: the
measured compute before each exchange, the fitted all-reduce cost, the
measured updates; the threshold strategies' at their thresholds) with
its ratio to the measured one; after it, optimal's step time over the
fastest strategy's for each model, how many predictions lie within 15%,
and optimal's mean step time over each other strategy's with a 95%
bootstrap interval (the timed steps of every run, from the trainers'
--timeline; round robins drawn for both strategies at once, as the
host's speed they ran at is common to both): where the interval holds 1,
the runs do not tell the two apart. Models: resnet18 (62 gradients, 45 MB),
mobilenet_v2 (158 gradients, 9 MB) and the CIFAR ResNet-20 of MG-WFBP's
own experiments (resnet20_cifar: 66 exchanges, 1.1 MB), 10 classes at
3x32x32, per-rank batch 8 (--batch: a small batch makes the start-ups
dominate, as a fast accelerator does), random data. After each network's
table, what its profile makes of the unmerged step: computation, the
exchanges' start-ups and transfers (--cluster-rate 10gbit: the start-ups
dominate the exchanges of resnet20_cifar, where on 1 Gbit/s links the
transfers weigh as much).
"""
import argparse
import json
import os
import re
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import data_parallel_bench as dp  # noqa: E402
import host_noise  # noqa: E402

STRATEGIES = [
    ("none", "none", ""),
    ("ddp-25MB", "threshold", "threshold-bytes=26214400 "
                              "first-bucket-bytes=1048576"),
    ("horovod-128MB", "threshold", "threshold-bytes=134217728 "
                                   "first-bucket-bytes=0"),
    ("single", "threshold", "threshold-bytes=1125899906842624 "
                            "first-bucket-bytes=0"),
    ("mgwfbp", "mgwfbp", "{measured}"),
    ("optimal", "optimal", "{measured}"),
]


def compile_trainer(compile_tool, onnx, batch, exe, strategy, options):
    command = [compile_tool, onnx, "--batch-size", str(batch), "--optimizer",
               "momentum", "--lr", "0.01", "--merge", strategy, "-o", exe]
    if options:
        command += ["--merge-options", options + " report"]
    result = subprocess.run(command, capture_output=True, text=True,
                            stdin=subprocess.DEVNULL)
    if result.returncode != 0:
        sys.exit("%s failed:\n%s" % (" ".join(command), result.stderr))
    summary = re.search(r"remark: \S+: (\d+) buckets for (\d+) exchanges, "
                        r"predicted end ([0-9.]+) s \(none: ([0-9.]+) s\)",
                        result.stderr)
    return summary.groups() if summary else None


def simulate(compile_tool, onnx, batch, measured):
    """--dtrain-simulate-step network=profile with MEASURED (its profile
    options): the predicted iteration ms of every strategy (its threshold
    column at each of STRATEGIES' thresholds), and the lines beside and
    after the backward pass that it costs the exchanges on (its header's
    words)."""
    predicted = {}
    for label, strategy, options in STRATEGIES:
        if strategy == "threshold":
            fields = dp.simulate_step(
                compile_tool, onnx, batch,
                "network=profile %s %s" % (measured, options))
            predicted[label] = fields[3]
    # ranks, then none, threshold, mgwfbp and optimal with efficiencies.
    fields, header = dp.simulate_step(compile_tool, onnx, batch,
                                      "network=profile " + measured,
                                      header=True)
    predicted.update(none=fields[1], mgwfbp=fields[5], optimal=fields[7])
    lines = re.search(r"; ((beside the backward pass|alone) [^;]*"
                      r"(; alone [^;]*)?)", header)
    return predicted, (lines.group(1) if lines else
                       "no lines beside or after the backward pass")


def second_round(compile_tool, onnx, data, batch, work, tag, ranks, steps,
                 launcher, profile):
    """The profile options of the second planning round: PROFILE's lines
    beside and after the backward pass refitted to the exchanges of two
    merged trainers profiled once each, the optimal plan of PROFILE (its
    buckets within the backward pass) and the single bucket (after it),
    whose buckets are larger than the unmerged exchanges that PROFILE's
    lines were fitted to. Returns them, the first optimal plan and its
    step ms in that run."""
    options = dict((label, (strategy, text))
                   for label, strategy, text in STRATEGIES)
    refits, first = [], None
    for label in ("optimal", "single"):
        strategy, text = options[label]
        exe = os.path.join(work, "%s-%s-first" % (tag, label))
        plan = compile_trainer(compile_tool, onnx, batch, exe, strategy,
                               text.format(measured="profile=" + profile))
        path = exe + ".json"
        result = dp.measure(exe, data, batch, ranks, steps, launcher,
                            extra=["--profile", path])
        first = first or (plan, result["step_ms"])
        refits.append(path)
    first_plan, first_ms = first
    return ("profile=%s refit-profiles=%s" % (profile, ",".join(refits)),
            first_plan, first_ms)


def startup_share(name, profile):
    """What PROFILE's fit makes of the unmerged step: its computation, the
    exchanges' start-ups and transfers, and the start-ups' share of the
    exchanges, and the CPU time of the exchanges and of the computing
    thread's calls for them (per rank). Merging saves start-ups, so it has
    the most to gain where they dominate the exchanges and the exchanges
    the step."""
    with open(profile) as f:
        fit = json.load(f)
    sizes = fit["exchange_bytes"]
    calls = len(sizes) * fit["exchange_caller_cpu_s"]
    startups = len(sizes) * fit["startup_s"]
    transfers = sum(sizes) * fit["per_byte_s"]
    cpu = (len(sizes) * fit["exchange_cpu_startup_s"] +
           sum(sizes) * fit["exchange_cpu_per_byte_s"])
    ranks_per_core = fit["host_ranks"] / fit["host_cores"]
    def line(key, title):
        return ("; %s %.3f ms + %.3f ns/B" % (
            title, fit[key + "_startup_s"] * 1e3,
            fit[key + "_per_byte_s"] * 1e9)
            if key + "_startup_s" in fit else "; no line " + title)
    lines = (line("backward", "beside the backward pass") +
             line("alone", "alone (after the backward pass)"))
    return ("- %s: %d exchanges, %.2f MB; all-reduce %.3f ms + %.3f ns/B "
            "(%s)%s; computation %.1f ms, start-ups %.1f ms, transfers "
            "%.1f ms: start-ups %.0f%% of the exchanges; their CPU time "
            "%.1f ms (%.3f ms + %.3f ns/B) and their calls' on the "
            "computing thread %.1f ms, at %g ranks and %g computing "
            "threads per core" % (
                name, len(sizes), sum(sizes) / 1e6, fit["startup_s"] * 1e3,
                fit["per_byte_s"] * 1e9, fit["cost_from"], lines,
                sum(fit["compute_s"]) * 1e3, startups * 1e3,
                transfers * 1e3, 100 * startups / (startups + transfers),
                cpu * 1e3, fit["exchange_cpu_startup_s"] * 1e3,
                fit["exchange_cpu_per_byte_s"] * 1e9, calls * 1e3,
                ranks_per_core,
                fit["host_threads"] / fit["host_cores"]))


def mean_ratio_interval(runs_a, runs_b, resamples=2000):
    """The mean step time of A over B's (each a list of runs, one per round
    robin, each run its timed steps' times), with a 95% interval from a
    two-stage bootstrap: round robins drawn with replacement, the same ones
    for A and B, then steps within each drawn run (steps of one run share
    its placement on the cores, so they are not independent of each other).
    Drawing A's and B's runs of one round robin together keeps what they
    share: the host's speed in the minute they ran, which drifts by up to
    2x over a bench (host_noise.py) and would otherwise widen the interval
    as if it were a difference between the strategies."""
    rng = np.random.default_rng(0)
    rounds = len(runs_a)
    assert len(runs_b) == rounds, "one run of each strategy per round robin"

    def resampled_mean(runs, drawn):
        return np.concatenate([rng.choice(runs[d], len(runs[d]))
                               for d in drawn]).mean()

    ratios = np.empty(resamples)
    for i in range(resamples):
        drawn = rng.integers(rounds, size=rounds)
        ratios[i] = (resampled_mean(runs_a, drawn) /
                     resampled_mean(runs_b, drawn))
    mean = lambda runs: np.concatenate(runs).mean()
    return (mean(runs_a) / mean(runs_b), np.percentile(ratios, 2.5),
            np.percentile(ratios, 97.5))


def bench_network(title, unpinned, models, compile_tool, work, ranks, steps,
                  repeats, rounds):
    launcher = lambda p: unpinned(p) + dp.PIN_RANK_TO_CORE
    print("\n### " + title)
    print("| model | strategy | buckets | step ms | spread | vs none | "
          "predicted step ms | predicted / measured |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    shares, verdicts, intervals = [], [], []
    predictions = within = slower = 0
    for name, (onnx, data, batch) in models.items():
        base = os.path.join(work, "%s-none" % name)
        compile_trainer(compile_tool, onnx, batch, base, "none", "")
        host = host_noise.wait_until_quiet()
        profiled = []
        for r in range(repeats):
            path = os.path.join(work, "%s-%s-%d.json" % (name, title[:3], r))
            result = dp.measure(base, data, batch, ranks, steps, launcher,
                                extra=["--profile", path])
            profiled.append((result["step_ms"], path))
        profile = min(profiled)[1]
        measured = "profile=" + profile
        share = (startup_share(name, profile) + "; the fastest of %s"
                 % ", ".join("%.1f" % ms for ms, _ in profiled)
                 + " ms unmerged runs with --profile, started with the "
                 "host " + host)
        if rounds > 1:
            measured, first_plan, first_ms = second_round(
                compile_tool, onnx, data, batch, work,
                "%s-%s" % (name, title[:3]), ranks, steps, launcher, profile)
        predicted, lines = simulate(compile_tool, onnx, batch, measured)
        if rounds > 1:
            share += ("; the first round's `optimal`: %s buckets, predicted "
                      "end %.1f ms, a %.1f ms step in its run with --profile; "
                      "refitted to its profile and the single bucket's: %s"
                      % (first_plan[0], 1e3 * float(first_plan[2]), first_ms,
                         lines))
        shares.append(share)
        variants = []
        for label, strategy, options in STRATEGIES:
            exe = os.path.join(work, "%s-%s" % (name, label))
            plan = compile_trainer(compile_tool, onnx, batch, exe, strategy,
                                   options.format(measured=measured))
            variants.append((label, strategy, exe, plan))
        # Round robin, the fastest of REPEATS runs: the machine's noise
        # spreads over all strategies alike. The spread (slowest / fastest
        # run) says how far apart two strategies must be to differ.
        runs, step_times = {}, {}
        timeline = os.path.join(work, "timeline.json")
        for round_index in range(repeats):
            for label, _, exe, _ in (variants[::-1] if round_index % 2
                                     else variants):
                result = dp.measure(exe, data, batch, ranks, steps, launcher,
                                    timeline)
                runs.setdefault(label, []).append(result["step_ms"])
                step_times.setdefault(label, []).append(result["step_times"])
        best = {label: min(times) for label, times in runs.items()}
        for label, strategy, exe, plan in variants:
            buckets = plan[0] if plan else "-"
            if strategy == "none":
                buckets = "one per gradient"
            print("| %s | %s | %s | %.1f | %.2f | %.2f | %.1f | %.2f |" % (
                name, label, buckets, best[label],
                max(runs[label]) / best[label], best[label] / best["none"],
                predicted[label], predicted[label] / best[label]))
            sys.stdout.flush()
        for label, seconds in predicted.items():
            predictions += 1
            within += abs(seconds / best[label] - 1) <= 0.15
        fastest = min(best, key=best.get)
        verdicts.append("%s %.3f of %s" % (name, best["optimal"] /
                                           best[fastest], fastest))
        for label in runs:
            if label == "optimal":
                continue
            ratio, low, high = mean_ratio_interval(step_times["optimal"],
                                                   step_times[label])
            intervals.append("%s %s %.3f [%.3f, %.3f]" % (name, label, ratio,
                                                        low, high))
            slower += low > 1
    print("\n`optimal` against the fastest strategy: %s; predictions within "
          "15%% of measured: %d of %d" % ("; ".join(verdicts), within,
                                         predictions))
    print("\n`optimal`'s mean step time over each other strategy's (every "
          "run's timed steps; 95%% interval of a bootstrap over round "
          "robins, each drawn for both strategies, then steps): %s; the "
          "interval lies above 1 in %d of %d"
          % ("; ".join(intervals), slower, len(intervals)))
    print("\nThe unmerged exchanges by the profile's fit:\n" +
          "\n".join(shares))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    dp.add_strategy_bench_arguments(
        parser, ["resnet18", "mobilenet_v2", "resnet20_cifar"], 30)
    parser.add_argument("--rounds", type=int, choices=(1, 2), default=2,
                        help="planning rounds (default 2: the lines refitted "
                        "to profiles of the first round's optimal plan and "
                        "single bucket)")
    args = parser.parse_args()
    return dp.run_strategy_bench(
        args, "dtrain-merge-bench-",
        "## Gradient merging, %d ranks, %d steps (the last %d timed)"
        % (args.ranks, args.steps, args.steps // 2),
        lambda title, launcher, models, compile_tool, work: bench_network(
            title, launcher, models, compile_tool, work, args.ranks,
            args.steps, args.repeats, args.rounds))

if __name__ == "__main__":
    sys.exit(main())
