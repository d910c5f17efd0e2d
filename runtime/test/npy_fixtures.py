"""Fixtures for the runtime's .npy/.npz tests (NpyTest.cpp), made with numpy.

  npy_fixtures.py generate DIR   writes DIR/in/* (removing DIR first)
  npy_fixtures.py check DIR      checks with numpy what NpyTest wrote to
                                 DIR/out/*

Array values come from value(), which NpyTest.cpp mirrors: element i (flat,
row-major) of an array of numpy type T is value(i, T). Needs numpy: run it
with Debian's /usr/bin/python3 (python3-numpy); without numpy it fails.
"""

import os
import shutil
import struct
import sys
import zipfile
import zlib

try:
    import numpy as np
except ImportError:
    sys.exit("npy_fixtures.py: numpy is missing (Debian: apt-get install "
             "python3-numpy, and run this with /usr/bin/python3)")


def value(i, t):
    """Element i of a fixture array of numpy type string t ('f4', 'u1'...).
    Mirrored by expectedValue() in NpyTest.cpp."""
    b = (i * 7) % 23 - 11
    return {
        "f2": b * 0.25,
        "f4": b * 0.25 + i * 2.0**-12,
        "f8": b * 0.25 + i * 2.0**-40,
        "i8": b * 1000000007000,
        "i4": b * 100000007,
        "i2": b * 1000,
        "i1": b * 10,
        "u1": (i * 37) % 256,
        "u2": (i * 997) % 65536,
        "u4": (i * 2654435761) % 2**32,
        "b1": int(i % 3 == 0),
    }[t]


def make(t, shape, order="<"):
    n = int(np.prod(shape, dtype=np.int64))
    dt = np.dtype(order + t if t[0] != "b" else "?")
    return np.array([value(i, t) for i in range(n)]).astype(dt).reshape(shape)


TYPES = ["f4", "f8", "f2", "i8", "i4", "i2", "i1", "u1", "u2", "u4", "b1"]


def npy_bytes(array, version=None):
    import io
    f = io.BytesIO()
    np.lib.format.write_array(f, array, version=version)
    return f.getvalue()


def raw_npy(header, data=b"", version=1):
    """A .npy file with HEADER (a str, used as is) and DATA."""
    h = header.encode("latin1")
    if version == 1:
        return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h + data
    return b"\x93NUMPY" + bytes([version, 0]) + struct.pack("<I", len(h)) + h + data


def zip64_npz(members):
    """A stored .npz whose central directory uses ZIP64 extra fields for
    every size and offset, with ZIP64 end records (as numpy/zipfile write
    them for members over 2 GiB), without writing gigabytes."""
    out, central = b"", b""
    for name, payload in members:
        name = name.encode()
        crc = zlib.crc32(payload)
        offset = len(out)
        local_extra = struct.pack("<HHQQ", 1, 16, len(payload), len(payload))
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 45, 0, 0, 0, 0x21, crc,
                           0xFFFFFFFF, 0xFFFFFFFF, len(name),
                           len(local_extra)) + name + local_extra + payload
        extra = struct.pack("<HHQQQ", 1, 24, len(payload), len(payload), offset)
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 45, 45, 0, 0,
                               0, 0x21, crc, 0xFFFFFFFF, 0xFFFFFFFF, len(name),
                               len(extra), 0, 0, 0, 0, 0xFFFFFFFF) + name + extra
    cd_offset = len(out)
    out += central
    record_offset = len(out)
    out += struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 45, 45, 0, 0,
                       len(members), len(members), len(central), cd_offset)
    out += struct.pack("<IIQI", 0x07064B50, 0, record_offset, 1)
    out += struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 0xFFFF, 0xFFFF,
                       0xFFFFFFFF, 0xFFFFFFFF, 0)
    return out


def member_data_offset(path, name):
    with zipfile.ZipFile(path) as z:
        info = z.getinfo(name)
    with open(path, "rb") as f:
        f.seek(info.header_offset + 26)
        n, e = struct.unpack("<HH", f.read(4))
    return info.header_offset + 30 + n + e, info


