"""A compiled model (dtrain-compile --mode=infer), run on arrays."""

import os
import tempfile

from .errors import DtrainError
from .tool import Executable, run_tool


class Model(Executable):
    """The inference executable at PATH (dtrain-compile --mode=infer)."""

    def run(self, x=None, weights=None, **inputs):
        """The outputs for the input X (the model's one input), or for
        the INPUTS by name (numpy arrays or torch tensors of the compiled
        shapes and dtypes): the one output's array, or a dict of them by
        name. WEIGHTS: another ONNX file whose weights to use (the
        executable's --model). Inputs the executable refuses (a shape, a
        dtype) raise DtrainError with its message."""
        import numpy as np
        if (x is None) == (not inputs):
            raise DtrainError("run: give the one input X, or the inputs by "
                              "name")
        arrays = {"x": x} if x is not None else inputs
        arrays = {
            name: (value.detach().cpu().numpy()
                   if hasattr(value, "detach") else np.asarray(value))
            for name, value in arrays.items()
        }
        with tempfile.TemporaryDirectory() as folder:
            output = os.path.join(folder, "outputs.npz")
            if x is not None:
                given = os.path.join(folder, "x.npy")
                np.save(given, arrays["x"])
            else:
                given = os.path.join(folder, "inputs.npz")
                np.savez(given, **arrays)
            command = [self.path, "--input", given, "--output", output]
            if weights:
                command += ["--model", weights]
            run_tool("model", command)
            with np.load(output) as outputs:
                results = {name: outputs[name] for name in outputs.files}
        return next(iter(results.values())) if len(results) == 1 else results
