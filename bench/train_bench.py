"""Training-step benchmark: steps compiled by `dtrain-compile --mode=step`
against PyTorch's eager training steps on the same model, weights, batch and
optimizer, same thread count, and the peak memory of each.

usage: train_bench.py [--threads T] [--seconds S] [--models M ...]
                      [--batch B] [--target cuda] [--precision bf16]
                      [--channels-last] BUILD_DIR

Models and batches as in bench/forward_bench.py (mlp 64 x 784, lenet 64 x
1x28x28, resnet18, mobilenet_v2 and mobilenet_v3_small 8 x 3x224x224, vit
64 x 1x28x28,
vit_long 16 x 1x64x64; the language models gpt and nanogpt 16 x 64 token
ids of a vocabulary of 65),
exported in TRAINING mode (dropout ratio 0) with a fixed batch, trained
with softmax cross-entropy on random labels (one per sample; one per
position, B x T, for the language models, the loss their mean over all
positions as F.cross_entropy of the flattened B T x V logits) and
momentum SGD (lr 0.01, momentum 0.9, weight decay 5e-4), the language
models' causal masks (PyTorch buffers) kept constant (dtrain-compile
--frozen=NAME,...). dtrain: `step.bin --repeat N --warmup 2` (each run
one step: forward, loss, backward, update); PyTorch: zero_grad, forward,
loss, backward, step, in a child process. Both
report the MINIMUM step time over N runs (N chosen so that the runs take
about S seconds) and their peak resident memory (the child's ru_maxrss:
the executable, and the Python process with PyTorch loaded). Prints a table:

  model batch dtrain_ms torch_ms ratio dtrain_MB torch_MB compile_s

--target cuda compiles the steps for the GPU (dtrain-compile --target=cuda)
and runs PyTorch's on CUDA (synchronized before each time is taken; its
column is left out when this torch has no CUDA); --precision bf16 compiles
with --precision bf16 and runs PyTorch under torch.autocast(bfloat16).
--batch replaces the models' batches (8 for the networks: a GPU wants
more). --channels-last compiles with --channels-last (NHWC convolutions and
batch norms) and gives PyTorch's model and batch its channels_last memory
format.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np
import torch
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import forward_bench  # noqa: E402
from torch_steps import (DECAY, LR, MOMENTUM, export_for_training,  # noqa: E402
                         make_step, time_step)


def make_step_model(name, work, batch):
    """The model NAME (forward_bench's, seed 0) in training mode without
    dropout, exported for training at BATCH to WORK/NAME-train.onnx."""
    model, _ = forward_bench.make_model(name, work)
    for module in model.modules():
        if isinstance(module, nn.Dropout):
            module.p = 0.0
    model.train()
    path = os.path.join(work, name + "-train.onnx")
    export_for_training(model, forward_bench.make_input(name, batch), path)
    return model, path


def torch_child(name, work, args):
    """Runs in a child process: times PyTorch's steps, prints the result."""
    warnings.filterwarnings("ignore")
    torch.set_num_threads(args.threads)
    x = torch.from_numpy(np.load(os.path.join(work, name + "-x.npy")))
    y = torch.from_numpy(np.load(os.path.join(work, name + "-labels.npy")))
    model, _ = make_step_model(name, work, x.shape[0])
    device = torch.device("cuda" if args.target == "cuda" else "cpu")
    model.to(device)
    x, y = x.to(device), y.to(device)
    if args.channels_last and x.dim() == 4:
        model.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    times = time_step(make_step(model, x, y, device, args.precision),
                      lambda probe: forward_bench.runs_for(probe, args.seconds))
    print("torch_min_ms=%f torch_mean_ms=%f runs=%d" % (
        min(times), float(np.mean(times)), len(times)))


def peak_mb(command):
    """The peak resident memory of COMMAND, in MB (GNU time)."""
    result = subprocess.run(["/usr/bin/time", "-f", "peak_kb=%M"] + command,
                            capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit("%s failed:\n%s%s" % (" ".join(command), result.stdout,
                                       result.stderr))
    kb = int(re.search(r"peak_kb=(\d+)", result.stderr).group(1))
    return result.stdout, kb / 1024.0


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("build", help="the build directory (bin/dtrain-compile)")
    parser.add_argument("--models", nargs="+",
                        default=["mlp", "lenet", "resnet18", "mobilenet_v2",
                                 "vit", "vit_long", "gpt", "nanogpt"],
                        metavar="MODEL")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--batch", type=int,
                        help="every model's batch (default: forward_bench's)")
    parser.add_argument("--target", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--precision", choices=["f32", "bf16"],
                        default="f32")
    parser.add_argument("--channels-last", action="store_true")
    parser.add_argument("--torch-child", nargs=2, metavar=("MODEL", "WORK"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    if args.torch_child:
        torch_child(*args.torch_child, args)
        return 0
    torch_runs = args.target == "cpu" or torch.cuda.is_available()
    if not torch_runs:
        print("torch %s has no CUDA: PyTorch's column is left out"
              % torch.__version__)
    flags = ["--target", args.target]
    if args.precision == "bf16":
        flags += ["--precision", "bf16"]
    if args.channels_last:
        flags += ["--channels-last"]

    rows = []
    with tempfile.TemporaryDirectory() as work:
        for name in args.models:
            batch, shape = forward_bench.MODELS[name]
            batch = args.batch or batch
            model, onnx_path = make_step_model(name, work, batch)
            torch.manual_seed(1)
            x_path = os.path.join(work, name + "-x.npy")
            labels_path = os.path.join(work, name + "-labels.npy")
            np.save(x_path, forward_bench.make_input(name, batch).numpy())
            if name in forward_bench.VOCAB:
                # The next token at each position: B x T labels.
                labels = torch.randint(0, forward_bench.VOCAB[name],
                                       (batch, *shape))
            else:
                classes = 1000 if name in forward_bench.TORCHVISION else 10
                labels = torch.randint(0, classes, (batch,))
            np.save(labels_path, labels.numpy())
            exe = os.path.join(work, name + "-step.bin")
            start = time.perf_counter()
            result = subprocess.run(
                [os.path.join(args.build, "bin", "dtrain-compile"),
                 onnx_path, "--mode=step", "--optimizer", "momentum",
                 "--lr", str(LR), "--momentum", str(MOMENTUM),
                 "--weight-decay", str(DECAY), "-o", exe] + flags
                + forward_bench.frozen_flags(model, onnx_path),
                capture_output=True, text=True)
            compile_s = time.perf_counter() - start
            if result.returncode != 0:
                sys.exit("dtrain-compile failed on %s:\n%s" % (
                    name, result.stderr))
            inputs = ["--input", "x=" + x_path, "--input",
                      "labels=" + labels_path]
            probe, _ = peak_mb([exe] + inputs + ["--repeat", "1"])
            probe_ms = float(re.search(r"min_ms=([0-9.]+)", probe).group(1))
            runs = forward_bench.runs_for(probe_ms, args.seconds)
            out, d_mb = peak_mb([exe] + inputs + ["--repeat", str(runs),
                                                  "--warmup", "2"])
            d_min = float(re.search(r"min_ms=([0-9.]+)", out).group(1))
            t_min = t_mb = float("nan")
            if torch_runs:
                out, t_mb = peak_mb([sys.executable, os.path.abspath(__file__),
                                     args.build, "--threads", str(args.threads),
                                     "--seconds", str(args.seconds),
                                     "--target", args.target,
                                     "--precision", args.precision,
                                     "--torch-child", name, work]
                                    + (["--channels-last"]
                                       if args.channels_last else []))
                t_min = float(re.search(r"torch_min_ms=([0-9.]+)",
                                        out).group(1))
            rows.append((name, batch, d_min, t_min, d_mb, t_mb, compile_s))
            print("%s: dtrain %.3f ms (%d runs, %.0f MB); torch %.3f ms "
                  "(%.0f MB); compile %.2f s" % (name, d_min, runs, d_mb,
                                                 t_min, t_mb, compile_s),
                  flush=True)
    print()
    print("training step (forward, backward, momentum SGD), min over N runs, "
          "%s, %s%s, %d threads; ratio = dtrain / torch" % (
              args.target, args.precision,
              ", channels last" if args.channels_last else "", args.threads))
    print("%-13s %5s %10s %10s %6s %10s %9s %9s" % (
        "model", "batch", "dtrain_ms", "torch_ms", "ratio", "dtrain_MB",
        "torch_MB", "compile_s"))
    for name, batch, d_min, t_min, d_mb, t_mb, compile_s in rows:
        print("%-13s %5d %10.3f %10.3f %6.2f %10.0f %9.0f %9.2f" % (
            name, batch, d_min, t_min, d_min / t_min, d_mb, t_mb, compile_s))
    return 0


if __name__ == "__main__":
    sys.exit(main())
