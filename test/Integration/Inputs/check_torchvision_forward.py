"""Checks the forward pass of torchvision models compiled by dtrain-compile
against PyTorch's own forward of the same model and weights.

usage: check_torchvision_forward.py [--batch N] [--rtol R] [--atol A]
                                    COMPILE WORKDIR MODEL[:SIZE] ...

For each MODEL (a torchvision.models constructor, random weights from seed
0, batch-norm statistics of random inputs, EVAL mode): exports it to ONNX
(opset 13, symbolic batch dimension, as users export), compiles it with
`COMPILE model.onnx --mode=infer --batch-size N`, runs the executable on a random N x 3 x SIZE x SIZE input
(SIZE defaults to 64) and compares its output with PyTorch's (model.eval(),
torch.no_grad()) by np.testing.assert_allclose at RTOL/ATOL (default 1e-4 /
1e-5). Deep networks with large outputs (resnet50, googlenet) round
further from the exact result than that in PyTorch too; for them,
--f64-factor F checks instead that dtrain's output is at most F times as far
from the float64 forward as PyTorch's float32 output is. Prints one line per
model:

  <model> <N>x3x<S>x<S>: output=<shape> max|y|=<e> max_abs=<e> max_rel=<e>
      tolerance_used=<worst |diff| / (atol + rtol |y|)>
      f64_max_abs(dtrain,torch)=<e>,<e> compile=<s>s run=<s>s OK

(f64_max_abs: the distance of each float32 output from PyTorch's float64
forward, which tells rounding from a bug), or MISMATCH with the worst
element, and exits non-zero if any model fails to export, compile, run or
match.
"""
import argparse
import copy
import os
import subprocess
import sys
import time
import warnings

import numpy as np
import torch
import torchvision


def build(name):
    """The torchvision model NAME with seed-0 random weights, in EVAL mode."""
    torch.manual_seed(0)
    kwargs = {"weights": None}
    if name == "googlenet":
        kwargs.update(aux_logits=False, init_weights=True)
    if name == "inception_v3":
        kwargs.update(aux_logits=False, init_weights=True)
    model = getattr(torchvision.models, name)(**kwargs)
    return model.eval()


