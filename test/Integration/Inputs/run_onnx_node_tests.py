"""Runs the ONNX backend node tests through executables compiled by
dtrain-compile: the conformance check of the whole path (import, lowering,
code generation, runtime) op by op, against ONNX's own reference outputs.

usage: run_onnx_node_tests.py [-j N] [--data DIR] [--filter REGEX] [-v]
                              [--compile-flag FLAG]... COMPILE WORKDIR

Generates the node tests of python3-onnx (1.12) into WORKDIR/data (unless
--data names an existing `generate-data` output; ~3 s), selects every test
whose graph uses only op types that dtrain imports and whose inputs and
outputs are tensors, compiles each with `COMPILE model.onnx --mode=infer`
and each --compile-flag (N at a time, default 2), converts test_data_set_*/input_*.pb to .npy,
runs the executable with `--input NAME=x.npy ... --output NAME=y.npy` and
compares every output as ONNX's backend test runner does: same dtype and
shape, then np.testing.assert_allclose at the runner's default tolerances
(rtol=1e-3, atol=1e-7; onnx/backend/test/case/node).

Node tests pass shapes, axes, pads, Clip bounds and Dropout ratios as graph
inputs, which dtrain needs constant at import. For each such test, a
"<name>+const" variant turns those inputs (INT64/BOOL tensors and float
scalars after the first input) into initializers holding the data set's
values, so that the op itself is still checked. Gather's indices are such
an input too: the test itself passes them at run time (on axis 0, an
embedding lookup, which dtrain computes; on another axis it rejects them),
and its +const variant bakes them (constant indices, imported otherwise).
Likewise, a test of an opset older than 7 (which dtrain does not import)
whose ops are defined alike in opset 13 gets a "<name>+opset13" variant
that imports opset 13.

A test may be rejected with a clear error by dtrain-compile ("error:" on
stderr, exit status 1) only if EXPECTED_UNSUPPORTED lists it, with the
reason; NOT_COMPARABLE tests are not run. The script exits non-zero when a
test not in that list is rejected, fails to link, crashes, times out, fails
at run time or mismatches, and when a listed test passes or is no longer
selected (so that the lists stay accurate). It prints a line per failure
and per expected rejection, counts per op type, and last
"onnx-node-tests: passed=N expected-unsupported=M skipped=S failed=K".
"""
import argparse
import collections
import concurrent.futures
import glob
import os
import re
import shutil
import subprocess
import sys
import time

import numpy as np

# python3-onnx 1.12's test generators use aliases that numpy has removed.
for alias, value in (("float", float), ("int", int), ("bool", bool),
                     ("object", object)):
    if alias not in np.__dict__:
        setattr(np, alias, value)

import onnx  # noqa: E402
from onnx import numpy_helper  # noqa: E402

# The op types dtrain's importer accepts (README, "Importing ONNX"): the
# compute ops, and the shape arithmetic it evaluates at import time.
SUPPORTED_OPS = {
    "Add", "Sub", "Mul", "Div", "Relu", "Sigmoid", "Tanh", "LeakyRelu",
    "Clip", "Dropout", "Softmax", "LogSoftmax", "MatMul", "Gemm", "Conv",
    "MaxPool", "AveragePool", "GlobalAveragePool", "BatchNormalization",
    "Reshape", "Flatten", "Transpose", "Concat", "Pad", "ReduceSum",
    "ReduceMean", "Identity", "Slice", "Sqrt", "Exp", "Log", "Erf", "Pow",
    "Expand", "Gather", "Unsqueeze", "Squeeze", "Split", "Where",
    "LayerNormalization", "Not", "HardSigmoid", "HardSwish", "Neg",
    "Reciprocal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "And",
    "Or", "Xor", "Max", "Min", "Abs", "Softplus", "Elu", "Selu", "Celu",
}
SHAPE_OPS = {"Shape", "Cast", "Constant",
             "ConstantOfShape", "Equal", "Range", "Mod", "ScatterND"}
SUPPORTED_OPS |= SHAPE_OPS

# The ONNX backend test runner's defaults (onnx/backend/test/loader and
# case/node: rtol=1e-3, atol=1e-7).
RTOL = 1e-3
ATOL = 1e-7

