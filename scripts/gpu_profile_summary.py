"""Sums an Nsight Compute CSV of one training step's kernels by kind.

usage: gpu_profile_summary.py NAME NCU.csv

NCU.csv: `ncu --metrics gpu__time_duration.sum --csv` (scripts/
gpu-profile.sh). Prints the step's GPU time, the time of each kind of
kernel, and the 15 slowest kernels with their launch shapes.
"""
import collections
import csv
import sys

# Kinds of kernel by their names, first match wins.
KINDS = [
    ("generated", ("dtrain_model_run_kernel",)),
    ("layout transposes", ("nchwToNhwc", "nhwcToNchw")),
    ("batch norm", ("bn_fw", "bn_bw", "batch_norm", "BatchNorm")),
    ("pooling", ("pool",)),
    ("convolution and matmul", ("xmma", "cutlass", "gemm", "convolve",
                                "nvjet", "splitK", "Reduce")),
]
UNITS = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0,
         "ms": 1e3, "msecond": 1e3}


def kind_of(name):
    for kind, keys in KINDS:
        if any(key in name for key in keys):
            return kind
    return "other"


def main(argv):
    if len(argv) != 3:
        sys.exit(__doc__)
    with open(argv[2]) as f:
        rows = list(csv.DictReader(line for line in f
                                   if line.startswith('"')))
    kernels = []
    for row in rows:
        unit = row["Metric Unit"]
        if unit not in UNITS:
            sys.exit("%s: unknown unit %r" % (argv[2], unit))
        us = float(row["Metric Value"].replace(",", "")) * UNITS[unit]
        kernels.append((us, row["Kernel Name"], row.get("Grid Size", "?"),
                        row.get("Block Size", "?")))
    if not kernels:
        sys.exit("%s: no kernels" % argv[2])
    total = sum(k[0] for k in kernels)
    print("== %s: %d kernels, %.3f ms of GPU time" % (argv[1], len(kernels),
                                                      total / 1e3))
    by_kind = collections.defaultdict(lambda: [0, 0.0])
    for us, name, _, _ in kernels:
        by_kind[kind_of(name)][0] += 1
        by_kind[kind_of(name)][1] += us
    for kind, (count, us) in sorted(by_kind.items(),
                                    key=lambda k: (-k[1][1], k[0])):
        print("  %-24s %4d kernels %9.1f us %5.1f%%" % (
            kind, count, us, 100 * us / total))
    print("  slowest:")
    for us, name, grid, block in sorted(kernels, reverse=True)[:15]:
        print("  %9.1f us  grid %-16s block %-12s %s" % (
            us, grid, block, name.split("(")[0][:70]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
