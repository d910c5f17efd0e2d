"""Checks the gradients that --dtrain-build-training builds against central
finite differences, in float64, op by op.

usage: check_gradients_fd.py COMPILE WORKDIR [FLAG...]

FLAGs go to COMPILE too (--cuda-loops: the CUDA target's loop nests and
heavy-op calls, run on the CPU).

Each case is a small ONNX graph in float64 whose initializers are the
parameters (seeded random values, away from kinks) and whose graph input x
is fixed, as are the int64 run-time inputs that some cases add (an
embedding's token ids). dtrain's gradient of the MSE loss against fixed
targets (or, for the cases with labels, of softmax cross-entropy against
those int64 labels: over B x T x V logits, the mean over the B * T
positions) comes from one compiled SGD step with lr 1 (`--mode=step`:
w' = w - g); the reference is (L(w + h e) - L(w - h e)) / 2h for every
element of every parameter (h = 1e-6), with L evaluated by the compiled
forward pass (`--mode=infer --model` on the perturbed weights) and numpy.
They must
agree to rtol 1e-5 / atol 1e-8. Prints one line per case and exits
non-zero on any mismatch. Matmul, convolution, pooling and batch norm run
on the runtime's f64 reference kernels here (f32 steps are checked against
PyTorch in train-step.test).
"""
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

H = 1e-6
RTOL, ATOL = 1e-5, 1e-8
rng = np.random.RandomState(0)


def away_from_zero(shape, low=0.2, high=1.5):
    """Random values of magnitude in [LOW, HIGH], random signs."""
    return rng.uniform(low, high, shape) * rng.choice([-1.0, 1.0], shape)


def node(op, inputs, outputs, **attrs):
    return helper.make_node(op, inputs, outputs, **attrs)