# Reasons shared by several tests below.
UINT8 = "8-bit integer tensors (dtrain computes in f32)"
INT8 = "int8 tensors (dtrain computes in f32)"
STRING = "string tensors"
RUNTIME_SHAPE_OP = ("%s of a run-time tensor: only evaluated at import, on "
                    "shape arithmetic")
RUNTIME_AXES = "ReduceSum axes given as a run-time input (+const passes)"
RUNTIME_SQUEEZE_AXES = "%s axes given as a run-time input (+const passes)"
RUNTIME_SHAPE = "Reshape target shape given as a run-time input (+const passes)"
RUNTIME_BOUNDS = "Clip bounds given as run-time inputs (+const passes)"
RUNTIME_SLICE = "Slice bounds given as run-time inputs (+const passes)"
RUNTIME_RATIO = "Dropout ratio given as a run-time input"
RUNTIME_INDICES = ("Gather on axis 1 of run-time indices (only axis 0, an "
                   "embedding lookup; +const passes)")
POOL_RANK = "1-d and 3-d pooling (only 2-d, rank-4 inputs)"
MASK = "the mask output of Dropout"
INDICES = "the Indices output of MaxPool"
OPSET1 = "opset 1 (dtrain imports opsets 7 to 17)"
OPSET6 = "opset 6 (dtrain imports opsets 7 to 17)"
RUNTIME_EXPONENT = ("Pow with a run-time exponent (only a constant scalar "
                    "one)")
TENSOR_EXPONENT = "Pow with an exponent of several elements (only a scalar)"
RUNTIME_EXPAND = "Expand shape given as a run-time input (+const passes)"
RUNTIME_SPLIT = "Split sizes given as a run-time input (+const passes)"
RUNTIME_RANGE = ("Range of run-time bounds: only evaluated at import "
                 "(positions of torch.arange)")

