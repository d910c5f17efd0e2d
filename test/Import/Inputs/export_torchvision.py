"""Exports a torchvision model (random weights) to ONNX and prints what the
importer must reproduce.

usage: export_torchvision.py MODEL eval|train OUT.onnx

Prints "params=<number of trainable parameter tensors>
elements=<their total element count> output=<d0>x<d1>" for a batch of 2,
after writing OUT.onnx with a symbolic batch dimension N (opset 13,
do_constant_folding=False; train keeps BatchNormalization and Dropout in
training mode).
"""
import sys
import warnings

import torch
import torchvision

warnings.filterwarnings("ignore")
name, mode, path = sys.argv[1:4]
torch.manual_seed(0)
kwargs = {"weights": None}
if name == "googlenet":
    kwargs.update(aux_logits=False, init_weights=False)
model = getattr(torchvision.models, name)(**kwargs)
model.train(mode == "train")
x = torch.randn(2, 3, 224, 224)
with torch.no_grad():
    y = model(x)
params = [p for p in model.parameters() if p.requires_grad]
training = (torch.onnx.TrainingMode.TRAINING if mode == "train"
            else torch.onnx.TrainingMode.EVAL)
torch.onnx.export(model, x, path, opset_version=13, training=training,
                  do_constant_folding=False, input_names=["x"],
                  output_names=["y"],
                  dynamic_axes={"x": {0: "N"}, "y": {0: "N"}})
print("params=%d elements=%d output=%s" % (
    len(params), sum(p.numel() for p in params),
    "x".join(str(d) for d in y.shape)))
