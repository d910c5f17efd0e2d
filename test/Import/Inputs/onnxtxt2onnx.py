"""Converts an ONNX text-format model into a binary .onnx file for tests.

usage: onnxtxt2onnx.py IN.onnxtxt OUT.onnx [--ir-version N] [--truncate BYTES]
       [--external-data LOCATION]

--ir-version overrides the model's IR version (to test version checks),
--truncate keeps only the first BYTES bytes of the output (a damaged file),
--external-data marks every initializer as stored in LOCATION (to test that
locations outside the model's directory are rejected).
"""
import argparse

import onnx
import onnx.parser

parser = argparse.ArgumentParser()
parser.add_argument("input")
parser.add_argument("output")
parser.add_argument("--ir-version", type=int)
parser.add_argument("--truncate", type=int)
parser.add_argument("--external-data")
args = parser.parse_args()

with open(args.input) as f:
    model = onnx.parser.parse_model(f.read())
if args.ir_version is not None:
    model.ir_version = args.ir_version
if args.external_data is not None:
    for tensor in model.graph.initializer:
        tensor.ClearField("float_data")
        tensor.data_location = onnx.TensorProto.EXTERNAL
        entry = tensor.external_data.add()
        entry.key = "location"
        entry.value = args.external_data
data = model.SerializeToString()
if args.truncate is not None:
    data = data[: args.truncate]
with open(args.output, "wb") as f:
    f.write(data)
