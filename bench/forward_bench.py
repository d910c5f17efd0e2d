"""Forward (inference) benchmark: models compiled by dtrain-compile against
PyTorch's eager forward of the same weights on the same input, same thread
count.

usage: forward_bench.py [--threads T] [--seconds S] [--models M ...]
                        [--compile-only M ...] BUILD_DIR

Models (NAME: batch x input): mlp (784-512-256-10 perceptron with ReLU,
an MNIST classifier): 64 x 784; lenet (test/Examples/lenet.py, the demo's
LeNet-5): 64 x 1x28x28; resnet18 and mobilenet_v2 (torchvision, random
weights, batch-norm statistics of random inputs): 8 x 3x224x224; vit (a
vision transformer of PyTorch's TransformerEncoderLayer: 7x7 patches, 16
tokens and a class token, width 64, 4 heads, 4 layers): 64 x 1x28x28;
vit_long (the same at 4x4 patches of 64x64 images, 257 tokens, 2 layers):
16 x 1x64x64; and two language models, their inputs token ids (int64 in
[0, 65)), their outputs next-token logits (B x 64 x 65), each with a causal
mask that is a PyTorch buffer: gpt (test/Examples/gpt.py's TinyGPT:
vocabulary 65, width 128, 4 heads, 4 of PyTorch's TransformerEncoderLayer,
block 64) and nanogpt (test/Examples/nanogpt.py's NanoGPT, attention by
hand, the same sizes): 16 x 64. Each is
exported to ONNX in EVAL mode (opset 13, symbolic batch), compiled with
`BUILD_DIR/bin/dtrain-compile --mode=infer --batch-size B` (timed; with
--frozen=NAME,... naming the model's float buffers that remain
initializers, the masks, so that dtrain keeps them constant), run as
`model.bin --repeat N --warmup 2`, and its output (the logits) compared
with PyTorch's (rtol 1e-4, atol 1e-5). PyTorch runs under torch.no_grad()
in eval mode with torch.set_num_threads(T), 2 warm-up runs, then N timed
runs (time.perf_counter). N is chosen per model and side so that the timed
runs take about S seconds (at least 5, at most 2000 runs).

Both sides report the MINIMUM over the N runs (the executable prints mean
and min; the minimum is the steadiest figure on a shared machine); the
means are printed too. --compile-only models (default: resnet50 at batch 8)
are only compiled, for the compile time. Prints a table:

  model batch dtrain_ms torch_ms ratio compile_s match
"""
import argparse
import os
import re
import runpy
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np
import torch
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "test", "Integration", "Inputs"))
sys.path.insert(0, os.path.join(ROOT, "test", "Examples"))
sys.path.insert(0, os.path.join(ROOT, "python"))
from check_torchvision_forward import build, calibrate  # noqa: E402
from dtrain.model import frozen_initializers  # noqa: E402
from gpt import TinyGPT  # noqa: E402
from nanogpt import NanoGPT  # noqa: E402
from vit import TinyViT  # noqa: E402

# name -> (batch, input shape without the batch)
MODELS = {
    "mlp": (64, (784,)),
    "lenet": (64, (1, 28, 28)),
    "resnet18": (8, (3, 224, 224)),
    "mobilenet_v2": (8, (3, 224, 224)),
    "mobilenet_v3_small": (8, (3, 224, 224)),
    "resnet50": (8, (3, 224, 224)),
    "vit": (64, (1, 28, 28)),
    "vit_long": (16, (1, 64, 64)),
    "gpt": (16, (64,)),
    "nanogpt": (16, (64,)),
}

# The torchvision classifiers (1000 classes).
TORCHVISION = {"resnet18", "mobilenet_v2", "mobilenet_v3_small", "resnet50"}

# The language models: name -> vocabulary V. Their inputs are token ids
# (int64 in [0, V), MODELS' shape), their outputs logits (batch x T x V);
# the other models take float inputs.
VOCAB = {"gpt": 65, "nanogpt": 65}


