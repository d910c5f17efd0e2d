"""dtrain-compile, called with keyword options."""

import os
import shutil

from .errors import DtrainError
from .tool import options_to_flags, run_tool

# The build tree's tools, where this package is used from a checkout.
_BUILD_BIN = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                          os.pardir, os.pardir, "build", "bin")


def find_tool(name, explicit=None):
    """The path of the dtrain tool NAME (dtrain-compile, dtrain-opt):
    EXPLICIT alone if given, else $DTRAIN_COMPILE for dtrain-compile (or
    $DTRAIN_OPT), else NAME on PATH, else the checkout's build/bin."""
    variable = name.upper().replace("-", "_")
    candidates = [explicit] if explicit else [
        os.environ.get(variable),
        shutil.which(name),
        os.path.join(_BUILD_BIN, name)
    ]
    for path in candidates:
        if path and os.path.isfile(path) and os.access(path, os.X_OK):
            return os.path.abspath(path)
    if explicit:
        raise DtrainError("%s: no such executable" % explicit)
    raise DtrainError("%s not found: build dtrain (./scripts/setup.sh), put "
                      "its build/bin on PATH, or set %s" % (name, variable))


def compile(model, output, mode="train", dtrain_compile=None, verbose=False,
            **options):
    """Compiles MODEL (.onnx, or .mlir) into OUTPUT with dtrain-compile and
    the keyword OPTIONS as its flags (options_to_flags: batch_size=32,
    optimizer="momentum", lr=0.05, merge="mgwfbp", sparsify="density=0.01",
    precision="bf16", target="cuda", ...; dtrain-compile --help lists
    them). Returns a Trainer for mode="train", a Model for mode="infer",
    else OUTPUT's path (mode="step", or emit="mlir"|"llvm"|"obj"). An
    option it refuses, or a model it cannot compile, raises DtrainError
    with its message."""
    from .inference import Model
    from .trainer import Trainer
    if not os.path.isfile(model):
        raise DtrainError("%s: no such model file" % model)
    command = [find_tool("dtrain-compile", dtrain_compile), model, "-o",
               output, "--mode=%s" % mode] + options_to_flags(options)
    if verbose:
        command.append("-v")
    result = run_tool("dtrain-compile", command)
    if verbose:
        print(result.stdout + result.stderr, end="")
    if options.get("emit", "exe") != "exe":
        return output
    return {"train": Trainer, "infer": Model}.get(mode, str)(output)