# name -> (nodes (output "y"), parameters, x, y shape[, options]); options:
# "inputs", int64 run-time graph inputs besides x (name -> value), and
# "labels", int64 labels for softmax cross-entropy (the loss then, instead
# of MSE).
CASES = {
    "Add (broadcast)": ([node("Add", ["x", "w"], ["y"])],
                        {"w": away_from_zero((3,))}, away_from_zero((2, 3)),
                        (2, 3)),
    "Sub": ([node("Sub", ["x", "w"], ["y"])], {"w": away_from_zero((2, 3))},
            away_from_zero((2, 3)), (2, 3)),
    "Mul (broadcast)": ([node("Mul", ["w", "x"], ["y"])],
                        {"w": away_from_zero((2, 1))}, away_from_zero((2, 3)),
                        (2, 3)),
    "Div (both operands)": ([node("Div", ["w", "v"], ["y"])],
                            {"w": away_from_zero((2, 3)),
                             "v": away_from_zero((3,), 0.5)},
                            away_from_zero((2, 3)), (2, 3)),
    "Relu": ([node("Relu", ["w"], ["t"]), node("Mul", ["t", "x"], ["y"])],
             {"w": away_from_zero((2, 3))}, away_from_zero((2, 3)), (2, 3)),
    "Sigmoid": ([node("Sigmoid", ["w"], ["y"])], {"w": away_from_zero((2, 3))},
                away_from_zero((2, 3)), (2, 3)),
    "Tanh": ([node("Tanh", ["w"], ["y"])], {"w": away_from_zero((2, 3))},
             away_from_zero((2, 3)), (2, 3)),
    "LeakyRelu": ([node("LeakyRelu", ["w"], ["y"], alpha=0.2)],
                  {"w": away_from_zero((2, 3))}, away_from_zero((2, 3)),
                  (2, 3)),
    "Softmax": ([node("Softmax", ["w"], ["y"], axis=1)],
                {"w": away_from_zero((2, 4))}, away_from_zero((2, 4)), (2, 4)),
    "LogSoftmax": ([node("LogSoftmax", ["w"], ["y"], axis=1)],
                   {"w": away_from_zero((2, 4))}, away_from_zero((2, 4)),
                   (2, 4)),
    "Transpose": ([node("Transpose", ["w"], ["t"], perm=[1, 0]),
                   node("Mul", ["t", "x"], ["y"])],
                  {"w": away_from_zero((3, 2))}, away_from_zero((2, 3)),
                  (2, 3)),
    "Concat": ([node("Concat", ["w", "x"], ["t"], axis=1),
                node("Mul", ["t", "t"], ["y"])],
               {"w": away_from_zero((2, 2))}, away_from_zero((2, 3)), (2, 5)),
    "ReduceSum": ([node("Mul", ["w", "x"], ["t"]),
                   node("ReduceSum", ["t", "axes"], ["y"], keepdims=0)],
                  {"w": away_from_zero((2, 3))}, away_from_zero((2, 3)), (2,)),
    "ReduceMean": ([node("Mul", ["w", "x"], ["t"]),
                    node("ReduceMean", ["t"], ["y"], axes=[0], keepdims=1)],
                   {"w": away_from_zero((2, 3))}, away_from_zero((2, 3)),
                   (1, 3)),
    "Clip": ([node("Clip", ["w", "lo", "hi"], ["y"])],
             {"w": away_from_zero((2, 3), 0.2, 2.0)}, away_from_zero((2, 3)),
             (2, 3)),
    "Pad": ([node("Pad", ["w", "pads"], ["t"]),
             node("Mul", ["t", "t"], ["y"])],
            {"w": away_from_zero((2, 3))}, away_from_zero((2, 3)), (3, 5)),
    "Flatten (reshape)": ([node("Mul", ["w", "x"], ["t"]),
                           node("Flatten", ["t"], ["y"], axis=0)],
                          {"w": away_from_zero((2, 3))},
                          away_from_zero((2, 3)), (1, 6)),
    "Slice (steps, clamped end)": (
        [node("Slice", ["w", "starts", "ends", "slice_axes", "steps"], ["t"]),
         node("Mul", ["t", "x"], ["y"])],
        {"w": away_from_zero((3, 8))}, away_from_zero((2, 4)), (2, 4)),
    # The runtime's kernels (f64 reference loops), with the parameters as
    # every operand so that each of their gradients is checked.
    "MatMul (both operands)": ([node("MatMul", ["p", "w"], ["t"]),
                                node("Mul", ["t", "x"], ["y"])],
                               {"p": away_from_zero((2, 3)),
                                "w": away_from_zero((3, 4))},
                               away_from_zero((2, 4)), (2, 4)),
    "Gemm (transposed, bias)": ([node("Gemm", ["p", "w", "c"], ["y"],
                                      transB=1, alpha=0.5)],
                                {"p": away_from_zero((2, 3)),
                                 "w": away_from_zero((4, 3)),
                                 "c": away_from_zero((4,))},
                                away_from_zero((2, 4)), (2, 4)),
    "Conv (groups, strides, pads, dilations, bias)": (
        [node("Conv", ["p", "k", "c"], ["y"], group=2, strides=[2, 1],
              pads=[1, 0, 1, 1], dilations=[1, 2])],
        {"p": away_from_zero((1, 4, 5, 6)), "k": away_from_zero((4, 2, 3, 2)),
         "c": away_from_zero((4,))},
        away_from_zero((1, 4, 3, 5)), (1, 4, 3, 5)),
    "MaxPool (strides, pads)": (
        [node("MaxPool", ["p"], ["y"], kernel_shape=[2, 2], strides=[2, 1],
              pads=[0, 1, 1, 0])],
        {"p": away_from_zero((1, 2, 4, 4))}, away_from_zero((1, 2, 2, 4)),
        (1, 2, 2, 4)),
    "AveragePool (pads, count_include_pad=0)": (
        [node("AveragePool", ["p"], ["y"], kernel_shape=[3, 3],
              strides=[2, 2], pads=[1, 1, 1, 1])],
        {"p": away_from_zero((1, 2, 5, 5))}, away_from_zero((1, 2, 3, 3)),
        (1, 2, 3, 3)),
    "AveragePool (ceil_mode, count_include_pad=1)": (
        [node("AveragePool", ["p"], ["y"], kernel_shape=[2, 2],
              strides=[2, 2], pads=[0, 1, 0, 0], ceil_mode=1,
              count_include_pad=1)],
        {"p": away_from_zero((1, 1, 5, 4))}, away_from_zero((1, 1, 3, 3)),
        (1, 1, 3, 3)),
    "GlobalAveragePool": ([node("GlobalAveragePool", ["p"], ["y"])],
                          {"p": away_from_zero((2, 3, 2, 2))},
                          away_from_zero((2, 3, 1, 1)), (2, 3, 1, 1)),
    "BatchNormalization (training)": (
        [node("BatchNormalization", ["p", "s", "b", "mean", "var"],
              ["y", "running_mean", "running_var"], epsilon=1e-3)],
        {"p": away_from_zero((4, 3, 2, 2)), "s": away_from_zero((3,)),
         "b": away_from_zero((3,))},
        away_from_zero((4, 3, 2, 2)), (4, 3, 2, 2)),
    # Transformers' ops: layer norms' Pow and Sqrt, GELU's Erf, batched
    # attention products (loop nests, not kernels), Expand and Gather.
    "Sqrt": ([node("Sqrt", ["w"], ["t"]), node("Mul", ["t", "x"], ["y"])],
             {"w": rng.uniform(0.3, 2.0, (2, 3))}, away_from_zero((2, 3)),
             (2, 3)),
    "Exp": ([node("Exp", ["w"], ["t"]), node("Mul", ["t", "x"], ["y"])],
            {"w": away_from_zero((2, 3))}, away_from_zero((2, 3)), (2, 3)),
    "Log": ([node("Log", ["w"], ["t"]), node("Mul", ["t", "x"], ["y"])],
            {"w": rng.uniform(0.3, 2.0, (2, 3))}, away_from_zero((2, 3)),
            (2, 3)),
    "Erf": ([node("Erf", ["w"], ["t"]), node("Mul", ["t", "x"], ["y"])],
            {"w": away_from_zero((2, 3))}, away_from_zero((2, 3)), (2, 3)),
    "Pow (2, 3 and 2.5)": (
        [node("Pow", ["w", "two"], ["s"]), node("Pow", ["w", "three"], ["c"]),
         node("Pow", ["v", "two_and_half"], ["r"]), node("Add", ["s", "c"],
                                                          ["t"]),
         node("Mul", ["t", "r"], ["u"]), node("Mul", ["u", "x"], ["y"])],
        {"w": away_from_zero((2, 3)), "v": rng.uniform(0.3, 2.0, (2, 3))},
        away_from_zero((2, 3)), (2, 3)),
    "MatMul (batched, both operands)": (
        [node("MatMul", ["p", "w"], ["t"]), node("Mul", ["t", "x"], ["y"])],
        {"p": away_from_zero((2, 3, 4)), "w": away_from_zero((2, 4, 2))},
        away_from_zero((2, 3, 2)), (2, 3, 2)),
    "MatMul (3-d by a matrix)": (
        [node("MatMul", ["p", "w"], ["t"]), node("Mul", ["t", "x"], ["y"])],
        {"p": away_from_zero((2, 3, 4)), "w": away_from_zero((4, 2))},
        away_from_zero((2, 3, 2)), (2, 3, 2)),
    "MatMul (batch dimensions broadcast)": (
        [node("MatMul", ["p", "w"], ["t"]), node("Mul", ["t", "x"], ["y"])],
        {"p": away_from_zero((2, 1, 3, 4)), "w": away_from_zero((3, 4, 2))},
        away_from_zero((2, 3, 3, 2)), (2, 3, 3, 2)),
    "Expand": ([node("Expand", ["w", "expand_shape"], ["t"]),
                node("Mul", ["t", "x"], ["y"])],
               {"w": away_from_zero((1, 3))}, away_from_zero((2, 3)), (2, 3)),
    "Gather (axis 1, three indices)": (
        [node("Gather", ["w", "gather_indices"], ["t"], axis=1),
         node("Mul", ["t", "x"], ["y"])],
        {"w": away_from_zero((2, 4))}, away_from_zero((2, 3)), (2, 3)),
    # Language models' ops: Gather of a parameter table by run-time int64
    # indices on axis 0 (nn.embedding; its gradient nn.embedding_grad, a
    # scatter-add on the runtime's kernel), with repeated indices (whose
    # rows' gradients sum), negative ones (counted from the end, so that
    # -1 and 4 pick the same row of 5) and rows that no index picks (a
    # zero gradient); and softmax cross-entropy over rank-3 logits.
    "Gather (run-time indices: repeated, negative)": (
        [node("Gather", ["w", "ids"], ["t"], axis=0),
         node("Mul", ["t", "x"], ["y"])],
        {"w": away_from_zero((5, 3))}, away_from_zero((2, 3, 3)), (2, 3, 3),
        {"inputs": {"ids": np.array([[1, -1, 3], [4, 1, -4]], np.int64)}}),
    "Gather (run-time indices, rank-3 table)": (
        [node("Gather", ["w", "ids"], ["t"], axis=0),
         node("Mul", ["t", "x"], ["y"])],
        {"w": away_from_zero((4, 2, 3))}, away_from_zero((2, 2, 2, 3)),
        (2, 2, 2, 3),
        {"inputs": {"ids": np.array([[2, -4], [-2, 0]], np.int64)}}),
    "softmax-xent (B x T x V logits, B x T labels)": (
        [node("Mul", ["w", "x"], ["t"]), node("Add", ["t", "b"], ["y"])],
        {"w": away_from_zero((2, 3, 4)), "b": away_from_zero((4,))},
        away_from_zero((2, 3, 4)), (2, 3, 4),
        {"labels": np.array([[0, 3, 3], [1, 0, 2]], np.int64)}),
    # masked_fill: Where of a constant mask (nn.select) on run-time values;
    # the broadcast lhs's gradient sums over the rows where it is chosen.
    "Where (a constant mask)": (
        [node("Constant", [], ["c"],
              value=helper.make_tensor("c", TensorProto.BOOL, [1, 3],
                                       [True, False, True])),
         node("Mul", ["v", "x"], ["t"]),
         node("Where", ["c", "w", "t"], ["y"])],
        {"w": away_from_zero((3,)), "v": away_from_zero((2, 3))},
        away_from_zero((2, 3)), (2, 3)),
    # A mask of run-time int64 flags, reshaped as integers and cast to the
    # float type (nn.to_float: the mask has no gradient, w has).
    "Cast of a run-time int64 mask (Unsqueeze, nn.to_float)": (
        [node("Unsqueeze", ["mask", "axes"], ["u"]),
         node("Cast", ["u"], ["m"], to=TensorProto.DOUBLE),
         node("Mul", ["w", "m"], ["t"]),
         node("Mul", ["t", "x"], ["y"])],
        {"w": away_from_zero((3,))}, away_from_zero((2, 2, 3)), (2, 2, 3),
        {"inputs": {"mask": np.array([[1, 0, 2], [0, 1, 1]], np.int64)}}),
    # The same flags as a condition: Equal of run-time data (nn.compare eq),
    # Where choosing v where a flag is 0 (masked_fill(mask == 0, v)).
    "Where (a run-time mask: Equal of int64 flags)": (
        [node("Unsqueeze", ["mask", "axes"], ["u"]),
         node("Equal", ["u", "int_zero"], ["pad"]),
         node("Mul", ["w", "x"], ["t"]),
         node("Where", ["pad", "v", "t"], ["y"])],
        {"w": away_from_zero((3,)), "v": away_from_zero((3,))},
        away_from_zero((2, 2, 3)), (2, 2, 3),
        {"inputs": {"mask": np.array([[1, 0, 2], [0, 1, 1]], np.int64)}}),
    "Gather (run-time indices) and softmax-xent (a bigram model)": (
        [node("Gather", ["w", "ids"], ["t"], axis=0),
         node("Mul", ["t", "x"], ["y"])],
        {"w": away_from_zero((5, 5))}, away_from_zero((2, 4, 5)), (2, 4, 5),
        {"inputs": {"ids": np.array([[0, 3, 3, -1], [2, 3, 0, 3]],
                                    np.int64)},
         "labels": np.array([[3, 3, 4, 1], [3, 0, 3, 3]], np.int64)}),
}


