"""Compiles one torchvision model's training step twice, with two sets of
dtrain-compile flags, runs both for the same steps on the same batch, and
compares everything they output (loss, parameters, optimizer state,
batch-norm statistics) bit for bit.

usage: compare_steps.py COMPILE WORKDIR MODEL --flags="A..." --against="B..."

MODEL is a torchvision classifier (10 classes, random weights, seed 0),
exported in TRAINING mode for a batch of 4 images of 3x64x64 and trained
with momentum SGD (lr 0.1) for 2 steps. Prints "MODEL: N of N members
identical" and exits 0 when they all are; else names the members that
differ, with the largest difference relative to the member's largest
value, and exits 1. For two builds that must compute the same arithmetic
(--cuda-loops against the CPU's own build).
"""
import argparse
import os
import shlex
import subprocess
import sys
import warnings

import numpy as np
import torch
import torchvision


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("compile")
    parser.add_argument("workdir")
    parser.add_argument("model")
    parser.add_argument("--flags", default="",
                        help="the first build's flags, in one argument")
    parser.add_argument("--against", default="",
                        help="the second build's flags, in one argument")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    os.makedirs(args.workdir, exist_ok=True)
    torch.manual_seed(0)
    model = getattr(torchvision.models, args.model)(num_classes=10)
    x = torch.randn(4, 3, 64, 64)
    onnx_path = os.path.join(args.workdir, args.model + ".onnx")
    with torch.no_grad():
        torch.onnx.export(model, x, onnx_path, opset_version=13,
                          input_names=["x"], output_names=["y"],
                          training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False)
    x_path = os.path.join(args.workdir, "x.npy")
    labels_path = os.path.join(args.workdir, "labels.npy")
    np.save(x_path, x.numpy())
    np.save(labels_path, np.array([1, 2, 3, 4], dtype=np.int64))
    outputs = []
    for name, flags in (("a", shlex.split(args.flags)),
                        ("b", shlex.split(args.against))):
        exe = os.path.join(args.workdir, name + ".bin")
        out = os.path.join(args.workdir, name + ".npz")
        subprocess.run([args.compile, onnx_path, "--mode=step", "--loss",
                        "softmax-xent", "--optimizer", "momentum", "--lr",
                        "0.1", "-o", exe] + flags, check=True)
        subprocess.run([exe, "--input", "x=" + x_path, "--input",
                        "labels=" + labels_path, "--output", out,
                        "--repeat", "2"], check=True,
                       stdout=subprocess.DEVNULL)
        outputs.append(dict(np.load(out)))
    a, b = outputs
    if sorted(a) != sorted(b):
        print("%s: the builds output different members" % args.model)
        return 1
    differ = []
    for key in sorted(a):
        if not np.array_equal(a[key], b[key], equal_nan=True):
            wide_a = a[key].astype(np.float64)
            wide_b = b[key].astype(np.float64)
            scale = max(float(np.max(np.abs(wide_a))), 1e-30)
            differ.append("%s %.2e" % (
                key, float(np.max(np.abs(wide_a - wide_b))) / scale))
    print("%s: %d of %d members identical%s" % (
        args.model, len(a) - len(differ), len(a),
        "; differ: " + ", ".join(differ) if differ else ""))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
