"""Writes OUT_DIR/short-raw.onnx (a Slice whose 'ends' is a Constant int64
tensor of one element holding 1 byte of raw data, the case
dtrain-import-fuzzer found crashing ONNX's shape inference) and
OUT_DIR/short-values.onnx (a MatMul weight initializer of 12 elements with
11 float_data values).

usage: short_tensor_data.py OUT_DIR
"""
import os
import sys

import onnx
from onnx import TensorProto, helper

out = sys.argv[1]
# onnx.helper refuses to make such tensors: fill in the fields directly.
ends = TensorProto(name="ends", data_type=TensorProto.INT64, dims=[1],
                   raw_data=b"\x03")
slice_graph = helper.make_graph(
    [helper.make_node("Constant", [], ["e"], name="ends", value=ends),
     helper.make_node("Constant", [], ["s"], name="starts",
                      value=helper.make_tensor("starts", TensorProto.INT64,
                                               [1], [0])),
     helper.make_node("Slice", ["x", "s", "e"], ["y"])],
    "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 6])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 6])])
weight = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[3, 4],
                     float_data=[1.0] * 11)
matmul_graph = helper.make_graph(
    [helper.make_node("MatMul", ["x", "w"], ["y"])], "g",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])],
    [weight])
for name, graph in [("short-raw", slice_graph), ("short-values", matmul_graph)]:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, os.path.join(out, name + ".onnx"))