def generate(root):
    shutil.rmtree(root, ignore_errors=True)
    d = os.path.join(root, "in")
    os.makedirs(d)
    os.makedirs(os.path.join(root, "out"))

    def path(name):
        return os.path.join(d, name)

    def write(name, data):
        with open(path(name), "wb") as f:
            f.write(data)

    # Every accepted type, little- and big-endian, C and Fortran order.
    for t in TYPES:
        np.save(path(t + ".npy"), make(t, (3, 5)))
        if t not in ("b1", "i1", "u1"):
            np.save(path("be_" + t + ".npy"), make(t, (4, 3), ">"))
    np.save(path("fortran_f4.npy"), np.asfortranarray(make("f4", (3, 4))))
    np.save(path("fortran_i8.npy"), np.asfortranarray(make("i8", (2, 3, 4))))
    np.save(path("fortran_be_f8.npy"),
            np.asfortranarray(make("f8", (2, 5), ">")))
    np.save(path("fortran_u1.npy"), np.asfortranarray(make("u1", (5, 7))))
    np.save(path("fortran_1d.npy"), np.asfortranarray(make("f4", (6,))))
    # Shapes: scalars, empty arrays, rank 8 (the limit), large enough for
    # several conversion chunks.
    np.save(path("scalar_f4.npy"), np.float32(3.5))
    np.save(path("scalar_i8.npy"), np.int64(-7))
    np.save(path("empty_f4.npy"), make("f4", (0,)))
    np.save(path("empty_i8.npy"), make("i8", (3, 0, 2)))
    np.save(path("rank8.npy"), make("f4", (1, 2, 1, 2, 1, 1, 2, 1)))
    np.save(path("large_f4.npy"), make("f4", (100003,)))
    np.save(path("large_u1.npy"), make("u1", (200001,)))
    np.save(path("specials.npy"), np.array(
        [np.nan, np.inf, -np.inf, -0.0, 1e-45, np.finfo(np.float32).max],
        dtype="<f4"))
    # Format versions.
    write("v2.npy", npy_bytes(make("f4", (3, 5)), (2, 0)))
    write("v3.npy", npy_bytes(make("i8", (3, 5)), (3, 0)))
    # Bool bytes other than 0 and 1, which numpy never writes but reads as
    # True.
    write("b1_bytes.npy", raw_npy(
        "{'descr': '|b1', 'fortran_order': False, 'shape': (4,), }\n",
        bytes([0, 1, 2, 255])))

    # Archives.
    np.savez(path("savez.npz"), x=make("f4", (4, 3)), y=make("i8", (4,)))
    np.savez_compressed(path("compressed.npz"), x=make("f8", (5, 2)),
                        y=make("i4", (5,)), big=make("u1", (300007,)),
                        empty=make("f4", (0, 3)), scalar=np.float32(3.5))
    np.savez_compressed(path("small_compressed.npz"), x=make("f8", (5, 2)),
                        y=make("i4", (5,)))
    write("zip64.npz", zip64_npz([("x.npy", npy_bytes(make("f4", (4, 3)))),
                                  ("y.npy", npy_bytes(make("i8", (4,))))]))
    with np.load(path("zip64.npz")) as z:  # numpy agrees it is valid
        assert (z["x"] == make("f4", (4, 3))).all() and z["y"].shape == (4,)
    with zipfile.ZipFile(path("mixed.npz"), "w") as z:
        z.writestr("notes.txt", "not an array")
        z.writestr("x.npy", npy_bytes(make("i4", (2, 2))))
    np.savez(path("empty.npz"))

    # Damaged .npy files.
    good = npy_bytes(make("f4", (3, 5)))
    write("bad_magic.npy", b"\x93NUMPZ" + good[6:])
    write("truncated_data.npy", good[:-3])
    write("truncated_header.npy", good[:30])
    write("trailing_data.npy", good + b"xx")
    write("zero_bytes.npy", b"")
    write("bad_version.npy", good[:6] + b"\x04\x00" + good[8:])
    write("huge_header_length.npy",
          b"\x93NUMPY\x02\x00" + struct.pack("<I", 0x7FFFFFFF) + b"{}")
    dict_ = "{'descr': %s, 'fortran_order': False, 'shape': %s, }"
    headers = {
        "unterminated": "{'descr': '<f4', 'fortran_order': False, 'shape': (2,",
        "missing_key": "{'descr': '<f4', 'shape': (2,), }",
        "extra_key": "{'descr': '<f4', 'fortran_order': False, 'shape': (), 'x': 1}",
        "duplicate_key": "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': ()}",
        "negative_dim": dict_ % ("'<f4'", "(-1,)"),
        "shape_overflow": dict_ % ("'<f4'", "(4294967296, 4294967296, 4294967296)"),
        "dim_overflow": dict_ % ("'<f4'", "(99999999999999999999,)"),
        "huge_shape": dict_ % ("'<f4'", "(1000000000000,)"),
        "rank9": dict_ % ("'<f4'", "(1, 1, 1, 1, 1, 1, 1, 1, 1)"),
        "complex": dict_ % ("'<c8'", "()"),
        "u8": dict_ % ("'<u8'", "()"),
        "object": dict_ % ("'|O'", "()"),
        "structured": dict_ % ("[('a', '<f4')]", "()"),
        "void2": dict_ % ("'|V2'", "()"),
        "bad_order": dict_ % ("'|f4'", "()"),
        "bad_bool": "{'descr': '<f4', 'fortran_order': 'no', 'shape': ()}",
        "binary": "{\x00\xff\x93NUMPY'descr'\n",
        "after_brace": dict_ % ("'<f4'", "()") + " x\n",
        "escape": "{'descr': '<f\\x34', 'fortran_order': False, 'shape': ()}",
    }
    for name, header in headers.items():
        write("hdr_" + name + ".npy", raw_npy(header + "\n", b"\0" * 4))
    # numpy itself writes rank 9 (rejected here), and a header written as
    # version 2 with double quotes and no trailing comma is fine.
    np.save(path("rank9_numpy.npy"), np.zeros((1,) * 9, dtype="<f4"))
    write("hdr_double_quotes.npy", raw_npy(
        '{"descr": "<f4", "shape": (2,), "fortran_order": False}\n',
        np.array([1.5, -2], dtype="<f4").tobytes(), version=2))

    # Damaged archives.
    np.savez(path("bad_crc.npz"), x=make("f4", (4, 3)), y=make("i8", (4,)))
    offset, info = member_data_offset(path("bad_crc.npz"), "y.npy")
    with open(path("bad_crc.npz"), "r+b") as f:
        f.seek(offset + info.file_size - 1)
        last = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([last[0] ^ 0x40]))
    with open(path("savez.npz"), "rb") as f:
        whole = f.read()
    write("truncated.npz", whole[: len(whole) // 2])
    write("not_zip.npz", b"this is not a zip archive at all, just text\n")
    np.savez(path("bad_method.npz"), x=make("f4", (4, 3)))
    data = bytearray(open(path("bad_method.npz"), "rb").read())
    for sig, at in ((b"PK\x03\x04", 8), (b"PK\x01\x02", 10)):
        i = data.find(sig)
        data[i + at] = 12  # bzip2
    write("bad_method.npz", bytes(data))
    np.savez_compressed(path("bad_deflate.npz"), x=make("f8", (50, 20)))
    offset, info = member_data_offset(path("bad_deflate.npz"), "x.npy")
    data = bytearray(open(path("bad_deflate.npz"), "rb").read())
    for k in range(8):
        data[offset + info.compress_size // 2 + k] ^= 0xA5
    write("bad_deflate.npz", bytes(data))
    # A member whose data lies beyond the file (sizes lie).
    data = bytearray(whole)
    i = data.find(b"PK\x01\x02")
    struct.pack_into("<II", data, i + 20, 0x7FFFFFF0, 0x7FFFFFF0)
    write("bad_sizes.npz", bytes(data))


def check(root):
    d = os.path.join(root, "out")

    def load(name):
        return np.load(os.path.join(d, name), allow_pickle=False)

    def expect(array, t, shape, order="<"):
        want = make(t, shape, order)
        assert array.dtype == want.dtype, (array.dtype, want.dtype)
        assert array.shape == want.shape, (array.shape, want.shape)
        assert (array == want).all(), (array, want)

    checked = 0
    for t in ("f4", "f8", "f2", "i8", "i4", "b1"):
        expect(load("out_%s.npy" % t), t, (3, 5))
        checked += 1
    # bf16 is written as f4: the values of make("f2") are exact in bf16.
    bf16 = load("out_bf16.npy")
    assert bf16.dtype == np.float32 and bf16.shape == (2, 6)
    assert (bf16 == make("f2", (2, 6)).astype(np.float32)).all()
    scalar = load("out_scalar.npy")
    assert scalar.shape == () and scalar.dtype == np.int64 and scalar == -7
    expect(load("out_empty.npy"), "f4", (3, 0))
    expect(load("out_rank8.npy"), "i4", (1, 2, 1, 2, 1, 1, 2, 1))
    checked += 4
    for name in ("out.npz", "out_zip64.npz"):
        p = os.path.join(d, name)
        with zipfile.ZipFile(p) as z:
            assert z.testzip() is None  # every CRC-32 matches
        with np.load(p, allow_pickle=False) as z:
            assert z.files == ["x", "y", "scalar"], z.files
            expect(z["x"], "f4", (4, 3))
            expect(z["y"], "i8", (4,))
            assert z["scalar"].shape == () and z["scalar"] == 3.5
        checked += 1
    with np.load(os.path.join(d, "out_empty.npz")) as z:
        assert z.files == []
    print("numpy read %d files written by dtrain correctly" % (checked + 1))


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("generate", "check"):
        sys.exit("usage: npy_fixtures.py generate|check DIR")
    (generate if sys.argv[1] == "generate" else check)(sys.argv[2])
