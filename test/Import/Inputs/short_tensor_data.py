"""Writes OUT_DIR/short-raw.onnx (a Slice whose 'ends' is a Constant int64
tensor of one element holding 1 byte of raw data, the case
dtrain-import-fuzzer found crashing ONNX's shape inference),
OUT_DIR/short-values.onnx (a MatMul weight initializer of 12 elements with
11 float_data values) and OUT_DIR/misplaced-values.onnx (a batch size
doubled and halved, x.size(0) * 2 // 2, by a Constant int64 whose value is
in int32_data, which ONNX does not read for int64: its data propagation
crashed on it, found by dtrain-import-fuzzer) and OUT_DIR/empty-raw.onnx
(a Mul of two Constant int64 tensors, one with its value in int64_data
beside an empty raw_data, which is what ONNX reads: its data propagation
crashed on it, found by dtrain-import-fuzzer).

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
two = TensorProto(name="two", data_type=TensorProto.INT64, dims=[],
                  int32_data=[2])
scale_graph = helper.make_graph(
    [helper.make_node("Shape", ["x"], ["s"]),
     helper.make_node("Constant", [], ["i0"],
                      value=helper.make_tensor("i0", TensorProto.INT64, [],
                                               [0])),
     helper.make_node("Gather", ["s", "i0"], ["b"], axis=0),
     helper.make_node("Constant", [], ["two"], name="two", value=two),
     helper.make_node("Mul", ["b", "two"], ["d"]),
     helper.make_node("Div", ["d", "two"], ["y"])],
    "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 3])],
    [helper.make_tensor_value_info("y", TensorProto.INT64, [])])
big = TensorProto(name="a", data_type=TensorProto.INT64, dims=[1],
                  int64_data=[2 ** 62], raw_data=b"")
empty_raw_graph = helper.make_graph(
    [helper.make_node("Constant", [], ["a"], name="a", value=big),
     helper.make_node("Constant", [], ["b"],
                      value=helper.make_tensor("b", TensorProto.INT64, [1],
                                               [4])),
     helper.make_node("Mul", ["a", "b"], ["y"])],
    "g", [helper.make_tensor_value_info("x", TensorProto.INT64, [1])],
    [helper.make_tensor_value_info("y", TensorProto.INT64, [1])])
# Opset 15: ONNX propagates data through Mul and Div from opset 14.
for name, graph, opset in [("short-raw", slice_graph, 13),
                           ("short-values", matmul_graph, 13),
                           ("misplaced-values", scale_graph, 15),
                           ("empty-raw", empty_raw_graph, 16)]:
    model = helper.make_model(graph,
                              opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.save(model, os.path.join(out, name + ".onnx"))
