"""Data-parallel training benchmark: trainers compiled by dtrain-compile
(data parallel) run under mpirun on 1, 2 and 4 ranks, with the gradient
exchange overlapped with the backward pass (WFBP, the default) and, as the
baseline, started only after the backward pass (--exchange-schedule=
after-backward), over shared memory and, as root, over the emulated
1 Gbit/s cluster of scripts/emulated-cluster.sh (4 network namespaces).

usage: data_parallel_bench.py [--models M ...] [--ranks P ...] [--steps N]
                              [--cluster | --no-cluster] BUILD_DIR

Models (per-rank batch): the digits CNN of test/Examples/digits.py (32, the
digits), resnet18 with 10 classes at 3x32x32 (8, random images; 11.2 M
parameters, 45 MB of gradients per step). Momentum SGD. Weak scaling: each
rank steps on its own batch, so P ranks process P times the samples. Each
rank runs one kernel thread (OMP_NUM_THREADS=1, mpirun --bind-to none):
this machine has 2 cores, so 2 ranks fill it and 4 oversubscribe it (their
efficiency is at most 0.5 for that reason alone).

For each run the trainer's last progress window (after the first, which
holds the warm-up) gives: step time (ms), samples/s over all ranks, the
communication time per step on the communication thread (comm_ms), the
time the step waited for it (wait_ms), bytes each rank sends per step, and
the hidden fraction 1 - wait/comm (the part of the communication that
overlapped computation; from the run's totals). Scaling efficiency is
samples/s(P) / (P x samples/s(1)); on 2 cores it is bounded by the cores,
so each table also gives the efficiency against the same rank count over
shared memory (network cost alone) for the cluster.
"""
import argparse
import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
import warnings

import numpy as np

import host_noise  # bench/ is on the path: this script's, or its importer's

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PYTHON = "/usr/bin/python3"
MPI_ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")


def run(command, timeout=900, env=None):
    result = subprocess.run(command, capture_output=True, text=True,
                            stdin=subprocess.DEVNULL, timeout=timeout,
                            env=env or MPI_ENV)
    if result.returncode != 0:
        sys.exit("%s failed (%d):\n%s%s" % (" ".join(command),
                                            result.returncode,
                                            result.stdout[-3000:],
                                            result.stderr[-3000:]))
    return result.stdout


CLUSTER = os.path.join(ROOT, "scripts", "emulated-cluster.sh")


def shm_launcher(ranks):
    """mpirun on this machine, the ranks not bound to cores."""
    return ["timeout", "900", "mpirun", "--oversubscribe", "--bind-to",
            "none", "-np", str(ranks)]


@contextlib.contextmanager
def emulated_cluster(ranks, rate="1gbit"):
    """The cluster of RANKS namespaces, links shaped to RATE (a tc rate),
    for the block (torn down after it, whatever happens); yields its
    launcher."""
    run([CLUSTER, "up", str(ranks), rate])
    try:
        yield lambda p: [CLUSTER, "run", "-np", str(p), "--"]
    finally:
        run([CLUSTER, "down"])


def export_for_training(model, path, size):
    """MODEL (in training mode) as ONNX for training at 3 x SIZE x SIZE,
    with a symbolic batch dimension."""
    import torch
    torch.onnx.export(model, torch.randn(2, 3, size, size), path,
                      opset_version=13, input_names=["x"],
                      output_names=["y"],
                      dynamic_axes={"x": {0: "N"}, "y": {0: "N"}},
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False)


def export_torchvision(name, path, classes, size):
    """torchvision's NAME (seed 0) with CLASSES outputs, exported for
    training at 3 x SIZE x SIZE with a symbolic batch dimension."""
    import torch
    import torchvision
    warnings.filterwarnings("ignore")
    torch.manual_seed(0)
    model = getattr(torchvision.models, name)(num_classes=classes).train()
    export_for_training(model, path, size)


def export_vgg16_cifar(path):
    """VGG16 with batch norm for 3x32x32 inputs (seed 0): the convolutions
    of torchvision's vgg16_bn, then global pooling to 512 and a 512x10
    classifier, as CIFAR versions of VGG have."""
    import torch
    from torch import nn
    warnings.filterwarnings("ignore")
    torch.manual_seed(0)
    layers, channels = [], 3
    for width in [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512,
                  512, "M", 512, 512, 512, "M"]:
        if width == "M":
            layers.append(nn.MaxPool2d(2))
        else:
            layers += [nn.Conv2d(channels, width, 3, padding=1),
                       nn.BatchNorm2d(width), nn.ReLU()]
            channels = width
    model = nn.Sequential(*layers, nn.Flatten(), nn.Linear(512, 10)).train()
    export_for_training(model, path, 32)


