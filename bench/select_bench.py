"""Top-k selection benchmark: dtrain_rt_select_f32 (exact, Gaussian-k, DGC,
random-k) against torch.topk and numpy's introselect (np.argpartition, the
algorithm of std::nth_element), on the same data in one process.

usage: select_bench.py [--sizes 1M 25M 100M] [--density 0.001]
                       [--threads 2] [--repeats 5] BUILD_DIR

The runtime is called through ctypes from BUILD_DIR/lib/libdtrain_runtime.so
with OMP_NUM_THREADS=--threads, and torch runs on as many threads. Data:
Student-t (3 degrees of freedom) values, heavier-tailed like real
gradients. Each time is the median of --repeats calls; "vs topk" is
torch.topk's time over the method's (above 1: faster than torch.topk).
Every method's selection is also checked: count, and the fraction of
exact top-k it contains.
"""
import argparse
import ctypes
import os
import statistics
import sys
import time

import numpy as np


def size_arg(text):
    scale = {"K": 1 << 10, "M": 1 << 20}.get(text[-1].upper(), 1)
    return int(float(text.rstrip("KkMm")) * scale)


METHODS = [("exact", 0), ("gaussian", 1), ("dgc", 2), ("random", 3)]


def median_time(fn, repeats):
    times = []
    for _ in range(repeats):
        begin = time.perf_counter()
        fn()
        times.append(time.perf_counter() - begin)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("build")
    parser.add_argument("--sizes", nargs="+", type=size_arg,
                        default=[1 << 20, 25 << 20, 100 << 20])
    parser.add_argument("--density", type=float, default=0.001)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    import torch
    torch.set_num_threads(args.threads)
    library = ctypes.CDLL(os.path.join(os.path.abspath(args.build), "lib",
                                       "libdtrain_runtime.so"))
    select = library.dtrain_rt_select_f32
    select.restype = ctypes.c_int64
    select.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64,
                       ctypes.c_int32, ctypes.c_uint64, ctypes.c_void_p,
                       ctypes.c_void_p, ctypes.c_int64]

    print("## Top-k selection, density %g, %d threads, median of %d"
          % (args.density, args.threads, args.repeats))
    print("| elements | method | ms | vs torch.topk | selected | "
          "of exact top-k |")
    print("|---:|---|---:|---:|---:|---:|")
    rng = np.random.default_rng(0)
    for n in args.sizes:
        x = (0.01 * rng.standard_t(3, n)).astype(np.float32)
        k = max(1, int(args.density * n))
        capacity = 2 * k
        indices = np.empty(capacity, np.int32)
        values = np.empty(capacity, np.float32)
        tensor = torch.from_numpy(x)
        topk = median_time(lambda: torch.topk(tensor.abs(), k, sorted=False),
                           args.repeats)
        exact = np.sort(torch.topk(tensor.abs(), k).indices.numpy())

        def row(name, seconds, selected):
            found = np.intersect1d(selected, exact).size / k
            print("| %d | %s | %.2f | %.2f | %d | %.3f |" % (
                n, name, 1e3 * seconds, topk / seconds, selected.size,
                found))
            sys.stdout.flush()

        row("torch.topk", topk, exact)
        introselect = median_time(
            lambda: np.argpartition(np.abs(x), n - k)[n - k:], args.repeats)
        row("np.argpartition", introselect,
            np.argpartition(np.abs(x), n - k)[n - k:])
        for name, method in METHODS:
            call = lambda: select(x.ctypes.data, n, k, method, 1,
                                  indices.ctypes.data, values.ctypes.data,
                                  capacity)
            seconds = median_time(call, args.repeats)
            count = call()
            if not np.array_equal(values[:count], x[indices[:count]]):
                sys.exit("%s: values do not match the indices" % name)
            row("dtrain " + name, seconds, indices[:count].copy())
    return 0


if __name__ == "__main__":
    sys.exit(main())