# Node tests that dtrain rejects with a clear error from dtrain-compile,
# and why. A listed test that passes, or fails in another way, fails the run.
EXPECTED_UNSUPPORTED = {
    "test_add_uint8": UINT8,
    "test_sub_uint8": UINT8,
    "test_mul_uint8": UINT8,
    "test_div_uint8": UINT8,
    "test_maxpool_2d_uint8": UINT8,
    "test_clip_default_int8_inbounds": INT8,
    "test_clip_default_int8_max": INT8,
    "test_clip_default_int8_min": INT8,
    "test_cast_STRING_to_FLOAT": STRING,
    "test_castlike_FLOAT_to_STRING_expanded": STRING,
    "test_castlike_STRING_to_FLOAT_expanded": STRING,
    "test_cast_FLOAT_to_STRING": STRING,
    "test_gather_1": RUNTIME_INDICES,
    "test_gather_2d_indices": RUNTIME_INDICES,
    "test_slice": RUNTIME_SLICE,
    "test_slice_default_axes": RUNTIME_SLICE,
    "test_slice_default_steps": RUNTIME_SLICE,
    "test_slice_end_out_of_bounds": RUNTIME_SLICE,
    "test_slice_neg": RUNTIME_SLICE,
    "test_slice_neg_steps": RUNTIME_SLICE,
    "test_slice_neg_steps+const": "Slice with negative steps (reversal)",
    "test_slice_negative_axes": RUNTIME_SLICE,
    "test_slice_start_out_of_bounds": RUNTIME_SLICE,
    "test_squeeze": RUNTIME_SQUEEZE_AXES % "Squeeze",
    "test_squeeze_negative_axes": RUNTIME_SQUEEZE_AXES % "Squeeze",
    "test_unsqueeze_axis_0": RUNTIME_SQUEEZE_AXES % "Unsqueeze",
    "test_unsqueeze_axis_1": RUNTIME_SQUEEZE_AXES % "Unsqueeze",
    "test_unsqueeze_axis_2": RUNTIME_SQUEEZE_AXES % "Unsqueeze",
    "test_unsqueeze_negative_axes": RUNTIME_SQUEEZE_AXES % "Unsqueeze",
    "test_unsqueeze_three_axes": RUNTIME_SQUEEZE_AXES % "Unsqueeze",
    "test_unsqueeze_two_axes": RUNTIME_SQUEEZE_AXES % "Unsqueeze",
    "test_unsqueeze_unsorted_axes": RUNTIME_SQUEEZE_AXES % "Unsqueeze",
    "test_reduce_sum_default_axes_keepdims_example": RUNTIME_AXES,
    "test_reduce_sum_default_axes_keepdims_random": RUNTIME_AXES,
    "test_reduce_sum_do_not_keepdims_example": RUNTIME_AXES,
    "test_reduce_sum_do_not_keepdims_random": RUNTIME_AXES,
    "test_reduce_sum_empty_axes_input_noop_example": RUNTIME_AXES,
    "test_reduce_sum_keepdims_example": RUNTIME_AXES,
    "test_reduce_sum_keepdims_random": RUNTIME_AXES,
    "test_reduce_sum_negative_axes_keepdims_example": RUNTIME_AXES,
    "test_reduce_sum_negative_axes_keepdims_random": RUNTIME_AXES,
    "test_reshape_allowzero_reordered": RUNTIME_SHAPE,
    "test_reshape_extended_dims": RUNTIME_SHAPE,
    "test_reshape_negative_dim": RUNTIME_SHAPE,
    "test_reshape_negative_extended_dims": RUNTIME_SHAPE,
    "test_reshape_one_dim": RUNTIME_SHAPE,
    "test_reshape_reduced_dims": RUNTIME_SHAPE,
    "test_reshape_reordered_all_dims": RUNTIME_SHAPE,
    "test_reshape_reordered_last_dims": RUNTIME_SHAPE,
    "test_reshape_zero_and_negative_dim": RUNTIME_SHAPE,
    "test_reshape_zero_dim": RUNTIME_SHAPE,
    "test_clip": RUNTIME_BOUNDS,
    "test_clip_default_max": RUNTIME_BOUNDS,
    "test_clip_default_min": RUNTIME_BOUNDS,
    "test_clip_example": RUNTIME_BOUNDS,
    "test_clip_inbounds": RUNTIME_BOUNDS,
    "test_clip_outbounds": RUNTIME_BOUNDS,
    "test_clip_splitbounds": RUNTIME_BOUNDS,
    "test_constant_pad": "Pad pads given as a run-time input",
    "test_edge_pad": "Pad mode 'edge' (only constant)",
    "test_edge_pad+const": "Pad mode 'edge' (only constant)",
    "test_reflect_pad": "Pad mode 'reflect' (only constant)",
    "test_reflect_pad+const": "Pad mode 'reflect' (only constant)",
    "test_dropout_default_ratio": RUNTIME_RATIO,
    "test_training_dropout": RUNTIME_RATIO,
    "test_training_dropout_default": RUNTIME_RATIO,
    "test_training_dropout_zero_ratio": RUNTIME_RATIO,
    "test_dropout_default_mask": MASK,
    "test_dropout_default_mask_ratio": MASK,
    "test_dropout_default_mask_ratio+const": MASK,
    "test_training_dropout_default_mask": MASK,
    "test_training_dropout_default_mask+const": MASK,
    "test_training_dropout_mask": MASK,
    "test_training_dropout_mask+const": MASK,
    "test_training_dropout_zero_ratio_mask": MASK,
    "test_training_dropout_zero_ratio_mask+const": MASK,
    "test_maxpool_with_argmax_2d_precomputed_pads": INDICES,
    "test_maxpool_with_argmax_2d_precomputed_strides": INDICES,
    "test_averagepool_1d_default": POOL_RANK,
    "test_averagepool_3d_default": POOL_RANK,
    "test_maxpool_1d_default": POOL_RANK,
    "test_maxpool_3d_default": POOL_RANK,
    "test_globalaveragepool": OPSET1,
    "test_globalaveragepool_precomputed": OPSET1,
    "test_constantofshape_float_ones": RUNTIME_SHAPE_OP % "ConstantOfShape",
    "test_constantofshape_int_shape_zero":
        RUNTIME_SHAPE_OP % "ConstantOfShape",
    "test_constantofshape_int_zeros": RUNTIME_SHAPE_OP % "ConstantOfShape",
    "test_mod_broadcast": RUNTIME_SHAPE_OP % "Mod",
    "test_mod_int64_fmod": RUNTIME_SHAPE_OP % "Mod",
    "test_mod_mixed_sign_float16": RUNTIME_SHAPE_OP % "Mod",
    "test_mod_mixed_sign_float32": RUNTIME_SHAPE_OP % "Mod",
    "test_mod_mixed_sign_float64": RUNTIME_SHAPE_OP % "Mod",
    "test_mod_mixed_sign_int32": RUNTIME_SHAPE_OP % "Mod",
    "test_mod_mixed_sign_int64": RUNTIME_SHAPE_OP % "Mod",
    "test_max_int16": "int16 tensors",
    "test_max_int8": INT8,
    "test_max_uint16": "uint16 tensors",
    "test_max_uint32": "uint32 tensors",
    "test_max_uint64": "uint64 tensors",
    "test_max_uint8": UINT8,
    "test_min_int16": "int16 tensors",
    "test_min_int8": INT8,
    "test_min_uint16": "uint16 tensors",
    "test_min_uint32": "uint32 tensors",
    "test_min_uint64": "uint64 tensors",
    "test_min_uint8": UINT8,
    "test_mod_mixed_sign_int16": "int16 tensors",
    "test_mod_mixed_sign_int8": INT8,
    "test_mod_uint16": "uint16 tensors",
    "test_mod_uint32": "uint32 tensors",
    "test_mod_uint64": "uint64 tensors",
    "test_mod_uint8": UINT8,
    "test_scatternd": RUNTIME_SHAPE_OP % "ScatterND",
    "test_scatternd_add": RUNTIME_SHAPE_OP % "ScatterND",
    "test_scatternd_multiply": RUNTIME_SHAPE_OP % "ScatterND",
    "test_elu": OPSET6,
    "test_elu_default": OPSET6,
    "test_elu_example": OPSET6,
    "test_selu": OPSET6,
    "test_selu_default": OPSET6,
    "test_selu_example": OPSET6,
    "test_softplus": OPSET1,
    "test_softplus_example": OPSET1,
    "test_hardsigmoid": OPSET6,
    "test_hardsigmoid_default": OPSET6,
    "test_hardsigmoid_example": OPSET6,
    "test_not_2d": OPSET1,
    "test_not_3d": OPSET1,
    "test_not_4d": OPSET1,
    "test_range_float_type_positive_delta": RUNTIME_RANGE,
    "test_range_int32_type_negative_delta": RUNTIME_RANGE,
    "test_split_variable_parts_1d": RUNTIME_SPLIT,
    "test_split_variable_parts_2d": RUNTIME_SPLIT,
    "test_split_variable_parts_default_axis": RUNTIME_SPLIT,
    "test_split_zero_size_splits": RUNTIME_SPLIT,
    "test_split_zero_size_splits+const": "zero-size tensors",
    "test_expand_dim_changed": RUNTIME_EXPAND,
    "test_expand_dim_unchanged": RUNTIME_EXPAND,
    "test_pow": RUNTIME_EXPONENT,
    "test_pow_bcast_array": RUNTIME_EXPONENT,
    "test_pow_bcast_scalar": RUNTIME_EXPONENT,
    "test_pow_example": RUNTIME_EXPONENT,
    "test_pow_types_float32_int32": RUNTIME_EXPONENT,
    "test_pow_types_float32_int64": RUNTIME_EXPONENT,
    "test_pow_types_float32_int64+const": TENSOR_EXPONENT,
    "test_pow_types_float32_uint32": "uint32 tensors",
    "test_pow_types_float32_uint64": "uint64 tensors",
    "test_pow_types_int32_float32": RUNTIME_EXPONENT,
    "test_pow_types_int32_int32": RUNTIME_EXPONENT,
    "test_pow_types_int64_float32": RUNTIME_EXPONENT,
    "test_pow_types_int64_int64": RUNTIME_EXPONENT,
    "test_pow_types_int64_int64+const": TENSOR_EXPONENT,
}

