"""dtrain's Python front end, for users coming from PyTorch.

It drives the compiler and the trainers it makes; the compiler never
imports it. Run it with Debian's interpreter (/usr/bin/python3), which sees
python3-torch and python3-onnx, with this folder on PYTHONPATH:

    import dtrain
    dtrain.export(model, torch.randn(2, 1, 8, 8), "cnn.onnx")
    trainer = dtrain.compile("cnn.onnx", "cnn.bin", batch_size=32,
                             optimizer="momentum", lr=0.05)
    dtrain.save_data("train.npz", x_train, y_train)
    run = trainer.train("train.npz", epochs=3, np=2)
    print(run.final["loss"], [s["loss"] for s in run.steps])
    dtrain.plot(run, "progress.png")

    dtrain.export(model, torch.randn(2, 1, 8, 8), "eval.onnx", training=False)
    logits = dtrain.compile("eval.onnx", "cnn-infer.bin", mode="infer",
                            batch_size=8).run(x)

Every failure of a tool (an option dtrain-compile refuses, a data file a
trainer cannot read, a rank that dies) raises DtrainError with the tool's
own message and exit status.
"""

from .errors import DtrainError
from .model import export, save_data
from .compiler import compile, find_tool
from .trainer import Trainer, Run
from .inference import Model
from .progress import parse_progress, read_progress
from .plot import plot

__all__ = [
    "DtrainError", "export", "save_data", "compile", "find_tool", "Trainer",
    "Run", "Model", "parse_progress", "read_progress", "plot"
]
