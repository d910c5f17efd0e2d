"""Compares two trainer checkpoints (checkpoint.npz) member by member.

usage: compare_checkpoints.py A.npz B.npz [RTOL ATOL]

Without tolerances: prints "identical True|False N" (N: the members of A)
and exits non-zero unless both hold the same members with bit-identical
values. With RTOL and ATOL: prints "close True|False N max-diff D" and
exits non-zero unless every member is within them (numpy.allclose).
"""
import sys

import numpy as np

a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
same_members = sorted(a.files) == sorted(b.files)
if len(sys.argv) == 5:
    rtol, atol = float(sys.argv[3]), float(sys.argv[4])
    close = same_members and all(
        a[k].dtype == b[k].dtype and np.allclose(a[k], b[k], rtol=rtol,
                                                 atol=atol) for k in a.files)
    diff = max(float(np.abs(a[k].astype(np.float64) - b[k]).max(initial=0))
               for k in a.files) if same_members else float("inf")
    print("close", close, len(a.files), "max-diff %.2e" % diff)
    sys.exit(not close)
same = same_members and all(
    a[k].dtype == b[k].dtype and np.array_equal(a[k], b[k]) for k in a.files)
print("identical", same, len(a.files))
sys.exit(not same)