# Tests that are not run: no correct implementation can match their
# reference outputs, or their data sets do not fit their graphs.
TRUNCATED_BF16 = ("python3-onnx 1.12's reference truncates f32 to bf16, "
                  "where Cast rounds to nearest even (as dtrain and "
                  "PyTorch do)")
NOT_COMPARABLE = {
    "test_cast_FLOAT_to_BFLOAT16": TRUNCATED_BF16,
    "test_castlike_FLOAT_to_BFLOAT16_expanded": TRUNCATED_BF16,
    "test_castlike_BFLOAT16_to_FLOAT_expanded": "its data set's input 'like' "
        "has shape (1,) where its graph declares 3x4 (python3-onnx 1.12's "
        "generator); dtrain's executables check input shapes",
    "test_training_dropout+const": "training-mode Dropout with ratio > 0: "
        "the reference mask comes from numpy's RNG",
    "test_training_dropout_default+const": "training-mode Dropout with "
        "ratio > 0: the reference mask comes from numpy's RNG",
}


def generate(data_dir):
    """Writes python3-onnx's node test cases (model + data sets) under
    DATA_DIR/node, as `onnx.backend.test.cmd_tools generate-data` does."""
    import onnx.backend.test.case.node as node_test
    cases = node_test.collect_testcases(None)
    for case in cases:
        out = os.path.join(data_dir, "node", case.name)
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
        with open(os.path.join(out, "model.onnx"), "wb") as f:
            f.write(case.model.SerializeToString())
        graph = case.model.graph
        for i, (inputs, outputs) in enumerate(case.data_sets):
            set_dir = os.path.join(out, "test_data_set_%d" % i)
            os.makedirs(set_dir)
            for kind, values, infos in (("input", inputs, graph.input),
                                        ("output", outputs, graph.output)):
                for j, value in enumerate(values):
                    if not infos[j].type.HasField("tensor_type"):
                        continue  # sequences, maps, optionals: not selected
                    with open(os.path.join(set_dir, "%s_%d.pb" % (kind, j)),
                              "wb") as f:
                        f.write(numpy_helper.from_array(
                            np.asarray(value), infos[j].name).SerializeToString())
    return len(cases)


