"""Fixtures for the runtime's ONNX initializer reader (OnnxWeightsTest.cpp)
and for the main of compiled models (model_main_test.py, fake_model.c).

  onnx_weights_fixtures.py generate DIR   writes DIR/* (removing DIR first)

Most models are written with the onnx package; the wire-format corner cases
that it never writes (unpacked repeated fields, split fields, unknown
fields, two graphs) and the malformed files are encoded by hand below.
Initializer values come from value(), which OnnxWeightsTest.cpp mirrors:
element i (flat, row-major) of an initializer of type T is value(i, T).
Needs onnx and numpy: run it with Debian's /usr/bin/python3 (python3-onnx,
python3-numpy); without them it fails.
"""

import os
import shutil
import struct
import sys

try:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
except ImportError as e:
    sys.exit("onnx_weights_fixtures.py: %s (Debian: apt-get install "
             "python3-onnx python3-numpy, and run this with /usr/bin/python3)"
             % e)


def value(i, t):
    """Element i of a fixture initializer of type t. Mirrored by
    expectedValue() in OnnxWeightsTest.cpp."""
    b = (i * 7) % 23 - 11
    return {
        "f32": b * 0.25 + i * 2.0**-12,
        "f64": b * 0.25 + i * 2.0**-40,
        "f16": b * 0.25,
        "bf16": b * 0.25,
        "i64": b * 1000000007000,
        "i32": b * 100000007,
    }[t]


NUMPY = {"f32": np.float32, "f64": np.float64, "f16": np.float16,
         "bf16": np.float32, "i64": np.int64, "i32": np.int32}
ONNX = {"f32": TensorProto.FLOAT, "f64": TensorProto.DOUBLE,
        "f16": TensorProto.FLOAT16, "bf16": TensorProto.BFLOAT16,
        "i64": TensorProto.INT64, "i32": TensorProto.INT32}


def values(t, shape):
    n = int(np.prod(shape, dtype=np.int64))
    return np.array([value(i, t) for i in range(n)],
                    dtype=NUMPY[t]).reshape(shape)


def typed(name, t, shape):
    """An initializer in the type's own field (float_data, int32_data...)."""
    return helper.make_tensor(name, ONNX[t], shape,
                              values(t, shape).flatten().tolist())


def raw(name, t, shape):
    """An initializer in raw_data."""
    a = values(t, shape)
    if t == "bf16":  # exact: the values have at most 8 significant bits
        data = (a.astype(np.float32).view(np.uint32) >> 16).astype(
            "<u2").tobytes()
    else:
        data = a.astype(a.dtype.newbyteorder("<")).tobytes()
    return helper.make_tensor(name, ONNX[t], shape, data, raw=True)


def model(initializers, sparse=()):
    graph = helper.make_graph([], "fixture", [], [], initializer=initializers,
                              sparse_initializer=list(sparse))
    return helper.make_model(graph, producer_name="onnx_weights_fixtures")


def external(name, t, shape, **entries):
    """A FLOAT-like initializer whose data_location is EXTERNAL, with the
    given external_data entries (no data is written)."""
    tensor = TensorProto(name=name, data_type=ONNX[t], dims=shape)
    tensor.data_location = TensorProto.EXTERNAL
    for key, v in entries.items():
        entry = tensor.external_data.add()
        entry.key, entry.value = key, v
    return tensor


# --- Hand-encoded protobuf ----------------------------------------------------

def varint(v):
    v &= (1 << 64) - 1
    out = b""
    while True:
        byte = v & 0x7F
        v >>= 7
        if v:
            out += bytes([byte | 0x80])
        else:
            return out + bytes([byte])


def tag(number, wire):
    return varint(number << 3 | wire)


def f_varint(number, v):
    return tag(number, 0) + varint(v)


def f_len(number, payload):
    return tag(number, 2) + varint(len(payload)) + payload


def f_fixed32(number, payload):
    return tag(number, 5) + payload