def export_resnet20_cifar(path):
    """He et al.'s CIFAR ResNet-20 (seed 0; the model of MG-WFBP's own
    quick start): 16, 32 and 64 channels, three basic blocks each, 1x1
    projections where the shape changes; 0.27 M parameters in 65 tensors."""
    import torch
    from torch import nn
    warnings.filterwarnings("ignore")
    torch.manual_seed(0)

    def conv_bn(inputs, outputs, kernel, stride):
        return [nn.Conv2d(inputs, outputs, kernel, stride, kernel // 2,
                          bias=False), nn.BatchNorm2d(outputs)]

    class Block(nn.Module):
        def __init__(self, inputs, outputs, stride):
            super().__init__()
            self.body = nn.Sequential(*conv_bn(inputs, outputs, 3, stride),
                                      nn.ReLU(),
                                      *conv_bn(outputs, outputs, 3, 1))
            self.shortcut = (nn.Sequential(*conv_bn(inputs, outputs, 1,
                                                    stride))
                             if stride != 1 or inputs != outputs
                             else nn.Identity())

        def forward(self, x):
            return torch.relu(self.body(x) + self.shortcut(x))

    layers, channels = [*conv_bn(3, 16, 3, 1), nn.ReLU()], 16
    for width, stride in [(16, 1), (32, 2), (64, 2)]:
        for block in range(3):
            layers.append(Block(channels, width, stride if block == 0 else 1))
            channels = width
    model = nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                          nn.Linear(64, 10)).train()
    export_for_training(model, path, 32)


def random_images(work):
    """WORK/random32.npz: 512 random 3x32x32 images, labels in [0, 10)."""
    rng = np.random.RandomState(0)
    data = os.path.join(work, "random32.npz")
    np.savez(data, x=rng.rand(512, 3, 32, 32).astype(np.float32),
             y=rng.randint(0, 10, 512).astype(np.int64))
    return data


def make_models(work, names, batch=None):
    """{name: (onnx path, data path, per-rank batch)}: the digits CNN (batch
    32), or vgg16_cifar or resnet20_cifar, or a torchvision model by name
    (10 classes, 3x32x32 random images, batch 8); BATCH, when given,
    replaces those batches."""
    models = {}
    if "digits" in names:
        run([PYTHON, os.path.join(ROOT, "test", "Examples", "digits.py"),
             work])
        models["digits"] = (os.path.join(work, "digits_cnn.onnx"),
                            os.path.join(work, "train.npz"), batch or 32)
    for name in names:
        if name == "digits":
            continue
        path = os.path.join(work, name + ".onnx")
        if name == "vgg16_cifar":
            export_vgg16_cifar(path)
        elif name == "resnet20_cifar":
            export_resnet20_cifar(path)
        else:
            export_torchvision(name, path, 10, 32)
        models[name] = (path, random_images(work), batch or 8)
    return models


def parse(output):
    """(last progress line's fields, final line's fields)"""
    lines = [l for l in output.splitlines() if l.startswith("step=")]
    final = [l for l in output.splitlines() if l.startswith("final ")]
    fields = lambda line: dict(re.findall(r"(\S+)=(\S+)", line))
    return fields(lines[-1]), fields(final[-1])


# What every rank of a benchmarked trainer runs under: one kernel thread,
# and a stalled collective reported by the runtime well before the
# launcher's own 600-s limit.
RANK_ENV = ["env", "OMP_NUM_THREADS=1", "DTRAIN_COLLECTIVE_TIMEOUT=120"]

# Put after a launcher: each rank (with its communication thread) runs on
# core `rank mod cores` only (the rank from Open MPI's or MPICH's
# environment). Unbound, 4 ranks on 2 cores settle into a placement that
# differs from run to run, and so do their step times (resnet20_cifar at
# batch 1 on 10 Gbit/s: up to 1.3x between runs of one trainer, 1.03x
# pinned).
PIN_RANK_TO_CORE = ["sh", "-c", 'exec taskset -c "$((${OMPI_COMM_WORLD_RANK:-'
                    '${PMI_RANK:?no MPI rank}} % $(nproc)))" "$@"',
                    "pin-rank-to-core"]