def make_model(path, nodes, params, x, y_shape, inputs=None):
    initializers = [numpy_helper.from_array(v, k) for k, v in params.items()]
    # Constant operands: ReduceSum's axes, Clip's bounds (away from the
    # parameters' values), Pad's pads, batch norm's running statistics,
    # Slice's bounds, Pow's exponents, Expand's shape, Gather's indices, the
    # 0 that a mask's flags are compared with.
    constants = {"axes": np.array([1], np.int64),
                 "lo": np.array(-0.9), "hi": np.array(1.1),
                 "pads": np.array([0, 1, 1, 1], np.int64),
                 "mean": np.zeros(3), "var": np.ones(3),
                 "starts": np.array([1, 1], np.int64),
                 "ends": np.array([3, 100], np.int64),
                 "slice_axes": np.array([0, -1], np.int64),
                 "steps": np.array([1, 2], np.int64),
                 "two": np.array(2.0), "three": np.array(3.0),
                 "two_and_half": np.array(2.5),
                 "expand_shape": np.array([2, 1], np.int64),
                 "gather_indices": np.array([3, 0, 1], np.int64),
                 "int_zero": np.array(0, np.int64)}
    for name, value in constants.items():
        if any(name in n.input for n in nodes):
            initializers.append(numpy_helper.from_array(value, name))
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info("x", TensorProto.DOUBLE, x.shape)] +
        [helper.make_tensor_value_info(name, TensorProto.INT64, value.shape)
         for name, value in (inputs or {}).items()],
        [helper.make_tensor_value_info("y", TensorProto.DOUBLE, y_shape)],
        initializers)
    model = helper.make_model(graph,
                              opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, path)


