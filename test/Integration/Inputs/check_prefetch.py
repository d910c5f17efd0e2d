"""Checks the prefetch calls that prefetch_main.c printed (LOG) for a
trainer run of STEPS steps of BATCH samples on DATA (.npz with x and y, not
shuffled, one rank): after each batch is gathered, its x and then its y,
each with its size and the sum of its bytes, and nothing else.

usage: check_prefetch.py DATA LOG BATCH STEPS
"""
import sys

import numpy as np


def main():
    data, log, batch, steps = sys.argv[1], sys.argv[2], int(sys.argv[3]), \
        int(sys.argv[4])
    arrays = np.load(data)
    expected = []
    for step in range(steps):
        for key in ("x", "y"):
            part = np.ascontiguousarray(
                arrays[key][step * batch:(step + 1) * batch])
            raw = np.frombuffer(part.tobytes(), np.uint8)
            expected.append("prefetch %d %d" % (raw.size, int(raw.sum())))
    got = [line for line in open(log).read().splitlines()
           if line.startswith("prefetch ")]
    if got != expected:
        print("MISMATCH:\n  got      %s\n  expected %s" % (got, expected))
        return 1
    print("prefetch calls: %d, each batch's x and y as gathered" % len(got))
    return 0


if __name__ == "__main__":
    sys.exit(main())