def load_tensor(path, info):
    """The data set's value of graph input or output INFO. NumPy has no
    bf16: the data sets hold a bf16 value's 16 bits as an integer, and the
    executables read and write bf16 as float32, which holds it exactly."""
    tensor = onnx.TensorProto()
    with open(path, "rb") as f:
        tensor.ParseFromString(f.read())
    value = numpy_helper.to_array(tensor)
    if (info.type.tensor_type.elem_type == onnx.TensorProto.BFLOAT16
            and value.dtype.kind in "iu"):
        value = (value.astype(np.uint32) << 16).view(np.float32)
    return value


# Element types of the inputs that a +const variant turns into initializers
# (INT64 and BOOL at any rank, FLOAT scalars): shapes, axes, pads, bounds,
# ratios.
CONST_INT_TYPES = {onnx.TensorProto.INT64, onnx.TensorProto.BOOL}


def const_inputs(model):
    """The graph inputs after the first that ONNX passes where older opsets
    took attributes (Reshape's shape, ReduceSum's axes, Clip's bounds, Pad's
    pads, Dropout's ratio, ...): integer or boolean tensors and float
    scalars."""
    names = []
    for info in list(model.graph.input)[1:]:
        tensor_type = info.type.tensor_type
        if (tensor_type.elem_type in CONST_INT_TYPES or
                (tensor_type.elem_type == onnx.TensorProto.FLOAT and
                 len(tensor_type.shape.dim) == 0)):
            names.append(info.name)
    return names