def timed_steps(timeline, first):
    """Rank 0's step times (ms) from step FIRST on, from a trainer's
    --timeline trace."""
    with open(timeline) as f:
        trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    durations = {int(e["name"].split()[1]): e["dur"] / 1e3 for e in events
                 if e.get("ph") == "X" and e.get("pid") == 0
                 and e.get("tid") == 0 and e["name"].startswith("step ")}
    return [durations[s] for s in sorted(durations) if s >= first]


def measure(trainer, data, batch, ranks, steps, launcher, timeline=None,
            extra=()):
    """One run of TRAINER (with the options EXTRA): the last half of its
    STEPS timed; with TIMELINE (a path for its --timeline trace), also each
    of those steps' time (step_times, ms)."""
    window = steps // 2
    command = launcher(ranks) + RANK_ENV + [trainer, "--data",
        data, "--steps", str(steps), "--log-every", str(window),
        "--no-shuffle"] + list(extra)
    if timeline:
        command += ["--timeline", timeline]
    last, final = parse(run(command))
    samples = float(last["samples/s"])
    result = dict(ranks=ranks, samples=samples,
                  step_ms=1e3 * batch * ranks / samples)
    if timeline:
        result["step_times"] = timed_steps(timeline, steps - window + 1)
    if ranks > 1:
        result.update(comm_ms=float(last["comm_ms"]),
                      wait_ms=float(last["wait_ms"]),
                      sent_MB=float(last["sent_MB"]),
                      hidden=float(final["comm_hidden"]))
    return result


def add_strategy_bench_arguments(parser, models, steps):
    """The command line of the benchmarks that compare compiled variants of
    trainers on P ranks (merge_bench.py, sparsify_bench.py)."""
    parser.add_argument("build")
    parser.add_argument("--models", nargs="+", default=models)
    parser.add_argument("--ranks", type=int, default=4)
    parser.add_argument("--steps", type=int, default=steps)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--batch", type=int,
                        help="per-rank batch of every model (default: 8, "
                             "the digits CNN 32); a small one makes the "
                             "exchanges' start-ups dominate the step")
    parser.add_argument("--cluster", dest="cluster", action="store_true",
                        default=os.geteuid() == 0)
    parser.add_argument("--no-cluster", dest="cluster", action="store_false")
    parser.add_argument("--cluster-rate", default="1gbit",
                        help="the emulated cluster's link rate (a tc rate; "
                             "default 1gbit)")
    parser.add_argument("--no-shm", dest="shm", action="store_false",
                        help="skip the shared-memory runs")


def run_strategy_bench(args, prefix, header, bench_network):
    """The main of the benchmarks that compare compiled variants of trainers
    (ARGS from add_strategy_bench_arguments): prints HEADER, then calls
    BENCH_NETWORK(title, launcher, models, compile_tool, work) over the
    emulated cluster (as root) and over shared memory (unless --no-shm),
    in a scratch directory named from PREFIX. After each network's
    results, how steady the cores were before and after its runs
    (host_noise.py)."""
    compile_tool = os.path.join(os.path.abspath(args.build), "bin",
                                "dtrain-compile")

    def bracketed(title, launcher, models):
        before = host_noise.summary(host_noise.measure())
        bench_network(title, launcher, models, compile_tool, work)
        print("\nBefore these runs, %s.\nAfter them, %s." % (
            before, host_noise.summary(host_noise.measure())))

    with tempfile.TemporaryDirectory(prefix=prefix, dir="/tmp") as work:
        os.chmod(work, 0o755)
        models = make_models(work, args.models, args.batch)
        print(header)
        if args.cluster:
            with emulated_cluster(args.ranks, args.cluster_rate) as cluster:
                bracketed("net: emulated cluster, %s links (tbf)"
                          % args.cluster_rate, cluster, models)
        else:
            print("\n(emulated cluster skipped: needs root)")
        if args.shm:
            bracketed("shm: shared memory (one machine, 2 cores)",
                      shm_launcher, models)
    return 0


