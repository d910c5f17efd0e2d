"""Import benchmark: time and peak memory of dtrain's ONNX import against
ONNX's own Python loader (onnx.load + shape inference) on the same files.

usage: import_bench.py BUILD_DIR [MODEL ...]   (default: resnet50 vgg16)

Exports each torchvision model (TRAINING mode, random weights) into a
temporary directory, then prints key=value lines: file size, dtrain-opt
import wall time and peak RSS, the IR size, the same for the peer, and the
ratios dtrain/peer.
"""
import os
import subprocess
import sys
import tempfile

build = sys.argv[1]
models = sys.argv[2:] or ["resnet50", "vgg16"]
here = os.path.dirname(os.path.abspath(__file__))
exporter = os.path.join(here, "..", "test", "Import", "Inputs",
                        "export_torchvision.py")


def measure(command):
    """Wall seconds and peak RSS (MB) of a command, from GNU time."""
    result = subprocess.run(["/usr/bin/time", "-f", "%e %M"] + command,
                            capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit("failed: %s\n%s" % (" ".join(command), result.stderr))
    seconds, kilobytes = result.stderr.strip().splitlines()[-1].split()
    return float(seconds), int(kilobytes) / 1024.0, result.stdout


peer = ("import sys, onnx, onnx.shape_inference;"
        "m = onnx.load(sys.argv[1]);"
        "m = onnx.shape_inference.infer_shapes(m)")

with tempfile.TemporaryDirectory() as work:
    for name in models:
        path = os.path.join(work, name + ".onnx")
        subprocess.run([sys.executable, exporter, name, "train", path],
                       check=True, capture_output=True)
        size_mb = os.path.getsize(path) / 2**20
        ir = os.path.join(work, name + ".mlir")
        best = None
        for _ in range(3):
            run = measure([os.path.join(build, "bin", "dtrain-opt"), path,
                           "--batch-size", "32", "-o", ir])
            best = run if best is None or run[0] < best[0] else best
        peer_best = None
        for _ in range(3):
            run = measure(["/usr/bin/python3", "-c", peer, path])
            peer_best = run if peer_best is None or run[0] < peer_best[0] else peer_best
        print("model=%s onnx_mb=%.1f dtrain_import_s=%.2f dtrain_peak_rss_mb=%.0f "
              "ir_kb=%.0f onnx_load_infer_s=%.2f onnx_load_infer_peak_rss_mb=%.0f "
              "time_ratio=%.2f rss_ratio=%.2f" % (
                  name, size_mb, best[0], best[1], os.path.getsize(ir) / 1024,
                  peer_best[0], peer_best[1], best[0] / peer_best[0],
                  best[1] / peer_best[1]))
