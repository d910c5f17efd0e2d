"""Measures the f32 math functions of compiled models against float64.

usage: check_math_accuracy.py COMPILE WORKDIR

Compiles a model of nn.erf, nn.exp, nn.tanh and nn.sigmoid (through exp)
of one f32 vector twice with `COMPILE --mode=infer`: as is (the CPU
pipeline's --dtrain-approximate-math polynomials) and with --exact-math
(libm's erff, expf, tanhf), runs both on 2^20 arguments (uniform in
[-100, 100] and [-6, 6], magnitudes log-uniform over all of f32's, random
bit patterns) and the special values (+-0, +-inf, NaN, the smallest
subnormal, the largest float, the ends of exp's range), and compares each
with the function computed in float64 (numpy; math.erf for erf): in units
in the last place of the f32 result where it is a normal float, and
within 2^-126 where it is below (exp flushes subnormal results to 0).
Prints one line per function and build,

  erf approximate: max_ulp=... at x=... OK

and fails when an error passes the function's bound (BOUND_ULP), a
special value's result differs from libm's in kind (NaN, +inf, -inf or
finite), or the approximate build computes every argument exactly as libm
does (the approximation would not be in effect).
"""
import math
import os
import subprocess
import sys

import numpy as np

N = 1 << 20
FUNCTIONS = ["erf", "exp", "tanh", "sigmoid"]
# Largest error allowed, in f32 units in the last place of the result.
BOUND_ULP = {"erf": 5.0, "exp": 6.0, "tanh": 5.0, "sigmoid": 3.0}
SMALLEST_NORMAL = 2.0 ** -126
SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45,
                    3.4028235e38, -3.4028235e38, 88.72, 88.73, -87.33,
                    -87.34, -103.9, -104.0, 1.0, -1.0, 0.5, 9.0, -9.0],
                   dtype=np.float32)


def arguments():
    rng = np.random.default_rng(0)
    quarter = N // 4
    wide = rng.uniform(-100, 100, quarter)
    narrow = rng.uniform(-6, 6, quarter)
    magnitude = np.exp2(rng.uniform(-149, 128, quarter)) * rng.choice(
        [-1.0, 1.0], quarter)
    bits = rng.integers(0, 1 << 32, N - 3 * quarter - len(SPECIAL),
                        dtype=np.uint64).astype(np.uint32).view(np.float32)
    return np.concatenate([wide.astype(np.float32), narrow.astype(np.float32),
                           magnitude.astype(np.float32), bits, SPECIAL])


def reference(name, x):
    """NAME of X (f32) in float64."""
    with np.errstate(all="ignore"):
        x = x.astype(np.float64)
        if name == "erf":
            return np.frompyfunc(math.erf, 1, 1)(x).astype(np.float64)
        if name == "exp":
            return np.exp(x)
        if name == "tanh":
            return np.tanh(x)
        return 1.0 / (1.0 + np.exp(-x))


def ulp_error(got, want):
    """|GOT - WANT| in units in the last place of WANT rounded to f32 (WANT
    a normal f32), else in units of 2^-126; inf where GOT is not finite."""
    with np.errstate(all="ignore"):
        rounded = np.abs(want).astype(np.float32)
        ulp = np.where(np.abs(want) >= SMALLEST_NORMAL,
                       np.spacing(rounded).astype(np.float64),
                       SMALLEST_NORMAL)
        return np.where(np.isfinite(got), np.abs(got - want) / ulp, np.inf)


def kind(values):
    """Class of each value for the special-value check."""
    return np.select([np.isnan(values), values == np.inf, values == -np.inf],
                     ["nan", "+inf", "-inf"], "finite")


def compile_and_run(compile_path, work, x, flags, tag):
    model = os.path.join(work, "math.mlir")
    exe = os.path.join(work, "math-%s.bin" % tag)
    subprocess.run([compile_path, model, "--mode=infer", "-o", exe] + flags,
                   check=True)
    out = os.path.join(work, "out-%s.npz" % tag)
    subprocess.run([exe, "--input", os.path.join(work, "x.npy"), "--output",
                    out], check=True)
    values = np.load(out)
    return {name: values["output%d" % i] for i, name in enumerate(FUNCTIONS)}


def main():
    compile_path, work = sys.argv[1:3]
    os.makedirs(work, exist_ok=True)
    x = arguments()
    np.save(os.path.join(work, "x.npy"), x)
    t = "tensor<%dxf32>" % len(x)
    with open(os.path.join(work, "math.mlir"), "w") as f:
        f.write('func.func @forward(%%x: %s {train.input = "x"}) -> (%s) {\n'
                % (t, ", ".join([t] * len(FUNCTIONS))))
        for name in FUNCTIONS:
            f.write("  %%%s = nn.%s %%x : %s\n" % (name, name, t))
        f.write("  return %s : %s\n}\n" % (
            ", ".join("%" + n for n in FUNCTIONS),
            ", ".join([t] * len(FUNCTIONS))))
    builds = {"approximate": compile_and_run(compile_path, work, x, [], "a"),
              "libm": compile_and_run(compile_path, work, x, ["--exact-math"],
                                      "e")}
    special = np.arange(len(x) - len(SPECIAL), len(x))
    ok = True
    for name in FUNCTIONS:
        want = reference(name, x)
        for build, outputs in builds.items():
            got = outputs[name].astype(np.float64)
            # Results that round to an f32 overflow are right as inf (the
            # special values check their kind).
            counted = np.abs(want) <= 3.4028235e38
            error = np.where(counted, ulp_error(got, want), 0.0)
            worst = int(np.argmax(error))
            line = "%s %s: max_ulp=%.2f at x=%r" % (
                name, build, error[worst], float(x[worst]))
            bad = error[worst] > BOUND_ULP[name]
            libm_kinds = kind(builds["libm"][name][special])
            kinds = kind(outputs[name][special])
            for i in np.nonzero(kinds != libm_kinds)[0]:
                line += "; x=%r gives %s, libm %s" % (
                    float(x[special[i]]), kinds[i], libm_kinds[i])
                bad = True
            if build == "approximate" and np.array_equal(
                    outputs[name], builds["libm"][name], equal_nan=True):
                line += "; equal to libm's everywhere"
                bad = True
            print(line + (" MISMATCH" if bad else " OK"))
            ok &= not bad
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