def simulate_step(compile_tool, onnx, batch, options, passes=(),
                  header=False):
    """The numbers of the last row of --dtrain-simulate-step=OPTIONS on the
    data-parallel step of ONNX, after the dtrain-opt PASSES: ranks, then
    each column's ms and efficiency (and the optimal plan's bucket count
    between them); with HEADER, (those numbers, the report's first line)."""
    opt = os.path.join(os.path.dirname(compile_tool), "dtrain-opt")
    out = run([opt, onnx, "--batch-size", str(batch),
               "--dtrain-build-training=optimizer=momentum lr=0.01",
               "--dtrain-data-parallel"] + list(passes) +
              ["--dtrain-simulate-step=" + options, "-o", "/dev/null"])
    lines = out.strip().splitlines()
    fields = [float(f) for f in lines[-1].replace("(", " ").replace(
        ")", " ").split()]
    return (fields, lines[0]) if header else fields


def table(title, rows, reference=None):
    print("\n### " + title)
    print("| model | schedule | ranks | step ms | samples/s | efficiency |"
          + (" vs shm |" if reference else "") +
          " comm ms | wait ms | sent MB | hidden |")
    print("|---|---|---:|---:|---:|---:|" + ("---:|" if reference else "") +
          "---:|---:|---:|---:|")
    for (model, schedule), results in rows.items():
        one = next((r for r in results + (reference or {}).get(
            (model, schedule), []) if r["ranks"] == 1), None)
        for r in results:
            efficiency = (r["samples"] / (r["ranks"] * one["samples"])
                          if one else float("nan"))
            line = "| %s | %s | %d | %.1f | %.1f | %.2f |" % (
                model, schedule, r["ranks"], r["step_ms"], r["samples"],
                efficiency)
            if reference:
                same = next(x for x in reference[(model, schedule)]
                            if x["ranks"] == r["ranks"])
                line += " %.2f |" % (r["samples"] / same["samples"])
            if r["ranks"] > 1:
                line += " %.2f | %.2f | %.3f | %.2f |" % (
                    r["comm_ms"], r["wait_ms"], r["sent_MB"], r["hidden"])
            else:
                line += " - | - | - | - |"
            print(line)
    sys.stdout.flush()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("build")
    parser.add_argument("--models", nargs="+",
                        default=["digits", "resnet18"])
    parser.add_argument("--ranks", nargs="+", type=int, default=[1, 2, 4])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--cluster", dest="cluster", action="store_true",
                        default=os.geteuid() == 0)
    parser.add_argument("--no-cluster", dest="cluster", action="store_false")
    args = parser.parse_args()
    compile_tool = os.path.join(os.path.abspath(args.build), "bin",
                                "dtrain-compile")
    schedules = ["wfbp", "after-backward"]
    with tempfile.TemporaryDirectory(prefix="dtrain-dp-bench-",
                                     dir="/tmp") as work:
        os.chmod(work, 0o755)
        models = make_models(work, args.models)
        trainers = {}
        for name, (onnx, data, batch) in models.items():
            for schedule in schedules:
                exe = os.path.join(work, "%s-%s" % (name, schedule))
                run([compile_tool, onnx, "--batch-size", str(batch),
                     "--optimizer", "momentum", "--lr", "0.01",
                     "--exchange-schedule", schedule, "-o", exe])
                trainers[(name, schedule)] = (exe, data, batch)

        print("## Data-parallel training, %d steps (the last %d timed)"
              % (args.steps, args.steps // 2))
        local = {}
        for key, (exe, data, batch) in trainers.items():
            local[key] = [measure(exe, data, batch, p, args.steps,
                                  shm_launcher)
                          for p in args.ranks]
        table("Shared memory (one machine, 2 cores)", local)

        if not args.cluster:
            print("\n(emulated cluster skipped: needs root)")
            return 0
        ranks = max(args.ranks)
        with emulated_cluster(ranks) as cluster:
            remote = {}
            for key, (exe, data, batch) in trainers.items():
                remote[key] = [measure(exe, data, batch, p, args.steps,
                                       cluster)
                               for p in args.ranks if p > 1]
        table("Emulated cluster: %d namespaces, 1 Gbit/s links (tbf)"
              % ranks, remote, reference=local)
    return 0


if __name__ == "__main__":
    sys.exit(main())
