"""Mixed-precision benchmark: the same data-parallel trainer compiled with
its dense gradient exchanges in f32 and, with --wire
(--dtrain-mixed-precision), in bf16 and f16, and with the forward and
backward passes in bf16 too (--precision bf16 --wire bf16), measured on 4
ranks over the emulated 1 Gbit/s cluster (as root,
scripts/emulated-cluster.sh) and over shared memory.

usage: wire_bench.py [--models M ...] [--ranks P] [--steps N]
                     [--cluster | --no-cluster] [--no-shm] BUILD_DIR

Each trainer runs --steps steps (one kernel thread per rank, --bind-to
none); the step time is the last half's, the fastest of --repeats runs
(default 2) taken round robin over the variants. The table gives the step
time, the speed-up over f32, the bytes each rank sends per step (the
runtime's count: a ring all-reduce's 2(P-1)/P of the payload) and their
ratio to f32, and the step time that --dtrain-simulate-step predicts for
the variant's step (network=profile: the compute before each exchange and
the all-reduce cost that the f32 trainer's --profile measured on the same
network) with its ratio to the measured one. On this CPU the 16-bit
compute runs the heavy ops in the f32 kernels, with conversions around
them. Models (per-rank batch 8, 10
classes at 3x32x32, random data, momentum SGD): resnet18 (11.2 M
parameters) and vgg16_bn in its CIFAR form (14.7 M parameters).
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import data_parallel_bench as dp  # noqa: E402

# (label, dtrain-compile flags, --dtrain-mixed-precision options)
VARIANTS = [
    ("f32", [], "wire=f32"),
    ("bf16 wire", ["--wire", "bf16"], "wire=bf16"),
    ("f16 wire", ["--wire", "f16"], "wire=f16"),
    ("bf16 compute and wire", ["--precision", "bf16", "--wire", "bf16"],
     "compute=bf16 wire=bf16"),
]


def measure(exe, data, batch, ranks, steps, launcher):
    """The step time and the last window's bytes."""
    last, _ = dp.parse(dp.run(launcher(ranks) + dp.RANK_ENV + [
        exe, "--data", data, "--steps", str(steps), "--log-every",
        str(steps // 2), "--no-shuffle"]))
    return dict(step_ms=1e3 * batch * ranks / float(last["samples/s"]),
                sent_MB=float(last["sent_MB"]))


def bench_network(title, launcher, models, compile_tool, work, ranks, steps,
                  repeats):
    print("\n### " + title)
    print("| model | precision | step ms | speed-up | MB sent per rank per "
          "step | vs f32 | predicted step ms | predicted / measured |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for name, (onnx, data, batch) in models.items():
        trainers = {}
        for label, flags, _ in VARIANTS:
            exe = os.path.join(work, "%s-%s" % (name, label.replace(" ", "-")))
            if not os.path.exists(exe):
                dp.run([compile_tool, onnx, "--batch-size", str(batch),
                        "--optimizer", "momentum", "--lr", "0.01", "-o",
                        exe] + flags)
            trainers[label] = exe
        profile = os.path.join(work, "%s-%s.json" % (name, title[:3]))
        dp.run(launcher(ranks) + dp.RANK_ENV + [
            trainers["f32"], "--data", data, "--steps", str(steps),
            "--no-shuffle", "--profile", profile])
        # The compute is the f32 trainer's, as measured.
        predicted = {
            label: dp.simulate_step(
                compile_tool, onnx, batch,
                "network=profile profile=%s" % profile,
                ["--dtrain-mixed-precision=" + options])[1]
            for label, _, options in VARIANTS}
        best = {}
        for _ in range(repeats):
            for label, _, _ in VARIANTS:
                result = measure(trainers[label], data, batch, ranks, steps,
                                 launcher)
                if label not in best or result["step_ms"] < best[label][
                        "step_ms"]:
                    best[label] = result
        base = best["f32"]
        for label, _, _ in VARIANTS:
            r = best[label]
            print("| %s | %s | %.1f | %.2f | %.3f | %.4f | %.1f | %.2f |" % (
                name, label, r["step_ms"], base["step_ms"] / r["step_ms"],
                r["sent_MB"], r["sent_MB"] / base["sent_MB"],
                predicted[label], predicted[label] / r["step_ms"]))
            sys.stdout.flush()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    dp.add_strategy_bench_arguments(parser, ["resnet18", "vgg16_cifar"], 20)
    args = parser.parse_args()
    return dp.run_strategy_bench(
        args, "dtrain-mixed-precision-bench-",
        "## Mixed precision: exchanges in f32, bf16 and f16, and bf16 "
        "compute, %d ranks, %d steps (the last %d timed)"
        % (args.ranks, args.steps, args.steps // 2),
        lambda title, launcher, models, compile_tool, work: bench_network(
            title, launcher, models, compile_tool, work, args.ranks,
            args.steps, args.repeats))

if __name__ == "__main__":
    sys.exit(main())
