"""How steady this machine's cores are: a fixed CPU loop, one pinned process
per core, timed in chunks for a few seconds (about 10 ms each on a quiet
core of the 2-core development machine). A quiet core times every chunk
alike; a shared one (a virtual machine whose host runs other guests on the
same physical cores) runs some chunks slower, and stalls others for whole
time slices. The benchmarks print it before and after each network's runs,
since it bounds how far apart two measured step times must be to differ.

usage: host_noise.py [--seconds S]
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

# The loop: small float32 products, one BLAS thread, no memory traffic
# beyond the caches, so only the core's own speed moves its time.
SIZE, PRODUCTS = 96, 40


def time_chunks(core, seconds):
    """Chunk times (ms) of the loop on CORE for SECONDS."""
    os.sched_setaffinity(0, {core})
    a = np.random.default_rng(0).random((SIZE, SIZE), dtype=np.float32)
    times = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end or len(times) < 2:
        start = time.perf_counter()
        for _ in range(PRODUCTS):
            a.dot(a)
        times.append(1e3 * (time.perf_counter() - start))
    return times[1:]  # the first warms the caches


# The lowest median chunk time (ms) of any core in any measure() of this
# process: the speed this host reaches when quiet, as far as seen.
quietest_median_ms = float("inf")


def measure(seconds=3.0):
    """{core: its chunk times}, the loops run on all cores at once (as the
    benchmarks' ranks do)."""
    global quietest_median_ms
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    cores = sorted(os.sched_getaffinity(0))
    workers = [subprocess.Popen(
        [sys.executable, os.path.abspath(__file__), "--core", str(core),
         "--seconds", str(seconds)], stdout=subprocess.PIPE, text=True,
        env=env) for core in cores]
    chunks = {}
    for core, worker in zip(cores, workers):
        out, _ = worker.communicate()
        if worker.returncode != 0:
            sys.exit("host_noise.py: the loop on a core failed (%d)"
                     % worker.returncode)
        chunks[core] = json.loads(out)
    quietest_median_ms = min([quietest_median_ms] +
                             [np.median(times) for times in chunks.values()])
    return chunks


def wait_until_quiet(tolerance=1.25, patience=180.0, seconds=2.0):
    """Measures every SECONDS until each core's median chunk lies within
    TOLERANCE of the quietest median seen (quietest_median_ms), for at most
    PATIENCE seconds: a profile taken while the host runs at half speed
    would mislead every prediction made from it. Returns a line saying how
    long it waited, and whether the host got quiet."""
    start = time.monotonic()
    while True:
        medians = [np.median(times) for _, times in
                   sorted(measure(seconds).items())]
        waited = time.monotonic() - start
        quiet = max(medians) <= tolerance * quietest_median_ms
        if quiet or waited >= patience:
            return ("%s after %.0f s (cores' median chunks %s ms, the "
                    "quietest seen %.1f)" % (
                        "quiet" if quiet else "not quiet", waited,
                        ", ".join("%.1f" % m for m in medians),
                        quietest_median_ms))


def summary(chunks):
    """One line: per core, the chunks' median, 90th percentile and longest,
    in ms (the same loop everywhere, so they compare across runs; ratios to
    a core's own fastest chunks would hide a core slow throughout)."""
    parts = ["core %d: median %.1f, 90th percentile %.1f, longest %.0f" % (
        core, np.median(times), np.percentile(times, 90), max(times))
        for core, times in sorted(chunks.items())]
    return ("host noise (a fixed loop timed in %d chunks over every core at "
            "once, ms): %s" % (sum(len(t) for t in chunks.values()),
                               "; ".join(parts)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--core", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.seconds <= 0:
        parser.error("--seconds must be positive")
    if args.core is not None:
        json.dump(time_chunks(args.core, args.seconds), sys.stdout)
        return 0
    print(summary(measure(args.seconds)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
