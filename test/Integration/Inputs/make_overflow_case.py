"""Writes the overflow test's model and data into DIR.

usage: make_overflow_case.py DIR

mlp.onnx: a 64-32-10 ReLU MLP (seed 0, no batch norm, so that no state
changes outside the optimizer). clean.npz: 256 samples of 64 Gaussian
features with labels in [0, 10). poisoned.npz: the same with one infinity
in sample 72, which under mpirun -np 4 with batch 8 and --no-shuffle is
rank 1's shard of the third step (global batch 2 holds samples 64..95,
rank r's shard is 64 + 8r .. 71 + 8r).
"""
import os
import sys
import warnings

import numpy as np
import torch
from torch import nn


def main():
    out = sys.argv[1]
    warnings.filterwarnings("ignore")
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
    torch.onnx.export(model.train(), torch.randn(2, 64),
                      os.path.join(out, "mlp.onnx"), opset_version=13,
                      input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "N"}, "y": {0: "N"}},
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False)
    rng = np.random.RandomState(0)
    x = rng.randn(256, 64).astype(np.float32)
    y = rng.randint(0, 10, 256).astype(np.int64)
    np.savez(os.path.join(out, "clean.npz"), x=x, y=y)
    x[72, 5] = np.inf
    np.savez(os.path.join(out, "poisoned.npz"), x=x, y=y)
    return 0


if __name__ == "__main__":
    sys.exit(main())