def f_fixed64(number, payload):
    return tag(number, 1) + payload


def crafted_model(*graphs):
    return f_varint(1, 8) + b"".join(f_len(7, g) for g in graphs)


def crafted_graph(*tensors):
    return b"".join(f_len(5, t) for t in tensors)


def crafted_tensors():
    """Valid TensorProtos in encodings the onnx package does not write."""
    f32 = values("f32", (2, 2)).flatten()
    f64 = values("f64", (3,))
    i64 = values("i64", (5,))
    unknown = (f_varint(99, 7) + f_fixed64(100, b"\0" * 8) +
               f_len(101, b"skip me") + f_fixed32(102, b"\0" * 4))
    return [
        # Unpacked dims and float_data, unknown fields in between.
        f_len(8, b"f32_unpacked") + f_varint(1, 2) + unknown + f_varint(1, 2) +
        f_varint(2, 1) + b"".join(f_fixed32(4, struct.pack("<f", v))
                                  for v in f32),
        f_varint(2, 11) + f_varint(1, 3) + f_len(8, b"f64_unpacked") +
        b"".join(f_fixed64(10, struct.pack("<d", v)) for v in f64),
        f_varint(2, 7) + f_len(1, varint(5)) + f_len(8, b"i64_unpacked") +
        b"".join(f_varint(7, int(v)) for v in i64),
        # float_data split into packed chunks and an unpacked value.
        f_len(8, b"f32_split") + f_len(1, varint(2) + varint(2)) +
        f_varint(2, 1) + f_len(4, struct.pack("<f", f32[0])) +
        f_fixed32(4, struct.pack("<f", f32[1])) +
        f_len(4, struct.pack("<2f", *f32[2:])),
        # dims split over a packed and an unpacked field; raw_data.
        f_len(1, varint(2)) + f_varint(1, 3) + f_varint(2, 1) +
        f_len(9, values("f32", (2, 3)).astype("<f4").tobytes()) +
        f_len(8, b"dims_split"),
        # The last name wins.
        f_len(8, b"first_name") + f_varint(2, 1) +
        f_len(9, struct.pack("<f", value(0, "f32"))) + f_len(8, b"last_name"),
    ]


