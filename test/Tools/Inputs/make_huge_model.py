"""A model whose training step needs buffers past 2 GB: x [N, 1] times
w [1, 32768] is an N x 32768 activation (2.6 GB at N = 20000), then a
linear layer to 2 classes."""
import sys
import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto

w = numpy_helper.from_array(np.full((1, 32768), 0.01, np.float32), "w")
v = numpy_helper.from_array(np.full((32768, 2), 0.01, np.float32), "v")
graph = helper.make_graph(
    [helper.make_node("MatMul", ["x", "w"], ["h"]),
     helper.make_node("MatMul", ["h", "v"], ["logits"])],
    "huge", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1])],
    [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 2])],
    [w, v])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]),
          sys.argv[1])
