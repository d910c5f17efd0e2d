"""PyTorch's eager training step as dtrain's compiled steps run it: momentum
SGD (lr 0.01, momentum 0.9, weight decay 5e-4 on the weights of rank > 1
only), softmax cross-entropy (with N x T labels, one per position of N x T
x V logits, their mean over all N T positions: F.cross_entropy of the
flattened logits and labels), under torch.autocast(bfloat16) for bf16; and
its timing; and a model's export for dtrain-compile --mode=step. Shared by bench/train_bench.py and the GPU bundle's
scripts/gpu_bundle_steps.py, which runs where nothing but PyTorch is.
"""
import time

import torch
from torch import nn

LR, MOMENTUM, DECAY = 0.01, 0.9, 5e-4


def export_for_training(model, example, path):
    """MODEL exported to PATH in training mode (batch norm on the batch's
    statistics) for inputs like EXAMPLE (input x, output y), as
    dtrain-compile --mode=step takes it."""
    with torch.no_grad():
        torch.onnx.export(model, example, path, opset_version=13,
                          input_names=["x"], output_names=["y"],
                          training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False)


def optimizer_for(model):
    params = list(model.parameters())
    return torch.optim.SGD(
        [{"params": [p for p in params if p.dim() > 1],
          "weight_decay": DECAY},
         {"params": [p for p in params if p.dim() <= 1],
          "weight_decay": 0.0}], lr=LR, momentum=MOMENTUM)


def make_step(model, x, y, device, precision):
    """One training step of MODEL (on DEVICE) on X and labels Y, a closure
    that returns once the device is done with it."""
    optimizer = optimizer_for(model)
    criterion = nn.CrossEntropyLoss()

    def step():
        optimizer.zero_grad()
        with torch.autocast(device.type, dtype=torch.bfloat16,
                            enabled=precision == "bf16"):
            out = model(x)
            if y.dim() > 1:  # a language model's: one label per position
                out, labels = out.reshape(-1, out.shape[-1]), y.reshape(-1)
            else:
                labels = y
            loss = criterion(out, labels)
        loss.backward()
        optimizer.step()
        if device.type == "cuda":
            torch.cuda.synchronize()
    return step


def time_step(step, runs_for):
    """The step times (ms) of STEP after 2 warm-up steps: RUNS_FOR(ms of a
    probe step) runs of it."""
    for _ in range(2):
        step()
    start = time.perf_counter()
    step()
    probe = (time.perf_counter() - start) * 1000.0
    times = []
    for _ in range(runs_for(probe)):
        start = time.perf_counter()
        step()
        times.append((time.perf_counter() - start) * 1000.0)
    return times