def generate(root):
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)

    def path(name):
        return os.path.join(root, name)

    def write(name, data):
        os.makedirs(os.path.dirname(path(name)), exist_ok=True)
        with open(path(name), "wb") as f:
            f.write(data)

    def save(name, m):
        with open(path(name), "wb") as f:
            f.write(m.SerializeToString())

    # Every type, typed and raw; a scalar, an empty tensor, odd names, a
    # type the runtime does not read and a sparse initializer.
    tensors = []
    for t in ("f32", "f64", "f16", "bf16", "i64", "i32"):
        tensors.append(typed(t, t, (3, 4)))
        tensors.append(raw(t + "_raw", t, (2, 3)))
    tensors += [
        helper.make_tensor("scalar", TensorProto.FLOAT, [], [3.5]),
        helper.make_tensor("scalar_i64", TensorProto.INT64, [], [-7]),
        helper.make_tensor("empty", TensorProto.FLOAT, [0, 3], []),
        raw("layer.1/weight name", "f32", (5,)),
        helper.make_tensor("u8", TensorProto.UINT8, [2], [1, 2]),
    ]
    sparse = helper.make_sparse_tensor(
        helper.make_tensor("sparse_w", TensorProto.FLOAT, [2], [1.0, 2.0]),
        helper.make_tensor("sparse_w_indices", TensorProto.INT64, [2], [0, 3]),
        [2, 2])
    save("types.onnx", model(tensors, [sparse]))
    # The same data, stored externally (one file, as onnx writes it), and a
    # model whose external data lies in a subdirectory of its directory.
    # (onnx moves only raw_data to external files.)
    onnx.save_model(model([raw("f32", "f32", (3, 4)), raw("i64", "i64", (5,)),
                           raw("f16", "f16", (6,)), raw("scalar", "f32", ())]),
                    path("external.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="external.bin",
                    size_threshold=0)
    os.makedirs(path("sub/data"))
    onnx.save_model(model([raw("w", "f32", (2, 3))]), path("sub/model.onnx"),
                    save_as_external_data=True, location="data/w.bin",
                    size_threshold=0)

    # Hand-encoded: unusual but valid encodings; a model with two graph
    # fields (protobuf merges them).
    crafted = crafted_tensors()
    write("crafted.onnx", crafted_model(crafted_graph(*crafted)))
    write("two_graphs.onnx", crafted_model(crafted_graph(crafted[0]),
                                           crafted_graph(crafted[1])))

    # Valid protobuf, initializers the runtime must reject.
    bad = [
        # (make_tensor refuses these: TensorProto does not check.)
        TensorProto(name="raw_short", data_type=TensorProto.FLOAT, dims=[4],
                    raw_data=b"\0" * 12),
        TensorProto(name="float_count", data_type=TensorProto.FLOAT,
                    dims=[2, 3], float_data=[1.0] * 5),
        TensorProto(name="too_many", data_type=TensorProto.FLOAT, dims=[2],
                    float_data=[1.0] * 3),
        TensorProto(name="i64_count", data_type=TensorProto.INT64, dims=[4],
                    int64_data=[1, 2]),
        TensorProto(name="no_data", data_type=TensorProto.FLOAT, dims=[3]),
        TensorProto(name="no_type", dims=[1], float_data=[1.0]),
        TensorProto(name="negative_dim", data_type=TensorProto.FLOAT,
                    dims=[-1]),
        TensorProto(name="huge", data_type=TensorProto.FLOAT,
                    dims=[1 << 40, 1 << 40]),
        TensorProto(name="wrong_field", data_type=TensorProto.INT64, dims=[1],
                    float_data=[1.0]),
        TensorProto(name="raw_and_typed", data_type=TensorProto.FLOAT,
                    dims=[1], float_data=[1.0], raw_data=b"\0" * 4),
        TensorProto(name="complex", data_type=TensorProto.COMPLEX64, dims=[1],
                    float_data=[1.0, 2.0]),
    ]
    segmented = helper.make_tensor("segmented", TensorProto.FLOAT, [1], [1.0])
    segmented.segment.begin = 0
    segmented.segment.end = 1
    bad.append(segmented)
    not_external = helper.make_tensor("ext_not_external", TensorProto.FLOAT,
                                      [1], [1.0])
    entry = not_external.external_data.add()
    entry.key, entry.value = "location", "x.bin"
    bad.append(not_external)
    # (An enum value that python's protobuf refuses to set.)
    bad_location = (f_len(8, b"bad_location") + f_varint(2, 1) +
                    f_len(4, struct.pack("<f", 1.0)) + f_varint(14, 7))
    write("bad_tensors.onnx", crafted_model(crafted_graph(
        *[t.SerializeToString() for t in bad], bad_location)))

    # External data that is missing, short, or described wrongly.
    write("exact.bin", values("f32", (4,)).astype("<f4").tobytes())
    write("short.bin", b"\0" * 5)
    save("bad_external.onnx", model([
        external("missing_file", "f32", [4], location="nope.bin"),
        external("short_file", "f32", [4], location="short.bin",
                 length="16"),
        external("offset_past_end", "f32", [4], location="exact.bin",
                 offset="1000", length="16"),
        external("bad_offset", "f32", [4], location="exact.bin",
                 offset="12x"),
        external("length_mismatch", "f32", [4], location="exact.bin",
                 length="7"),
        external("absolute", "f32", [4], location="/etc/passwd"),
        external("no_location", "f32", [4], offset="0"),
        external("no_length_exact", "f32", [4], location="exact.bin"),
        external("no_length_longer", "f32", [2], location="exact.bin"),
        external("with_offset", "f32", [2], location="exact.bin",
                 offset="8", length="8"),
        external("directory", "f32", [4], location="sub"),
    ]))

    # Malformed files.
    good = open(path("types.onnx"), "rb").read()
    write("truncated.onnx", good[: len(good) // 2])
    write("empty.onnx", b"")
    write("text.onnx", b"this is not an ONNX model\n")
    write("no_graph.onnx", f_varint(1, 8) + f_len(2, b"producer"))
    write("graph_varint.onnx", f_varint(1, 8) + f_varint(7, 1))
    write("bad_length.onnx", f_varint(1, 8) + tag(7, 2) + varint(1000) +
          b"\0" * 10)
    write("truncated_varint.onnx", f_varint(1, 8) + b"\x80")
    write("overlong_varint.onnx", tag(1, 0) + b"\xff" * 10 + b"\x01")
    write("group.onnx", f_varint(1, 8) + tag(9, 3) + tag(9, 4))
    write("field_zero.onnx", b"\x00\x01")
    write("bad_wire_type.onnx", tag(3, 7) + b"\0")
    # Inside initializers: named (the name comes first) and unnamed.
    write("tensor_wrong_wire.onnx", crafted_model(crafted_graph(
        f_len(8, b"w") + f_fixed32(1, b"\0" * 4))))
    write("tensor_unnamed.onnx", crafted_model(crafted_graph(
        f_varint(8, 5) + f_varint(2, 1))))
    write("tensor_bad_length.onnx", crafted_model(crafted_graph(
        f_varint(2, 1) + tag(9, 2) + varint(100) + b"\0" * 4 +
        f_len(8, b"w"))))
    write("tensor_bad_packed.onnx", crafted_model(crafted_graph(
        f_len(8, b"w") + f_len(1, b"\x80"))))
    # A packed float_data of 6 bytes (protobuf itself refuses the file).
    write("packed_odd.onnx", crafted_model(crafted_graph(
        f_len(8, b"w") + f_varint(1, 1) + f_varint(2, 1) +
        f_len(4, b"\0" * 6))))
    write("duplicate.onnx", crafted_model(crafted_graph(
        crafted[0], crafted[0])))

    # The fake compiled model of model_main_test.py (fake_model.c): a param
    # fc.weight f32[4] and a buffer shift f32 scalar; variants for --model.
    def fake(name, weight, shift=1.5):
        inits = [helper.make_tensor("fc.weight", ONNX[weight[0]], weight[1],
                                    weight[2])]
        if shift is not None:
            inits.append(helper.make_tensor("shift", TensorProto.FLOAT, [],
                                            [shift]))
        save(name, model(inits))
    fake("fake_model.onnx", ("f32", [4], [0.5, -1.0, 2.0, 0.25]))
    fake("fake_alt.onnx", ("f32", [4], [1.0, 2.0, 3.0, 4.0]), shift=-2.0)
    fake("fake_wrong_shape.onnx", ("f32", [2, 2], [1.0, 2.0, 3.0, 4.0]))
    fake("fake_wrong_dtype.onnx", ("f64", [4], [1.0, 2.0, 3.0, 4.0]))
    fake("fake_missing.onnx", ("f32", [4], [1.0, 2.0, 3.0, 4.0]), shift=None)
    os.makedirs(path("fake_ext"))
    onnx.save_model(model([
        numpy_helper.from_array(np.array([1, 2, 3, 4], np.float32),
                                "fc.weight"),
        numpy_helper.from_array(np.array(-2, np.float32), "shift")]),
        path("fake_ext/model.onnx"), save_as_external_data=True,
        location="weights.bin", size_threshold=0)
    print("wrote the ONNX fixtures to %s" % root)


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "generate":
        sys.exit("usage: onnx_weights_fixtures.py generate DIR")
    generate(sys.argv[2])
