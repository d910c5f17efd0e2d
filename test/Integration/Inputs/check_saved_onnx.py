"""Checks a model that a dtrain trainer wrote back with --save-onnx,
independently of dtrain: the onnx library loads and checks it, its graph is
the exported one, its initializers moved from the initial weights, and
PyTorch, given those weights (by name) in the digits CNN of
test/Examples/digits.py, classifies the validation set as well as the
trainer reported.

usage: check_saved_onnx.py INITIAL.onnx TRAINED.onnx VAL.npz MIN_ACCURACY
"""
import os
import runpy
import sys
import warnings

import numpy as np
import onnx
import torch
from onnx import numpy_helper

warnings.filterwarnings("ignore")
initial_path, trained_path, val_path, minimum = sys.argv[1:5]
initial, trained = onnx.load(initial_path), onnx.load(trained_path)
onnx.checker.check_model(trained)
assert initial.graph.node == trained.graph.node, "the graph changed"
weights = {t.name: numpy_helper.to_array(t) for t in trained.graph.initializer}
moved = [t.name for t in initial.graph.initializer
         if not np.array_equal(numpy_helper.to_array(t), weights[t.name])]
assert moved, "no initializer changed"

# The same architecture in PyTorch (digits.py builds and exports it; its
# globals hold the model), with the trained weights.
script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                      "Examples", "digits.py")
saved = sys.argv
sys.argv = [script, os.path.join(os.path.dirname(trained_path), "scratch")]
try:
    model = runpy.run_path(script, run_name="__main__")["model"]
finally:
    sys.argv = saved
state = model.state_dict()
for name in state:
    if name.endswith("num_batches_tracked"):
        continue
    state[name] = torch.from_numpy(weights[name].copy())
model.load_state_dict(state)
model.eval()
val = np.load(val_path)
with torch.no_grad():
    predicted = model(torch.from_numpy(val["x"])).argmax(1).numpy()
accuracy = float((predicted == val["y"]).mean())
print("initializers moved: %d of %d; PyTorch accuracy with the saved "
      "weights: %.4f" % (len(moved), len(initial.graph.initializer),
                         accuracy))
sys.exit(0 if accuracy >= float(minimum) else 1)
