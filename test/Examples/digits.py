"""Exports the demo's training job: scikit-learn's digits set (1797 8x8
grey images of the digits 0-9) as .npz files, and a small CNN for it as an
ONNX model in training mode, as PyTorch users export models.

usage: digits.py [--dropout P] [--model cnn|vit] OUTDIR

Writes OUTDIR/train.npz (1440 samples) and OUTDIR/val.npz (357 samples),
each with x (N x 1 x 8 x 8, float32, pixel values scaled to [0, 1]) and y
(N, int64 labels), split at random with seed 0, and OUTDIR/digits_cnn.onnx:
conv 3x3 (16) - batch norm - ReLU - max pool 2, conv 3x3 (32) - batch
norm - ReLU - max pool 2, linear 128 -> 10 (after a dropout of ratio P
with --dropout P), random weights from seed 0, with a symbolic batch
dimension. With --model vit, OUTDIR/digits_vit.onnx instead: a vision
transformer (test/Examples/vit.py: 4x4 patches, width 32, 4 heads, 2
pre-norm GELU layers, dropout P in them).
"""
import argparse
import os
import sys
import warnings

import numpy as np
import torch
from sklearn.datasets import load_digits
from torch import nn

warnings.filterwarnings("ignore")
parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("outdir", help="the directory to write into")
parser.add_argument("--dropout", type=float, default=0.0, metavar="P",
                    help="a dropout of ratio P before the linear layer")
parser.add_argument("--model", choices=["cnn", "vit"], default="cnn",
                    help="the model to export (default: cnn)")
args = parser.parse_args()
os.makedirs(args.outdir, exist_ok=True)

digits = load_digits()
x = (digits.images / 16.0).astype(np.float32)[:, None, :, :]
y = digits.target.astype(np.int64)
order = np.random.RandomState(0).permutation(len(y))
x, y = x[order], y[order]
np.savez(os.path.join(args.outdir, "train.npz"), x=x[:1440], y=y[:1440])
np.savez(os.path.join(args.outdir, "val.npz"), x=x[1440:], y=y[1440:])

torch.manual_seed(0)
if args.model == "vit":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from vit import TinyViT
    model = TinyViT("gelu", True, dim=32, heads=4, depth=2,
                    dropout=args.dropout)
else:
    model = nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16),
        nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32),
        nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), *([nn.Dropout(args.dropout)] if args.dropout else []),
        nn.Linear(32 * 2 * 2, 10))
model.train()
torch.onnx.export(
    model, torch.randn(2, 1, 8, 8),
    os.path.join(args.outdir, "digits_%s.onnx" % args.model),
    opset_version=13, training=torch.onnx.TrainingMode.TRAINING,
    do_constant_folding=False,
    input_names=["x"], output_names=["logits"],
    dynamic_axes={"x": {0: "N"}, "logits": {0: "N"}})
