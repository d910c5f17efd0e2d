"""Exports a LeNet-5-style CNN for 1x28x28 images (random weights) to ONNX,
as PyTorch users do: torch.onnx.export with a symbolic batch dimension.

usage: lenet.py OUT.onnx [eval|train]
"""
import sys
import warnings

import torch
from torch import nn

warnings.filterwarnings("ignore")
torch.manual_seed(0)
model = nn.Sequential(
    nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2),
    nn.Flatten(),
    nn.Linear(16 * 5 * 5, 120), nn.ReLU(),
    nn.Dropout(0.1),
    nn.Linear(120, 84), nn.ReLU(),
    nn.Linear(84, 10))
mode = sys.argv[2] if len(sys.argv) > 2 else "train"
model.train(mode == "train")
torch.onnx.export(
    model, torch.randn(2, 1, 28, 28), sys.argv[1], opset_version=13,
    training=(torch.onnx.TrainingMode.TRAINING if mode == "train"
              else torch.onnx.TrainingMode.EVAL),
    do_constant_folding=False, input_names=["x"], output_names=["logits"],
    dynamic_axes={"x": {0: "N"}, "logits": {0: "N"}})