def make_const_variant(test_dir, model, names, out_dir):
    """Writes OUT_DIR/model.onnx: MODEL with the inputs NAMES turned into
    initializers holding test_data_set_0's values. Returns its path."""
    os.makedirs(out_dir, exist_ok=True)
    variant = onnx.ModelProto()
    variant.CopyFrom(model)
    set_dir = os.path.join(test_dir, "test_data_set_0")
    kept = []
    for j, info in enumerate(model.graph.input):
        if info.name in names:
            value = load_tensor(os.path.join(set_dir, "input_%d.pb" % j), info)
            variant.graph.initializer.append(
                numpy_helper.from_array(value, info.name))
        else:
            kept.append(info)
    del variant.graph.input[:]
    variant.graph.input.extend(kept)
    path = os.path.join(out_dir, "model.onnx")
    onnx.save(variant, path)
    return path


def max_rel_diff(diff, want):
    """The largest |got - want| / |want| over the nonzero expected values."""
    nonzero = want != 0
    if not np.any(nonzero):
        return float("inf") if np.any(diff) else 0.0
    return float(np.nanmax(diff[nonzero] / np.abs(want[nonzero]).astype(np.float64)))


MIN_OPSET = 7  # the oldest opset dtrain imports


def same_in_opset(model, opset):
    """Whether every op of MODEL (default domain, opset < MIN_OPSET) has the
    same definition in OPSET, so that restamping the model's opset import
    changes nothing."""
    old = model.opset_import[0].version
    for node in model.graph.node:
        try:
            if (onnx.defs.get_schema(node.op_type, opset).since_version !=
                    onnx.defs.get_schema(node.op_type, old).since_version):
                return False
        except onnx.defs.SchemaError:
            return False
    return True


def make_opset_variant(model, opset, out_dir):
    """Writes OUT_DIR/model.onnx: MODEL importing OPSET. Returns its path."""
    os.makedirs(out_dir, exist_ok=True)
    variant = onnx.ModelProto()
    variant.CopyFrom(model)
    variant.opset_import[0].version = opset
    path = os.path.join(out_dir, "model.onnx")
    onnx.save(variant, path)
    return path


def first_error(stderr):
    """The first line of STDERR that reads as an error (without the model's
    path), else its last line."""
    lines = [l for l in stderr.splitlines() if l.strip()]
    for line in lines:
        if "error" in line or "undefined reference" in line:
            return re.sub(r"^\S*model\.onnx:[0-9]+:[0-9]+: ", "", line.strip())
    return lines[-1].strip() if lines else "(no message)"


def crashed(result):
    return (result.returncode < 0 or result.returncode > 2 or
            "Stack dump" in result.stderr or
            "PLEASE submit a bug report" in result.stderr)


