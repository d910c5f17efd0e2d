"""Compares two trainer checkpoints (checkpoint.npz) member by member.

usage: compare_checkpoints.py A.npz B.npz [RTOL ATOL]
       compare_checkpoints.py --as-close-as REF.npz A.npz B.npz FACTOR

Without tolerances: prints "identical True|False N" (N: the members of A)
and exits non-zero unless both hold the same members with bit-identical
values. With RTOL and ATOL: prints "close True|False N max-diff D" and
exits non-zero unless every member is within them (numpy.allclose).

With --as-close-as: whether run A is no further from run REF than run B
is, FACTOR times over, for two runs that differ from REF by the rounding
of a lower precision (A and B: bf16 on two devices, REF: f32). A run's
distance is the root mean square over the members of their relative L2
distances |X - REF| / |REF| (a small member's alone is noisy); A's must be
at most FACTOR times B's, plus 1e-3. Prints "as-close True|False N
distance DA against DB", and each member's distances when it fails;
exits non-zero then.
"""
import sys

import numpy as np


def relative_l2(x, ref):
    x, ref = x.astype(np.float64), ref.astype(np.float64)
    return np.linalg.norm(x - ref) / max(np.linalg.norm(ref), 1e-30)


def as_close_as(ref_path, a_path, b_path, factor):
    ref, a, b = np.load(ref_path), np.load(a_path), np.load(b_path)
    if not sorted(ref.files) == sorted(a.files) == sorted(b.files):
        print("as-close False: the checkpoints hold different members")
        return 1
    da = [relative_l2(a[k], ref[k]) for k in ref.files]
    db = [relative_l2(b[k], ref[k]) for k in ref.files]
    distance_a = float(np.sqrt(np.mean(np.square(da))))
    distance_b = float(np.sqrt(np.mean(np.square(db))))
    close = distance_a <= factor * distance_b + 1e-3
    print("as-close", close, len(ref.files),
          "distance %.2e against %.2e" % (distance_a, distance_b))
    if not close:
        for k, x, y in zip(ref.files, da, db):
            print("  %s: relative-l2 %.2e against %.2e" % (k, x, y),
                  file=sys.stderr)
    return 0 if close else 1


if len(sys.argv) == 6 and sys.argv[1] == "--as-close-as":
    sys.exit(as_close_as(sys.argv[2], sys.argv[3], sys.argv[4],
                         float(sys.argv[5])))
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
    if not close and same_members:
        # Where they differ: each member outside the tolerances, with its
        # largest difference, its largest magnitude in B, and the relative
        # L2 distance.
        for k in a.files:
            x, y = a[k].astype(np.float64), b[k].astype(np.float64)
            if a[k].dtype != b[k].dtype or not np.allclose(x, y, rtol=rtol,
                                                           atol=atol):
                print("  %s: max-diff %.2e max-abs %.2e relative-l2 %.2e" % (
                    k, np.abs(x - y).max(initial=0), np.abs(y).max(initial=0),
                    relative_l2(x, y)), file=sys.stderr)
    sys.exit(not close)
same = same_members and all(
    a[k].dtype == b[k].dtype and np.array_equal(a[k], b[k]) for k in a.files)
print("identical", same, len(a.files))
sys.exit(not same)