def calibrate(model, size, batches=2, batch=8):
    """Gives MODEL's batch norms the running statistics of random inputs of
    SIZE (cumulative averages over BATCHES batches), as training would: at
    initialization (mean 0, variance 1) the activations of deep networks
    such as mobilenet_v2 shrink to ~1e-9 at the output, below any absolute
    tolerance, and the comparison would check nothing."""
    norms = [m for m in model.modules()
             if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not norms:
        return model
    for norm in norms:
        norm.reset_running_stats()
        norm.momentum = None
    model.train()
    with torch.no_grad():
        for _ in range(batches):
            model(torch.randn(batch, 3, size, size))
    return model.eval()


def report(line):
    """Prints a failure on stdout and stderr (which lit shows in full when
    stdout goes to FileCheck)."""
    print(line, flush=True)
    print(line, file=sys.stderr, flush=True)


def check(args, name, size):
    work = os.path.join(args.workdir, name)
    os.makedirs(work, exist_ok=True)
    onnx_path = os.path.join(work, "model.onnx")
    exe = os.path.join(work, "model.bin")
    x_path = os.path.join(work, "x.npy")
    y_path = os.path.join(work, "y.npy")
    label = "%s %dx3x%dx%d" % (name, args.batch, size, size)

    model = calibrate(build(name), size)
    torch.manual_seed(1)
    x = torch.randn(args.batch, 3, size, size)
    with torch.no_grad():
        want = model(x).numpy()
        torch.onnx.export(model, x, onnx_path, opset_version=13,
                          input_names=["x"], output_names=["y"],
                          dynamic_axes={"x": {0: "N"}, "y": {0: "N"}})
    np.save(x_path, x.numpy())
    # Float64 forward: how far each float32 result is from the exact one
    # tells rounding (dtrain about as far as PyTorch) from a bug.
    with torch.no_grad():
        exact = copy.deepcopy(model).double()(x.double()).numpy()

    start = time.time()
    result = subprocess.run([args.compile, onnx_path, "--mode=infer",
                             "--batch-size", str(args.batch), "-o", exe],
                            capture_output=True, text=True)
    compile_s = time.time() - start
    if result.returncode != 0:
        report("%s: COMPILE FAILED (exit %d):\n%s" % (
            label, result.returncode, result.stderr.strip()))
        return False
    start = time.time()
    result = subprocess.run([exe, "--input", "x=" + x_path,
                             "--output", "y=" + y_path],
                            capture_output=True, text=True)
    run_s = time.time() - start
    if result.returncode != 0:
        report("%s: RUN FAILED (exit %d):\n%s" % (
            label, result.returncode, result.stderr.strip()))
        return False
    got = np.load(y_path)
    if got.shape != want.shape or got.dtype != want.dtype:
        report("%s: MISMATCH: output %s %s, PyTorch %s %s" % (
            label, got.dtype, "x".join(map(str, got.shape)), want.dtype,
            "x".join(map(str, want.shape))))
        return False
    diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
    nonzero = want != 0
    rel = diff[nonzero] / np.abs(want[nonzero]).astype(np.float64)
    # The share of the tolerance used by the worst element (>1: mismatch).
    used = diff / (args.atol + args.rtol * np.abs(want.astype(np.float64)))
    line = ("%s: output=%s max|y|=%.3g max_abs=%.3g max_rel=%.3g "
            "tolerance_used=%.2f f64_max_abs(dtrain,torch)=%.3g,%.3g "
            "compile=%.1fs run=%.2fs" % (
                label, "x".join(map(str, got.shape)), np.abs(want).max(),
                diff.max(), rel.max() if rel.size else 0.0, used.max(),
                np.abs(got - exact).max(), np.abs(want - exact).max(),
                compile_s, run_s))
    if args.f64_factor:
        dtrain_error = np.abs(got - exact).max()
        torch_error = np.abs(want - exact).max()
        if dtrain_error > args.f64_factor * torch_error:
            report("%s MISMATCH: %.3g from the float64 forward, more than %g "
                   "times PyTorch's %.3g" % (line, dtrain_error,
                                             args.f64_factor, torch_error))
            return False
        print(line + " OK")
        return True
    try:
        np.testing.assert_allclose(got, want, rtol=args.rtol, atol=args.atol)
    except AssertionError:
        bad = diff > args.atol + args.rtol * np.abs(want)
        worst = np.unravel_index(np.argmax(np.where(bad, diff, -1)), diff.shape)
        report("%s MISMATCH: %d of %d elements beyond rtol=%g atol=%g; worst "
              "at %s: dtrain %r, PyTorch %r (max |PyTorch output| %.3g)" % (
                  line, int(bad.sum()), bad.size, args.rtol, args.atol,
                  tuple(int(i) for i in worst), float(got[worst]),
                  float(want[worst]), float(np.abs(want).max())))
        return False
    print(line + " OK")
    return True


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("compile", help="the dtrain-compile executable")
    parser.add_argument("workdir", help="scratch directory")
    parser.add_argument("models", nargs="+", metavar="MODEL[:SIZE]",
                        help="torchvision model names, each with an optional "
                        "input height and width (default 64)")
    parser.add_argument("--batch", type=int, default=2,
                        help="batch size (default: 2)")
    parser.add_argument("--rtol", type=float, default=1e-4,
                        help="relative tolerance (default: 1e-4)")
    parser.add_argument("--atol", type=float, default=1e-5,
                        help="absolute tolerance (default: 1e-5)")
    parser.add_argument("--f64-factor", type=float, default=None,
                        help="check the distance to the float64 forward "
                        "against F times PyTorch's, instead of RTOL/ATOL")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    torch.set_num_threads(2)
    os.makedirs(args.workdir, exist_ok=True)
    ok = True
    for spec in args.models:
        name, _, size = spec.partition(":")
        try:
            ok &= check(args, name, int(size or 64))
        except Exception as error:  # an export that PyTorch refuses, ...
            report("%s: FAILED: %s: %s" % (name, type(error).__name__, error))
            ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