def run(command):
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError("%s:\n%s" % (" ".join(command), result.stderr))


def softmax_xent(logits, labels):
    """The mean over the rows of the last axis of -log softmax at the
    label, as dtrain's softmax-xent and PyTorch's cross_entropy of the
    flattened logits compute it."""
    logits = logits.reshape(-1, logits.shape[-1])
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return float(-np.mean(log_probs[np.arange(len(logits)),
                                    labels.reshape(-1)]))


def check(compile_tool, flags, work, name, nodes, params, x, y_shape,
          options=None):
    options = options or {}
    inputs, labels = options.get("inputs", {}), options.get("labels")
    os.makedirs(work, exist_ok=True)
    model = os.path.join(work, "model.onnx")
    make_model(model, nodes, params, x, y_shape, inputs)
    x_path, t_path = (os.path.join(work, f) for f in ("x.npy", "t.npy"))
    np.save(x_path, x)
    feeds = ["--input", "x=" + x_path]
    for input_name, value in inputs.items():
        path = os.path.join(work, input_name + ".npy")
        np.save(path, value)
        feeds += ["--input", "%s=%s" % (input_name, path)]
    if labels is None:
        loss_name, target_name = "mse", "targets"
        targets = rng.randn(*y_shape)
        np.save(t_path, targets)
    else:
        loss_name, target_name = "softmax-xent", "labels"
        np.save(t_path, labels)
    step, forward = (os.path.join(work, f) for f in ("step.bin", "fwd.bin"))
    run([compile_tool, model, "--mode=step", "--loss", loss_name,
         "--optimizer", "sgd", "--lr", "1", "-o", step] + flags)
    run([compile_tool, model, "--mode=infer", "-o", forward] + flags)
    out = os.path.join(work, "out.npz")
    run([step] + feeds + ["--input", "%s=%s" % (target_name, t_path),
                          "--output", out])
    updated = np.load(out)

    def loss(values):
        perturbed = os.path.join(work, "perturbed.onnx")
        make_model(perturbed, nodes, values, x, y_shape, inputs)
        y_path = os.path.join(work, "y.npy")
        run([forward, "--model", perturbed] + feeds +
            ["--output", "y=" + y_path])
        y = np.load(y_path)
        if labels is not None:
            return softmax_xent(y, labels)
        return float(np.mean((y - targets) ** 2))

    worst = 0.0
    ok = True
    for key, value in params.items():
        grad = value - updated[key]
        reference = np.zeros_like(value)
        for index in np.ndindex(value.shape):
            plus, minus = dict(params), dict(params)
            plus[key], minus[key] = value.copy(), value.copy()
            plus[key][index] += H
            minus[key][index] -= H
            reference[index] = (loss(plus) - loss(minus)) / (2 * H)
        worst = max(worst, float(np.abs(grad - reference).max()))
        if not np.allclose(grad, reference, rtol=RTOL, atol=ATOL):
            print("%s: MISMATCH in d/d%s: dtrain %s, finite differences %s"
                  % (name, key, grad.ravel(), reference.ravel()))
            ok = False
    if ok:
        print("%s: max |dtrain - finite differences| = %.2g OK" % (name,
                                                                 worst))
    return ok


def main():
    compile_tool, workdir, flags = sys.argv[1], sys.argv[2], sys.argv[3:]
    ok = True
    for i, (name, case) in enumerate(CASES.items()):
        try:
            ok &= check(compile_tool, flags, os.path.join(workdir, str(i)),
                        name, *case)
        except RuntimeError as error:
            print("%s: FAILED: %s" % (name, error))
            ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