def run_test(compile_tool, flags, test, work):
    """Compiles, runs and checks one test (a dict: model, test_dir, baked:
    the inputs that are initializers in this model). Returns (status,
    detail): status is pass, rejected (a clear error from dtrain-compile),
    link-error, crash, timeout, run-error or mismatch."""
    os.makedirs(work, exist_ok=True)
    original = onnx.load(os.path.join(test["test_dir"], "model.onnx"))
    exe = os.path.join(work, "model.bin")
    command = [compile_tool, test["model"], "--mode=infer", "-o", exe] + flags
    try:
        result = subprocess.run(command, capture_output=True, text=True,
                                timeout=120)
    except subprocess.TimeoutExpired:
        return "timeout", "dtrain-compile ran over 120 s"
    if crashed(result):
        return "crash", "dtrain-compile exited with %d: %s" % (
            result.returncode, first_error(result.stderr))
    if result.returncode != 0:
        if "linking" in result.stderr and "failed" in result.stderr:
            return "link-error", first_error(result.stderr)
        if "error" not in result.stderr:
            return "crash", ("dtrain-compile exited with %d without an error "
                             "message" % result.returncode)
        return "rejected", first_error(result.stderr)

    details = []
    sets = sorted(glob.glob(os.path.join(test["test_dir"], "test_data_set_*")))
    if test["baked"]:
        sets = sets[:1]  # the values baked into the model are set 0's
    for set_dir in sets:
        tag = os.path.basename(set_dir)
        args = [exe]
        for j, info in enumerate(original.graph.input):
            if info.name in test["baked"]:
                continue
            npy = os.path.join(work, "%s-input_%d.npy" % (tag, j))
            np.save(npy, load_tensor(
                os.path.join(set_dir, "input_%d.pb" % j), info))
            args += ["--input", "%s=%s" % (info.name, npy)]
        expected = []
        for j, info in enumerate(original.graph.output):
            npy = os.path.join(work, "%s-output_%d.npy" % (tag, j))
            expected.append((info.name, npy, load_tensor(
                os.path.join(set_dir, "output_%d.pb" % j), info)))
            args += ["--output", "%s=%s" % (info.name, npy)]
        try:
            result = subprocess.run(args, capture_output=True, text=True,
                                    timeout=60)
        except subprocess.TimeoutExpired:
            return "timeout", "the executable ran over 60 s (%s)" % tag
        if crashed(result):
            return "crash", "the executable exited with %d (%s): %s" % (
                result.returncode, tag, first_error(result.stderr))
        if result.returncode != 0:
            return "run-error", "the executable exited with %d (%s): %s" % (
                result.returncode, tag, first_error(result.stderr))
        for output_name, npy, want in expected:
            got = np.load(npy)
            if got.dtype != want.dtype:
                return "mismatch", "output '%s' (%s): dtype %s, expected %s" % (
                    output_name, tag, got.dtype, want.dtype)
            if got.shape != want.shape:
                return "mismatch", "output '%s' (%s): shape %s, expected %s" % (
                    output_name, tag, got.shape, want.shape)
            diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
            try:
                if want.dtype.kind in "biu":  # exact
                    np.testing.assert_array_equal(got, want)
                else:
                    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)
            except AssertionError:
                bad = (got != want if want.dtype.kind in "biu" else
                       ~np.isclose(got, want, rtol=RTOL, atol=ATOL,
                                   equal_nan=True))
                worst = int(np.argmax(np.where(bad, diff, -1)))
                return "mismatch", (
                    "output '%s' (%s): %d of %d elements differ, max abs diff "
                    "%.3g, max rel diff %.3g (element %s: got %r, expected %r)"
                    % (output_name, tag, int(bad.sum()), bad.size,
                       float(np.nanmax(diff)),
                       max_rel_diff(diff, want),
                       np.unravel_index(worst, bad.shape),
                       got.flat[worst].item(), want.flat[worst].item()))
            details.append("%s: max abs diff %.3g" % (
                output_name, float(np.max(diff)) if diff.size else 0.0))
    shutil.rmtree(work, ignore_errors=True)
    return "pass", "; ".join(details)


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("compile", help="the dtrain-compile executable")
    parser.add_argument("workdir", help="scratch directory (data, executables)")
    parser.add_argument("--compile-flag", action="append", default=[],
                        help="one more dtrain-compile flag, e.g. "
                        "--cuda-loops (repeatable)")
    parser.add_argument("-j", "--jobs", type=int, default=2,
                        help="tests compiled and run in parallel (default: 2)")
    parser.add_argument("--data", help="an existing generate-data directory "
                        "(default: generate into WORKDIR/data)")
    parser.add_argument("--filter", help="only the tests whose name matches "
                        "this regular expression")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="print a line per passing test too")
    args = parser.parse_args()

    start = time.time()
    os.makedirs(args.workdir, exist_ok=True)
    data_dir = args.data
    if data_dir is None:
        data_dir = os.path.join(args.workdir, "data")
        count = generate(data_dir)
        print("generated %d node tests in %.1fs" % (count, time.time() - start))

    # Every test whose op types dtrain imports, with tensor inputs and
    # outputs; plus, where the test passes shapes, axes, pads, bounds or
    # ratios as graph inputs (which dtrain needs constant at import), a
    # "+const" variant with those inputs turned into initializers. Shape
    # arithmetic ops get none: their data input stays a run-time value.
    tests = []
    skipped = set()
    for test_dir in sorted(glob.glob(os.path.join(data_dir, "node", "test_*"))):
        name = os.path.basename(test_dir)
        model = onnx.load(os.path.join(test_dir, "model.onnx"))
        ops = sorted({node.op_type for node in model.graph.node})
        if not ops or not set(ops) <= SUPPORTED_OPS:
            continue
        values = list(model.graph.input) + list(model.graph.output)
        if not all(v.type.HasField("tensor_type") for v in values):
            continue  # sequence, map or optional values: not tensors
        candidates = [(name, os.path.join(test_dir, "model.onnx"), [])]
        baked = const_inputs(model)
        if baked and not set(ops) <= SHAPE_OPS:
            candidates.append((name + "+const", None, baked))
        opset = model.opset_import[0].version
        if (len(model.opset_import) == 1 and opset < MIN_OPSET and
                same_in_opset(model, 13)):
            candidates.append((name + "+opset13", "opset", []))
        for test_name, path, names in candidates:
            if args.filter and not re.search(args.filter, test_name):
                continue
            if test_name in NOT_COMPARABLE:
                print("SKIP: %s: %s" % (test_name, NOT_COMPARABLE[test_name]))
                skipped.add(test_name)
                continue
            work = os.path.join(args.workdir, "run", test_name)
            shutil.rmtree(work, ignore_errors=True)
            if path is None:
                path = make_const_variant(test_dir, model, names, work)
            elif path == "opset":
                path = make_opset_variant(model, 13, work)
            tests.append({"name": test_name, "test_dir": test_dir,
                          "model": path, "baked": set(names), "ops": ops,
                          "work": work})
    print("selected %d node tests whose op types dtrain imports "
          "(%d +const and %d +opset13 variants)" % (
              len(tests), sum(1 for t in tests if t["baked"]),
              sum(1 for t in tests if t["name"].endswith("+opset13"))))

    results = {}
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = {pool.submit(run_test, args.compile, args.compile_flag, test,
                               test["work"]):
                   test["name"] for test in tests}
        for future in concurrent.futures.as_completed(futures):
            results[futures[future]] = future.result()

    failed = []  # the FAIL lines, repeated on stderr at the end
    per_op = collections.defaultdict(collections.Counter)
    counts = collections.Counter()
    for test in tests:
        name, ops = test["name"], test["ops"]
        status, detail = results[name]
        reason = EXPECTED_UNSUPPORTED.get(name)
        if status == "pass" and reason is None:
            outcome = "passed"
            if args.verbose:
                print("PASS: %s (%s)" % (name, detail))
        elif status == "rejected" and reason is not None:
            outcome = "expected-unsupported"
            print("UNSUPPORTED: %s: %s [%s]" % (name, reason, detail))
        elif status == "pass":
            outcome = "failed"
            failed.append("FAIL: %s: passes but EXPECTED_UNSUPPORTED lists it "
                          "(%s); remove it from the list" % (name, reason))
        elif status == "rejected":
            outcome = "failed"
            failed.append("FAIL: %s: rejected: %s" % (name, detail))
        else:
            outcome = "failed"
            failed.append("FAIL: %s: %s: %s%s" % (
                name, status, detail,
                " (listed as unsupported: %s)" % reason if reason else ""))
        if outcome == "failed":
            print(failed[-1])
        counts[outcome] += 1
        for op in ops:
            per_op[op][outcome] += 1

    stale = sorted((set(EXPECTED_UNSUPPORTED) | set(NOT_COMPARABLE)) -
                   set(results) - skipped)
    if stale and not args.filter:
        failed.append("FAIL: EXPECTED_UNSUPPORTED or NOT_COMPARABLE lists "
                      "tests that are not selected: %s" % " ".join(stale))
        print(failed[-1])
        counts["failed"] += len(stale)

    print("per op (passed/expected-unsupported/failed):")
    for op in sorted(per_op):
        c = per_op[op]
        print("  %-20s %3d %3d %3d" % (op, c["passed"], c["expected-unsupported"],
                                       c["failed"]))
    print("time: %.1fs" % (time.time() - start))
    summary = ("onnx-node-tests: passed=%d expected-unsupported=%d skipped=%d "
               "failed=%d" % (counts["passed"], counts["expected-unsupported"],
                              len(skipped), counts["failed"]))
    print(summary)
    if failed:
        # Again on stderr, which lit shows in full when stdout goes to
        # FileCheck.
        sys.stdout.flush()
        print("\n".join(failed + [summary]), file=sys.stderr)
    return 1 if counts["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
