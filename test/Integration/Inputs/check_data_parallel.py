"""Checks data-parallel training steps (dtrain-compile --data-parallel)
against single-process ones: P ranks each stepping on their own shard of
B/P samples must end with the parameters and optimizer state that one
process stepping on all B samples reaches, since the mean over ranks of
the per-shard mean gradients is the mean gradient of the batch.

usage: check_data_parallel.py COMPILE MPIRUN WORKDIR

A ReLU MLP (12 -> 16 -> 5, PyTorch's initialization, exported to ONNX),
softmax cross-entropy, momentum SGD with weight decay, 3 steps on one
batch of 12 samples; P = 1, 2, 3, 4 ranks (3 is not a power of two), each
reading its shard (rank r: samples r*B/P to (r+1)*B/P) through a shell
wrapper that picks the file by OMPI_COMM_WORLD_RANK. Compares at rtol
1e-5 / atol 1e-6 (float32; the sums are grouped differently) and prints
one line per P; exits non-zero on any mismatch or failure.
"""
import os
import subprocess
import sys
import warnings

import numpy as np
import torch
from torch import nn

BATCH, STEPS = 12, 3
RTOL, ATOL = 1e-5, 1e-6


def run(command, **kwargs):
    result = subprocess.run(command, capture_output=True, text=True,
                            stdin=subprocess.DEVNULL, **kwargs)
    if result.returncode != 0:
        sys.exit("%s failed:\n%s%s" % (" ".join(command), result.stdout,
                                       result.stderr))
    return result


def main():
    compile_tool, mpirun, work = sys.argv[1:4]
    warnings.filterwarnings("ignore")
    os.makedirs(work, exist_ok=True)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 5))
    onnx_path = os.path.join(work, "mlp.onnx")
    torch.onnx.export(model, torch.randn(2, 12), onnx_path, opset_version=13,
                      input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "N"}, "y": {0: "N"}},
                      training=torch.onnx.TrainingMode.TRAINING)
    rng = np.random.RandomState(1)
    x = rng.randn(BATCH, 12).astype(np.float32)
    labels = rng.randint(0, 5, BATCH).astype(np.int64)
    flags = ["--mode=step", "--optimizer", "momentum", "--lr", "0.1",
             "--weight-decay", "5e-4"]

    def step(ranks):
        shard = BATCH // ranks
        exe = os.path.join(work, "step%d.bin" % ranks)
        run([compile_tool, onnx_path, "--batch-size", str(shard), "-o", exe]
            + flags + (["--data-parallel"] if ranks > 1 else []))
        for r in range(ranks):
            np.save(os.path.join(work, "x%d-%d.npy" % (ranks, r)),
                    x[r * shard:(r + 1) * shard])
            np.save(os.path.join(work, "y%d-%d.npy" % (ranks, r)),
                    labels[r * shard:(r + 1) * shard])
        out = os.path.join(work, "out%d.npz" % ranks)
        rank_files = ("x=%s/x%d-$OMPI_COMM_WORLD_RANK.npy "
                      "--input labels=%s/y%d-$OMPI_COMM_WORLD_RANK.npy"
                      % (work, ranks, work, ranks))
        command = "%s --input %s --repeat %d --output %s" % (
            exe, rank_files, STEPS, out)
        if ranks == 1:
            run(["sh", "-c", command],
                env=dict(os.environ, OMPI_COMM_WORLD_RANK="0"))
        else:
            run(mpirun.split() + ["-np", str(ranks), "sh", "-c", command])
        return dict(np.load(out))

    reference = step(1)
    ok = True
    for ranks in (2, 3, 4):
        got = step(ranks)
        worst = 0.0
        for name, want in reference.items():
            if name == "correct":  # counts the rank's own shard
                continue
            diff = float(np.abs(got[name] - want).max())
            worst = max(worst, diff)
            if not np.allclose(got[name], want, rtol=RTOL, atol=ATOL):
                print("P=%d: MISMATCH in %s: max diff %.3g" % (ranks, name,
                                                               diff))
                ok = False
        if ok:
            print("P=%d: %d ranks x %d samples = 1 x %d: max |diff| %.2g OK"
                  % (ranks, ranks, BATCH // ranks, BATCH, worst))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
