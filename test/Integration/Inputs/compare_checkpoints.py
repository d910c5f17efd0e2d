"""Compares two trainer checkpoints (checkpoint.npz) member by member.

usage: compare_checkpoints.py A.npz B.npz

Prints "identical True|False N" (N: the members of A) and exits non-zero
unless both hold the same members with bit-identical values.
"""
import sys

import numpy as np

a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
same = sorted(a.files) == sorted(b.files) and all(
    a[k].dtype == b[k].dtype and np.array_equal(a[k], b[k]) for k in a.files)
print("identical", same, len(a.files))
sys.exit(not same)
