"""Exports a LeNet-5-style CNN for 1x28x28 images (random weights) to ONNX,
as PyTorch users do: torch.onnx.export with a symbolic batch dimension.

usage: lenet.py OUT.onnx [eval|train] [--reference DIR]

With --reference, also writes DIR/x.npy (a batch of 8 random images) and
DIR/logits.npy (PyTorch's forward of the same model on it, in eval mode),
so that a compiled model can be checked against PyTorch.
"""
import argparse
import warnings

import numpy as np
import torch
from torch import nn

warnings.filterwarnings("ignore")
parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("output", help="the ONNX file to write")
parser.add_argument("mode", nargs="?", choices=["eval", "train"],
                    default="train", help="export mode (default: train)")
parser.add_argument("--reference", metavar="DIR",
                    help="write x.npy and PyTorch's logits.npy into DIR")
args = parser.parse_args()

torch.manual_seed(0)
model = nn.Sequential(
    nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2),
    nn.Flatten(),
    nn.Linear(16 * 5 * 5, 120), nn.ReLU(),
    nn.Dropout(0.1),
    nn.Linear(120, 84), nn.ReLU(),
    nn.Linear(84, 10))
model.train(args.mode == "train")
torch.onnx.export(
    model, torch.randn(2, 1, 28, 28), args.output, opset_version=13,
    training=(torch.onnx.TrainingMode.TRAINING if args.mode == "train"
              else torch.onnx.TrainingMode.EVAL),
    do_constant_folding=False, input_names=["x"], output_names=["logits"],
    dynamic_axes={"x": {0: "N"}, "logits": {0: "N"}})

if args.reference:
    x = torch.randn(8, 1, 28, 28)
    model.eval()
    with torch.no_grad():
        logits = model(x)
    np.save(f"{args.reference}/x.npy", x.numpy())
    np.save(f"{args.reference}/logits.npy", logits.numpy())
