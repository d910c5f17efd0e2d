"""Checks data-parallel trainers (dtrain-compile --mode=train, data parallel
by default) under mpirun against independent references, P = 1, 2, 3, 4
ranks (3 is not a power of two):

- An MLP on the digits (no batch norm): P ranks x B samples per rank end
  with the parameters and momentum state of one process with B*P samples
  per step, after 6 momentum-SGD steps with weight decay over shuffled
  data (the same --seed: the ranks split each global batch of the same
  order). Every checkpoint member is compared.
- The digits CNN (batch norm): P ranks x 8 samples, --no-shuffle, 4 steps,
  against PyTorch following the documented rule: each rank normalizes with
  its own shard's batch statistics (as PyTorch DDP does by default), the
  gradients are averaged, and the running statistics written are rank 0's.
  Parameters and running means are compared (dtrain keeps ONNX's biased
  running variance, PyTorch the unbiased one).

Tolerances rtol 1e-5, atol 1e-6 (float32, sums grouped differently).

usage: check_data_parallel_trainer.py COMPILE MPIRUN WORKDIR
(WORKDIR holds digits_cnn.onnx, train.npz from test/Examples/digits.py)
"""
import copy
import os
import runpy
import shlex
import subprocess
import sys
import warnings

import numpy as np
import torch
from torch import nn

RTOL, ATOL = 1e-5, 1e-6
LR, DECAY, MOMENTUM = 0.05, 5e-4, 0.9


def run(command):
    result = subprocess.run(command, capture_output=True, text=True,
                            stdin=subprocess.DEVNULL)
    if result.returncode != 0:
        sys.exit("%s failed (%d):\n%s%s" % (" ".join(command),
                                            result.returncode, result.stdout,
                                            result.stderr))
    return result.stdout


def compare(what, got, expected):
    worst, bad = 0.0, []
    for name, want in expected.items():
        have = got[name]
        if have.shape != want.shape:
            bad.append("%s shape %s != %s" % (name, have.shape, want.shape))
            continue
        diff = np.abs(have.astype(np.float64) - want)
        worst = max(worst, float(diff.max(initial=0)))
        if not np.allclose(have, want, rtol=RTOL, atol=ATOL):
            bad.append(name)
    status = "OK" if not bad else "MISMATCH " + ", ".join(bad)
    print("%s: %d arrays, max diff %.2e %s" % (what, len(expected), worst,
                                               status))
    return not bad


def main():
    compile_tool, mpirun, work = sys.argv[1:4]
    mpirun = shlex.split(mpirun)
    warnings.filterwarnings("ignore")
    os.chdir(work)
    ok = True

    # --- MLP: P ranks x 4 equal 1 process x 4P. ---
    torch.manual_seed(0)
    mlp = nn.Sequential(nn.Flatten(), nn.Linear(64, 32), nn.ReLU(),
                        nn.Linear(32, 10))
    torch.onnx.export(mlp, torch.randn(2, 1, 8, 8), "mlp.onnx",
                      opset_version=13, input_names=["x"],
                      output_names=["y"],
                      dynamic_axes={"x": {0: "N"}, "y": {0: "N"}},
                      training=torch.onnx.TrainingMode.TRAINING)
    flags = ["--optimizer", "momentum", "--lr", str(LR), "--weight-decay",
             str(DECAY)]
    train = ["--data", "train.npz", "--steps", "6", "--seed", "3"]
    for ranks in (1, 2, 3, 4):
        run([compile_tool, "mlp.onnx", "--batch-size", str(4 * ranks), "-o",
             "mlp%d" % ranks] + flags)
        if ranks == 1:
            continue
        run(["./mlp%d" % ranks] + train + ["--checkpoint-dir",
                                           "mlp-one-%d" % ranks])
        run(mpirun + ["-np", str(ranks), "./mlp1"] + train +
            ["--global-batch", str(4 * ranks), "--checkpoint-dir",
             "mlp-dp-%d" % ranks])
        one = dict(np.load("mlp-one-%d/checkpoint.npz" % ranks))
        dp = dict(np.load("mlp-dp-%d/checkpoint.npz" % ranks))
        ok &= compare("MLP P=%d: %d ranks x 4 = 1 x %d" % (ranks, ranks,
                                                           4 * ranks),
                      dp, {k: v.astype(np.float64) for k, v in one.items()})

    # --- Digits CNN with batch norm: P ranks x 8 against PyTorch. ---
    steps, batch = 4, 8
    saved = sys.argv
    sys.argv = ["digits.py", "scratch"]
    try:
        cnn = runpy.run_path(os.path.join(os.path.dirname(
            os.path.abspath(__file__)), "..", "..", "Examples", "digits.py"),
            run_name="__main__")["model"]
    finally:
        sys.argv = saved
    data = np.load("train.npz")
    run([compile_tool, "digits_cnn.onnx", "--batch-size", str(batch), "-o",
         "cnn"] + flags)
    for ranks in (1, 2, 3, 4):
        run(mpirun + ["-np", str(ranks), "./cnn", "--data", "train.npz",
                      "--steps", str(steps), "--no-shuffle",
                      "--checkpoint-dir", "cnn-dp-%d" % ranks])
        got = dict(np.load("cnn-dp-%d/checkpoint.npz" % ranks))
        model = copy.deepcopy(cnn).double().train()
        decayed = [p for p in model.parameters() if p.dim() > 1]
        others = [p for p in model.parameters() if p.dim() <= 1]
        optimizer = torch.optim.SGD(
            [{"params": decayed, "weight_decay": DECAY},
             {"params": others, "weight_decay": 0.0}], lr=LR,
            momentum=MOMENTUM)
        buffers = [b for n, b in model.named_buffers()
                   if not n.endswith("num_batches_tracked")]
        for step in range(steps):
            optimizer.zero_grad()
            before = [b.clone() for b in buffers]
            # Rank 0 last, so that the running statistics left are its own.
            for rank in reversed(range(ranks)):
                for b, value in zip(buffers, before):
                    b.copy_(value)
                first = step * batch * ranks + rank * batch
                x = torch.from_numpy(data["x"][first:first + batch]).double()
                y = torch.from_numpy(data["y"][first:first + batch])
                loss = nn.functional.cross_entropy(model(x), y) / ranks
                loss.backward()
            optimizer.step()
        expected = {n: p.detach().numpy() for n, p in model.named_parameters()}
        expected.update({n: b.numpy() for n, b in model.named_buffers()
                         if n.endswith("running_mean")})
        ok &= compare("CNN P=%d: %d ranks x %d, batch norm per rank = PyTorch"
                      % (ranks, ranks, batch), got, expected)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