def make_input(name, batch):
    """A random input of model NAME at BATCH, from torch's global RNG:
    token ids in [0, V) for a language model, standard normal floats for
    the others."""
    shape = MODELS[name][1]
    if name in VOCAB:
        return torch.randint(0, VOCAB[name], (batch, *shape))
    return torch.randn(batch, *shape)


def frozen_flags(model, onnx_path):
    """dtrain-compile's --frozen for ONNX_PATH, MODEL's export: the masks
    of the language models (python/dtrain's frozen_initializers, which
    dtrain.export lists in its metadata); none for the other models."""
    frozen = frozen_initializers(model, onnx_path)
    return ["--frozen=" + ",".join(frozen)] if frozen else []


def make_model(name, work):
    """The eval-mode PyTorch model NAME, exported to WORK/NAME.onnx."""
    path = os.path.join(work, name + ".onnx")
    batch, shape = MODELS[name]
    if name == "lenet":
        # lenet.py builds (seed 0) and exports the demo's model; its
        # globals hold the same model object.
        script = os.path.join(ROOT, "test", "Examples", "lenet.py")
        saved = sys.argv
        sys.argv = [script, path, "eval"]
        try:
            model = runpy.run_path(script, run_name="__main__")["model"]
        finally:
            sys.argv = saved
        return model.eval(), path
    torch.manual_seed(0)
    if name == "mlp":
        model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(),
                              nn.Linear(512, 256), nn.ReLU(),
                              nn.Linear(256, 10)).eval()
    elif name == "vit":
        model = TinyViT("gelu", True, dim=64, heads=4, depth=4, image=28,
                        patch=7).eval()
    elif name == "vit_long":
        model = TinyViT("gelu", True, dim=64, heads=4, depth=2, image=64,
                        patch=4).eval()
    elif name == "gpt":
        model = TinyGPT(vocab=VOCAB[name], dim=128, heads=4, depth=4,
                        block=shape[0]).eval()
    elif name == "nanogpt":
        model = NanoGPT(vocab=VOCAB[name], dim=128, heads=4, depth=4,
                        block=shape[0]).eval()
    else:
        model = calibrate(build(name), shape[-1])
    # Not under no_grad for the vits and gpt: PyTorch's transformer layers
    # then take their fused inference kernel, which has no ONNX export.
    fused = any(isinstance(module, nn.TransformerEncoderLayer)
                for module in model.modules())
    with torch.enable_grad() if fused else torch.no_grad():
        torch.onnx.export(model, make_input(name, batch), path,
                          opset_version=13, input_names=["x"],
                          output_names=["y"],
                          dynamic_axes={"x": {0: "N"}, "y": {0: "N"}})
    return model, path


