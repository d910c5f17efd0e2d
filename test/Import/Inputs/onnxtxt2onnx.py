"""Converts an ONNX text-format model into a binary .onnx file for tests.

usage: onnxtxt2onnx.py IN.onnxtxt OUT.onnx [--ir-version N] [--truncate BYTES]
       [--external-data LOCATION] [--raw-data] [--resize NAME=D0xD1...]

--ir-version overrides the model's IR version (to test version checks),
--truncate keeps only the first BYTES bytes of the output (a damaged file),
--external-data marks every initializer as stored in LOCATION (to test that
locations outside the model's directory are rejected), --raw-data stores
initializers as raw bytes (as exporters do), --resize replaces an
initializer by a seeded random one of the given shape (for large weights).
"""
import argparse

import numpy as np
import onnx
import onnx.numpy_helper
import onnx.parser

parser = argparse.ArgumentParser()
parser.add_argument("input")
parser.add_argument("output")
parser.add_argument("--ir-version", type=int)
parser.add_argument("--truncate", type=int)
parser.add_argument("--external-data")
parser.add_argument("--raw-data", action="store_true")
parser.add_argument("--resize", action="append", default=[])
args = parser.parse_args()

with open(args.input) as f:
    model = onnx.parser.parse_model(f.read())
if args.ir_version is not None:
    model.ir_version = args.ir_version
rng = np.random.default_rng(0)
for spec in args.resize:
    name, dims = spec.split("=")
    shape = [int(d) for d in dims.split("x")]
    for i, tensor in enumerate(model.graph.initializer):
        if tensor.name == name:
            array = rng.standard_normal(shape).astype(np.float32)
            model.graph.initializer[i].CopyFrom(
                onnx.numpy_helper.from_array(array, name))
if args.raw_data:
    for i, tensor in enumerate(model.graph.initializer):
        array = onnx.numpy_helper.to_array(tensor)
        model.graph.initializer[i].CopyFrom(
            onnx.numpy_helper.from_array(array, tensor.name))
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
