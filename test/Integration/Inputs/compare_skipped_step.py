"""Compares the checkpoints before and after a step that was skipped.

usage: compare_skipped_step.py BEFORE.npz AFTER.npz

Prints 'unchanged N' (the arrays equal bit for bit: parameters, optimizer
state and every rank's residuals), then 'changed NAME OLD NEW' for each
other array, in name order.
"""
import sys

import numpy as np


def main():
    before, after = np.load(sys.argv[1]), np.load(sys.argv[2])
    if sorted(before.files) != sorted(after.files):
        sys.exit("different arrays: %s and %s" % (sorted(before.files),
                                                  sorted(after.files)))
    changed = [k for k in sorted(before.files)
               if not np.array_equal(before[k], after[k])]
    print("unchanged %d" % (len(before.files) - len(changed)))
    for k in changed:
        old, new = before[k], after[k]
        if old.size == 1:
            print("changed %s %s %s" % (k, old.item(), new.item()))
        else:
            print("changed %s (%d elements)" % (k, old.size))
    return 0


if __name__ == "__main__":
    sys.exit(main())
