"""Exports torchvision models with PyTorch and checks dtrain's import of
each against PyTorch: the trainable parameters (count and total elements)
and the output shape for a batch of 2.

usage: check_torchvision_import.py TRANSLATE WORKDIR MODEL[:MODE] ...

MODE is eval or train (both when omitted). Prints one line per import,
"<model> <mode>: params=<n> elements=<n> output=<shape> import=<s>s", and
exits non-zero on the first mismatch or failed import.
"""
import os
import re
import subprocess
import sys
import time

translate, workdir = sys.argv[1:3]
os.makedirs(workdir, exist_ok=True)
here = os.path.dirname(os.path.abspath(__file__))
failed = False
for spec in sys.argv[3:]:
    name, _, only = spec.partition(":")
    for mode in [only] if only else ["eval", "train"]:
        path = os.path.join(workdir, "%s-%s.onnx" % (name, mode))
        expected = subprocess.run(
            [sys.executable, os.path.join(here, "export_torchvision.py"),
             name, mode, path],
            check=True, capture_output=True, text=True).stdout.strip()
        start = time.time()
        result = subprocess.run([translate, "--import-onnx", path,
                                 "--batch-size", "2"],
                                capture_output=True, text=True)
        seconds = time.time() - start
        os.remove(path)
        if result.returncode != 0:
            print("%s %s: import failed:\n%s" % (name, mode, result.stderr))
            failed = True
            continue
        signature = re.search(r"func\.func @forward\((.*)\) -> (.*) \{",
                              result.stdout)
        params = re.findall(r"tensor<([0-9x]+)xf32> \{train\.param = ",
                            signature.group(1))
        elements = 0
        for shape in params:
            count = 1
            for dim in shape.split("x"):
                count *= int(dim)
            elements += count
        output = re.match(r"\(?tensor<([0-9x]+)xf32>", signature.group(2))
        got = "params=%d elements=%d output=%s" % (len(params), elements,
                                                   output.group(1))
        # EVAL exports fold batch norm into the convolutions, so only the
        # output shape is comparable there.
        comparable = got if mode == "train" else got.split()[-1]
        want = expected if mode == "train" else expected.split()[-1]
        status = "" if comparable == want else " MISMATCH (PyTorch: %s)" % expected
        failed |= bool(status)
        print("%s %s: %s import=%.2fs%s" % (name, mode, got, seconds, status))
sys.exit(1 if failed else 0)
