"""Checks one training step compiled with --precision bf16 against an
emulation of its arithmetic in PyTorch.

usage: check_bf16_step.py COMPILE WORKDIR [FLAG...]

The model is a ReLU MLP (Linear 12-16, ReLU, Linear 16-5, seed 0) with
softmax cross-entropy, one SGD step at lr 1 on a batch of 4. dtrain's
bf16 step computes every nn op from bf16 operands in f32 and rounds its
result to bf16 (matrix products accumulate in f32), with the loss and its
gradient and the bias gradients' sums as f32 islands, and updates the f32
weights with the bf16 weight gradients. The emulation does the same op by
op with explicit casts; the f32 reference is PyTorch's plain f32 step.

A weight element equals the emulation's bit for bit unless an f32 result
lies within rounding of a bf16 tie (accumulation orders differ), so at
least 95% must; at most half may equal the f32 reference's, or the step
did not compute in bf16. Biases (f32 sums of bf16 values) and the loss
match the emulation to f32 rounding. Prints one line per array and exits
non-zero on a mismatch. FLAGs go to COMPILE too (--cuda-loops: the CUDA
target's loop nests, run on the CPU).
"""
import os
import subprocess
import sys
import warnings

import numpy as np
import torch
from torch import nn

BF16 = torch.bfloat16


def bf16(t):
    """T rounded to bf16, back in f32."""
    return t.to(BF16).float()


def emulated_step(model, x, labels):
    """The bf16 step dtrain computes (see the module comment); returns the
    loss and {name: new value}."""
    w1, b1 = model[0].weight.detach(), model[0].bias.detach()
    w2, b2 = model[2].weight.detach(), model[2].bias.detach()
    x16 = bf16(x)
    z1 = bf16(bf16(x16 @ bf16(w1).T) + bf16(b1))
    r1 = torch.relu(z1)
    y = bf16(bf16(r1 @ bf16(w2).T) + bf16(b2))
    logits = y.clone().requires_grad_()
    loss = nn.functional.cross_entropy(logits, labels)
    loss.backward()
    # The bias gradient's sum reads the f32 loss gradient (both islands);
    # the matrix products read it rounded.
    db2 = logits.grad.sum(0)
    dy = bf16(logits.grad)
    dw2 = bf16(dy.T @ r1)
    dr1 = bf16(dy @ bf16(w2))
    dz1 = dr1 * (z1 > 0)
    db1 = dz1.sum(0)
    dw1 = bf16(dz1.T @ x16)
    new = {"0.weight": w1 - dw1, "0.bias": b1 - db1,
           "2.weight": w2 - dw2, "2.bias": b2 - db2}
    return loss.detach().numpy(), {k: v.numpy() for k, v in new.items()}


def f32_step(model, x, labels):
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    loss = nn.functional.cross_entropy(model(x), labels)
    loss.backward()
    optimizer.step()
    return {n: p.detach().numpy() for n, p in model.named_parameters()}


def main():
    compile_tool, work, flags = sys.argv[1], sys.argv[2], sys.argv[3:]
    warnings.filterwarnings("ignore")
    os.makedirs(work, exist_ok=True)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 5))
    torch.manual_seed(10)
    x, labels = torch.randn(4, 12), torch.tensor([0, 3, 4, 3])
    onnx_path = os.path.join(work, "mlp.onnx")
    with torch.no_grad():
        torch.onnx.export(model, x, onnx_path, opset_version=13,
                          input_names=["x"], output_names=["y"],
                          training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False)
    want_loss, want = emulated_step(model, x, labels)
    plain = f32_step(model, x, labels)

    exe = os.path.join(work, "step.bin")
    subprocess.run([compile_tool, onnx_path, "--mode=step", "--loss",
                    "softmax-xent", "--optimizer", "sgd", "--lr", "1.0",
                    "--precision", "bf16", "-o", exe] + flags, check=True)
    np.save(os.path.join(work, "x.npy"), x.numpy())
    np.save(os.path.join(work, "labels.npy"), labels.numpy())
    out = os.path.join(work, "out.npz")
    subprocess.run([exe, "--input", "x=" + os.path.join(work, "x.npy"),
                    "--input", "labels=" + os.path.join(work, "labels.npy"),
                    "--output", out], check=True)
    got = dict(np.load(out))

    ok = True
    loss_ok = np.allclose(got["loss"], want_loss, rtol=1e-6)
    print("loss: dtrain %.6f emulation %.6f: %s" % (
        float(got["loss"]), float(want_loss), "OK" if loss_ok else "MISMATCH"))
    ok &= loss_ok
    for name in sorted(want):
        value = got[name]
        if value.dtype != np.float32:
            print("%s: MISMATCH: %s, not float32" % (name, value.dtype))
            ok = False
            continue
        if name.endswith("weight"):
            exact = float(np.mean(value == want[name]))
            as_f32 = float(np.mean(value == plain[name]))
            good = exact >= 0.95 and as_f32 <= 0.5
            print("%s: %.3f equal to the bf16 emulation, %.3f to the f32 "
                  "step: %s" % (name, exact, as_f32,
                               "OK" if good else "MISMATCH"))
        else:
            diff = float(np.abs(value - want[name]).max())
            good = np.allclose(value, want[name], rtol=1e-6, atol=1e-7)
            print("%s: max |dtrain - emulation| = %.2g: %s" % (
                name, diff, "OK" if good else "MISMATCH"))
        ok &= good
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