def compile_model(build_dir, model, onnx_path, batch):
    exe = onnx_path[:-len(".onnx")] + ".bin"
    start = time.perf_counter()
    result = subprocess.run(
        [os.path.join(build_dir, "bin", "dtrain-compile"), onnx_path,
         "--mode=infer", "--batch-size", str(batch), "-o", exe]
        + frozen_flags(model, onnx_path),
        capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if result.returncode != 0:
        sys.exit("dtrain-compile failed on %s:\n%s" % (onnx_path,
                                                       result.stderr))
    return exe, seconds


def run_exe(exe, x_path, y_path, repeat, warmup):
    """Runs EXE; returns (mean ms, min ms) from its --repeat line."""
    command = [exe, "--input", x_path, "--repeat", str(repeat),
               "--warmup", str(warmup)]
    if y_path:
        command += ["--output", y_path]
    result = subprocess.run(command, capture_output=True, text=True)
    match = re.search(r"run_ms=([0-9.]+) min_ms=([0-9.]+) runs=", result.stdout)
    if result.returncode != 0 or not match:
        sys.exit("%s failed (exit %d):\n%s%s" % (
            " ".join(command), result.returncode, result.stdout,
            result.stderr))
    return float(match.group(1)), float(match.group(2))


def runs_for(ms_per_run, seconds):
    return int(min(2000, max(5, seconds * 1000.0 / max(ms_per_run, 1e-3))))


def time_torch(model, x, seconds):
    """(mean ms, min ms, N) of MODEL(x) after 2 warm-up runs."""
    with torch.no_grad():
        for _ in range(2):
            model(x)
        start = time.perf_counter()
        model(x)
        probe = (time.perf_counter() - start) * 1000.0
        times = []
        for _ in range(runs_for(probe, seconds)):
            start = time.perf_counter()
            model(x)
            times.append((time.perf_counter() - start) * 1000.0)
    return float(np.mean(times)), float(np.min(times)), len(times)


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("build", help="the build directory (bin/dtrain-compile)")
    parser.add_argument("--models", nargs="+",
                        default=["mlp", "lenet", "resnet18", "mobilenet_v2",
                                 "vit", "vit_long", "gpt", "nanogpt"],
                        choices=sorted(MODELS), metavar="MODEL",
                        help="models to compile, run and time (default: "
                        "mlp lenet resnet18 mobilenet_v2 vit vit_long gpt "
                        "nanogpt)")
    parser.add_argument("--compile-only", nargs="*", default=["resnet50"],
                        choices=sorted(MODELS), metavar="MODEL",
                        help="models only compiled (default: resnet50)")
    parser.add_argument("--threads", type=int, default=2,
                        help="PyTorch threads (default: 2, this machine's "
                        "cores; dtrain's kernels use all cores)")
    parser.add_argument("--seconds", type=float, default=15.0,
                        help="target time of each side's timed runs per "
                        "model (default: 15)")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    torch.set_num_threads(args.threads)

    rows = []
    with tempfile.TemporaryDirectory() as work:
        for name in args.models:
            batch, _ = MODELS[name]
            model, onnx_path = make_model(name, work)
            exe, compile_s = compile_model(args.build, model, onnx_path,
                                           batch)
            torch.manual_seed(1)
            x = make_input(name, batch)
            x_path = os.path.join(work, name + "-x.npy")
            y_path = os.path.join(work, name + "-y.npy")
            np.save(x_path, x.numpy())

            # One probe run (also the output check), then the timed runs.
            _, probe_ms = run_exe(exe, x_path, y_path, 1, 1)
            with torch.no_grad():
                want = model(x).numpy()
            got = np.load(y_path)
            diff = float(np.abs(got - want).max())
            match = ("ok" if np.allclose(got, want, rtol=1e-4, atol=1e-5)
                     else "MISMATCH(max_abs=%.3g)" % diff)
            runs = runs_for(probe_ms, args.seconds)
            d_mean, d_min = run_exe(exe, x_path, None, runs, 2)
            t_mean, t_min, t_runs = time_torch(model, x, args.seconds)
            rows.append((name, batch, d_min, t_min, d_min / t_min, compile_s,
                         match, d_mean, t_mean, runs, t_runs))
            print("%s: dtrain min %.3f ms mean %.3f ms (%d runs); torch min "
                  "%.3f ms mean %.3f ms (%d runs); compile %.2f s; output %s"
                  % (name, d_min, d_mean, runs, t_min, t_mean, t_runs,
                     compile_s, match), flush=True)
        compiled = []
        for name in args.compile_only:
            batch, _ = MODELS[name]
            model, onnx_path = make_model(name, work)
            _, compile_s = compile_model(args.build, model, onnx_path, batch)
            compiled.append((name, batch, compile_s))
            print("%s: compile %.2f s (batch %d)" % (name, compile_s, batch),
                  flush=True)

    print()
    print("forward, min over N runs, %d threads (ratio = dtrain / torch; "
          "< 1: dtrain faster)" % args.threads)
    print("%-13s %5s %10s %10s %7s %9s  %s" % (
        "model", "batch", "dtrain_ms", "torch_ms", "ratio", "compile_s",
        "output"))
    for name, batch, d_min, t_min, ratio, compile_s, match, *_ in rows:
        print("%-13s %5d %10.3f %10.3f %7.2f %9.2f  %s" % (
            name, batch, d_min, t_min, ratio, compile_s, match))
    for name, batch, compile_s in compiled:
        print("%-13s %5d %10s %10s %7s %9.2f  (compile only)" % (
            name, batch, "-", "-", "-", compile_s))
    return 0 if all(row[6] == "ok" for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
