"""Checks one training step compiled by `dtrain-compile --mode=step`
(--dtrain-build-training: loss, reverse-mode gradients, SGD update)
against PyTorch's on the same model, weights and batch.

usage: check_train_step.py COMPILE WORKDIR

For each case below: builds the PyTorch model (seed 0), exports it to ONNX
(TRAINING mode, fixed batch), compiles it with `COMPILE model.onnx
--mode=step --loss L --lr LR --weight-decay WD`, runs the executable once
on a random batch and compares the loss and every updated parameter with
PyTorch's loss and parameters after one torch.optim.SGD step, at rtol 1e-4
and atol 1e-6 (float32). Prints one line per case with the largest
differences, and exits non-zero on any mismatch or failure.
"""
import os
import subprocess
import sys
import warnings

import numpy as np
import torch
from torch import nn

RTOL, ATOL = 1e-4, 1e-6


def cases():
    """(name, model, loss, lr, weight decay, x, target)"""
    torch.manual_seed(0)
    relu = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 5))
    yield ("relu-mlp softmax-xent", relu, "softmax-xent", 0.1, 0.0,
           torch.randn(4, 12), torch.tensor([0, 3, 4, 3]))
    torch.manual_seed(1)
    smooth = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3),
                           nn.Sigmoid())
    yield ("tanh-sigmoid-mlp mse", smooth, "mse", 0.5, 0.01,
           torch.randn(5, 6), torch.rand(5, 3))


def check(compile_tool, work, name, model, loss_name, lr, decay, x, target):
    os.makedirs(work, exist_ok=True)
    onnx_path = os.path.join(work, "model.onnx")
    exe = os.path.join(work, "step.bin")
    with torch.no_grad():
        torch.onnx.export(model, x, onnx_path, opset_version=13,
                          input_names=["x"], output_names=["y"],
                          training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False)
    names = [n for n, _ in model.named_parameters()]
    before = {n: p.detach().clone() for n, p in model.named_parameters()}

    # PyTorch's step.
    criterion = (nn.CrossEntropyLoss() if loss_name == "softmax-xent"
                 else nn.MSELoss())
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, weight_decay=decay)
    optimizer.zero_grad()
    loss = criterion(model(x), target)
    loss.backward()
    optimizer.step()

    # dtrain's step.
    result = subprocess.run(
        [compile_tool, onnx_path, "--mode=step", "--loss", loss_name,
         "--lr", repr(lr), "--weight-decay", repr(decay), "-o", exe],
        capture_output=True, text=True)
    if result.returncode != 0:
        print("%s: COMPILE FAILED:\n%s" % (name, result.stderr))
        return False
    np.save(os.path.join(work, "x.npy"), x.numpy())
    label = "labels" if loss_name == "softmax-xent" else "targets"
    np.save(os.path.join(work, "label.npy"), target.numpy())
    command = [exe, "--input", "x=" + os.path.join(work, "x.npy"),
               "--input", label + "=" + os.path.join(work, "label.npy"),
               "--output", os.path.join(work, "out.npz")]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        print("%s: RUN FAILED:\n%s" % (name, result.stderr))
        return False
    got = dict(np.load(os.path.join(work, "out.npz")))

    ok = True
    worst = []
    pairs = [("loss", got.get("loss"), loss.detach().numpy())]
    # ONNX initializer names are PyTorch's parameter names.
    pairs += [(n, got.get(n), dict(model.named_parameters())[n].detach()
               .numpy()) for n in names]
    for key, value, want in pairs:
        if value is None:
            print("%s: MISMATCH: no output %r (outputs: %s)" % (
                name, key, sorted(got)))
            ok = False
            continue
        diff = float(np.abs(value - want).max())
        worst.append("%s=%.2g" % (key, diff))
        if not np.allclose(value, want, rtol=RTOL, atol=ATOL):
            print("%s: MISMATCH in %s: max |dtrain - PyTorch| = %.3g" % (
                name, key, diff))
            ok = False
    # The step must have moved every parameter (a zero gradient would pass
    # a comparison of parameters that hardly change).
    for n in names:
        if np.array_equal(got[n], before[n].numpy()):
            print("%s: MISMATCH: %s did not change" % (name, n))
            ok = False
    if ok:
        print("%s: loss=%.6f max_abs %s OK" % (name, float(got["loss"]),
                                               " ".join(worst)))
    return ok


def main():
    compile_tool, workdir = sys.argv[1:3]
    warnings.filterwarnings("ignore")
    ok = True
    for i, (name, model, loss, lr, decay, x, target) in enumerate(cases()):
        ok &= check(compile_tool, os.path.join(workdir, str(i)), name, model,
                    loss, lr, decay, x, target)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
