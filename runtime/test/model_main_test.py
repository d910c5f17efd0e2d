"""End-to-end test of dtrain_rt_model_main, the main of compiled models,
through fake_model.c (see there for the model).

  model_main_test.py FAKE_MODEL BAD_INFO_MODEL FIXTURES WORKDIR

FIXTURES holds the ONNX files of onnx_weights_fixtures.py; WORKDIR is
created afresh for the .npy files, with a copy of FIXTURES/fake_model.onnx
(the path the fake model records). Every case runs the program and checks
its exit status, stdout, stderr (errors: exactly one line each,
"dtrain: error: ...") and the outputs it writes, read with numpy. Needs
numpy: run it with Debian's /usr/bin/python3.
"""

import os
import re
import shutil
import subprocess
import sys

try:
    import numpy as np
except ImportError:
    sys.exit("model_main_test.py: numpy is missing (Debian: apt-get install "
             "python3-numpy, and run this with /usr/bin/python3)")

FAKE, BAD_INFO, FIXTURES, WORK = sys.argv[1:5] if len(sys.argv) == 5 else (
    sys.exit(__doc__))

W = np.array([0.5, -1.0, 2.0, 0.25], np.float32)  # fake_model.onnx
SHIFT = 1.5
W_ALT = np.array([1.0, 2.0, 3.0, 4.0], np.float32)  # fake_alt.onnx, fake_ext
SHIFT_ALT = -2.0
X = (np.arange(8, dtype=np.float32).reshape(2, 4) - 3) / 4
K = np.array([2, -3], np.int32)

failures = []


def work(name):
    return os.path.join(WORK, name)


def fixture(name):
    return os.path.join(FIXTURES, name)


def run(args, program=FAKE, env=None, cwd=None):
    full_env = dict(os.environ)
    full_env.update(env or {})
    p = subprocess.run([program] + args, stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, timeout=60,
                       env=full_env, cwd=cwd or WORK)
    return p.returncode, p.stdout, p.stderr


def case(name, args, status=0, stderr=None, stdout=None, check=None,
         **kwargs):
    """Runs the program with ARGS; STDERR and STDOUT are regular
    expressions that must match the whole of it (stderr: one line for a
    failure); CHECK() checks the files."""
    # Outputs of an earlier case must not pass for this one's.
    for f in os.listdir(WORK):
        if f.startswith("out"):
            os.remove(work(f))
    rc, out, err = run(args, **kwargs)
    problems = []
    if rc != status:
        problems.append("exit status %d, expected %d" % (rc, status))
    if status != 0:
        lines = err.splitlines()
        if len(lines) != 1 or not lines[0].startswith("dtrain: error: "):
            problems.append("stderr is not one 'dtrain: error: ' line")
    if stderr is not None and not re.fullmatch(stderr, err.rstrip("\n"),
                                               re.S):
        problems.append("stderr does not match %r" % stderr)
    if stdout is not None and not re.fullmatch(stdout, out, re.S):
        problems.append("stdout does not match %r" % stdout)
    if not problems and check:
        try:
            check()
        except AssertionError as e:
            problems.append("check failed: %s" % e)
    print("%s: %s" % ("FAIL" if problems else "PASS", name))
    if problems:
        for p in problems:
            print("    " + p)
        print("    command: %s %s" % (os.path.basename(FAKE), " ".join(args)))
        print("    stdout: %r\n    stderr: %r" % (out, err))
        failures.append(name)


def expect_outputs(w=W, shift=SHIFT, y=True, total=True, x=X, k=K):
    def check():
        want = x * w * k[:, None].astype(np.float32)
        if y:
            got = np.load(work("out_y.npy"))
            assert got.dtype == np.float32 and got.shape == (2, 4), got
            assert (got == want).all(), (got, want)
        else:
            assert not os.path.exists(work("out_y.npy")), "y was written"
        if total:
            got = np.load(work("out_total.npy"))
            assert got.dtype == np.float64 and got.shape == (), got
            want_total = want.astype(np.float64).sum() + shift
            assert abs(got - want_total) < 1e-9, (got, want_total)
        else:
            assert not os.path.exists(work("out_total.npy")), "total written"
    return check


def main():
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    shutil.copy(fixture("fake_model.onnx"), work("fake_model.onnx"))
    np.save(work("x.npy"), X)
    np.save(work("k.npy"), K)
    np.save(work("x3.npy"), np.zeros((3, 4), np.float32))
    np.save(work("x25.npy"), np.zeros((2, 5), np.float32))
    np.save(work("x_f64.npy"), X.astype(np.float64))
    np.save(work("k_i64.npy"), K.astype(np.int64))
    np.save(work("k_big.npy"), np.array([2, 3], np.int32))
    np.save(work("k_neg.npy"), np.array([-4, 0], np.int32))
    np.save(work("k_bool.npy"), np.array([False, True]))
    np.savez(work("xk.npz"), k=K, x=X)
    np.savez(work("x_only.npz"), x=X, unused=K)
    with open(work("garbage.onnx"), "w") as f:
        f.write("not an ONNX model\n")

    both = ["--output", "y=out_y.npy", "--output", "total=out_total.npy"]
    inputs = ["--input", "x.npy", "--input", "k.npy"]

    # --- Runs -----------------------------------------------------------------
    case("positional inputs, named outputs", inputs + both, stdout="",
         stderr="", check=expect_outputs())
    case("named inputs in any order, positional outputs",
         ["--input", "k=k.npy", "--input", "x=x.npy", "--output",
          "out_y.npy", "--output", "out_total.npy"],
         stdout="", stderr="", check=expect_outputs())
    case("a positional input goes to the input not named",
         ["--input", "k=k.npy", "--input", "x.npy", "--output",
          "total=out_total.npy"],
         check=expect_outputs(y=False))
    case("--flag=value", ["--input=x.npy", "--input=k=k.npy",
                          "--output=y=out_y.npy"],
         check=expect_outputs(total=False))
    def expect_archive(path, names):
        """Both outputs, NAMES of them from the archive PATH."""
        def check():
            with np.load(work(path)) as archive:
                assert sorted(archive.files) == sorted(names), archive.files
                for name in names:
                    np.save(work("out_%s.npy" % name), archive[name])
            expect_outputs()()
        return check
    case(".npz in and out: members by name",
         ["--input", "xk.npz", "--output", "out.npz"], stdout="", stderr="",
         check=expect_archive("out.npz", ["y", "total"]))
    case("an archive gives the inputs it has, a file the one left",
         ["--input", "k.npy", "--input", "x_only.npz", "--output",
          "total=out_total.npy", "--output", "y=out_one.npz"],
         check=expect_archive("out_one.npz", ["y"]))
    case("NAME=FILE.npz reads member NAME",
         ["--input", "x=xk.npz", "--input", "k=xk.npz", "--output",
          "out.npz"],
         check=expect_archive("out.npz", ["y", "total"]))
    case("a bool array reads as 0 and 1 where the model takes integers",
         ["--input", "x.npy", "--input", "k_bool.npy"] + both,
         check=expect_outputs(k=np.array([0, 1], np.int32)))
    case("no outputs: just runs", inputs, stdout="", stderr="",
         check=expect_outputs(y=False, total=False))
    case("--model overrides the recorded ONNX file",
         inputs + both + ["--model", fixture("fake_alt.onnx")],
         check=expect_outputs(W_ALT, SHIFT_ALT))
    # External data relative to the model's directory, not the working one.
    case("--model with external data",
         inputs + both + ["--model", fixture("fake_ext/model.onnx")],
         check=expect_outputs(W_ALT, SHIFT_ALT))

    # --- Timing -----------------------------------------------------------
    timing = r"run_ms=[0-9]+\.[0-9]+ min_ms=[0-9]+\.[0-9]+ runs=%d\n"
    count = {"DTRAIN_FAKE_MODEL_COUNT": "1"}
    case("--repeat 5: 1 warm-up, 5 timed runs, one line",
         inputs + both + ["--repeat", "5"], stdout=timing % 5,
         stderr="fake_model: runs=6", env=count, check=expect_outputs())
    case("--repeat 3 --warmup 0", inputs + ["--repeat=3", "--warmup=0"],
         stdout=timing % 3, stderr="fake_model: runs=3", env=count)
    case("--repeat 1: no warm-up", inputs + ["--repeat", "1"],
         stdout=timing % 1, stderr="fake_model: runs=1", env=count)
    # An installed input prefetch sees each input once the host wrote it.
    prefetched = "\n".join(
        "fake_model: prefetch %d %d %d" % (index, a.nbytes, sum(a.tobytes()))
        for index, a in ((2, X), (3, K)))
    case("the input prefetch: each input after it is written",
         inputs + both, stderr=prefetched,
         env={"DTRAIN_FAKE_MODEL_PREFETCH": "1"}, check=expect_outputs())
    # An installed run caller makes every run, with the model's buffers.
    case("the run caller: each run through it",
         inputs + both + ["--repeat", "2"],
         stdout=timing % 2,
         stderr="(fake_model: call 6 1 1\n){2}fake_model: call 6 1 1",
         env={"DTRAIN_FAKE_MODEL_RUN_CALLER": "1"}, check=expect_outputs())
    case("--warmup without --repeat prints nothing",
         inputs + ["--warmup", "2"], stdout="", stderr="fake_model: runs=3",
         env=count)

    # --- Help and info ----------------------------------------------------
    help_text = (r"usage: .*--input \[NAME=\]FILE\]\.\.\..*\.npz archives.*inputs:  'x' \(f32 "
                 r"2x4\), 'k' \(i32 2\).*outputs: 'y' \(f32 2x4\), 'total' "
                 r"\(f64 \(\)\).*--model FILE\.onnx.*--repeat N.*"
                 r"run_ms=<mean> min_ms=<min> runs=<N>.*--warmup W.*"
                 r"--print-info.*Exit status.*Examples:.*--input in1\.npy "
                 r"--input in2\.npy --output y=out\.npy.*")
    case("--help", ["--help"], stdout=help_text, stderr="")
    case("-h wins over what follows", ["-h", "--bogus"], stdout=help_text)
    case("--print-info", ["--print-info"], stderr="",
         stdout=r"mode: infer\nweights: .*/fake_model\.onnx\n"
                r"role    dtype  shape  name\n"
                r"input   f32    2x4    x\ninput   i32    2      k\n"
                r"output  f32    2x4    y\noutput  f64    \(\)     total\n"
                r"param   f32    4      fc\.weight\n"
                r"buffer  f32    \(\)     shift\n")

    # --- Usage errors (exit status 2) ------------------------------------
    usage = [
        ("unknown flag", ["--frobnicate"], r"unknown flag '--frobnicate'.*"),
        ("unknown short flag", ["-x"], r"unknown flag '-x'.*"),
        ("positional argument", ["x.npy"],
         r"unexpected argument 'x.npy' \(inputs are given with --input.*"),
        ("missing value", inputs + ["--output"],
         r"--output needs a value.*"),
        ("a flag is not a value", ["--input", "--repeat", "3"],
         r"--input needs a value.*"),
        ("empty value", ["--model="], r"--model needs a value.*"),
        ("value for a plain flag", ["--print-info=yes"],
         r"--print-info takes no value"),
        ("bad --repeat", inputs + ["--repeat", "ten"],
         r"--repeat 'ten': expected a positive integer.*"),
        ("zero --repeat", inputs + ["--repeat=0"],
         r"--repeat '0': expected a positive integer.*"),
        ("negative --warmup", inputs + ["--warmup", "-1"],
         r"--warmup '-1': expected a non-negative integer.*"),
        ("--repeat twice", inputs + ["--repeat=2", "--repeat=3"],
         r"--repeat is given twice"),
        ("missing --input", ["--input", "x.npy"],
         r"no --input for input 'k' \(i32 2\); the model's inputs, in "
         r"order: 'x' \(f32 2x4\), 'k' \(i32 2\)"),
        ("no --input at all", [], r"no --input for input 'x' \(f32 2x4\).*"),
        ("an input twice", ["--input", "x=x.npy", "--input", "x=x3.npy",
                            "--input", "k.npy"],
         r"input 'x' is given twice \('x.npy' and 'x3.npy'\)"),
        ("too many inputs", inputs + ["--input", "x3.npy"],
         r"too many --input files: 'x3.npy' has no input left to go to .*"),
        ("unknown input name", ["--input", "q=x.npy", "--input", "k.npy"],
         r"--input 'q=x.npy': the model has no input named 'q' \(inputs: "
         r"'x' \(f32 2x4\), 'k' \(i32 2\); a file whose name contains '=' "
         r"is given as NAME=FILE\)"),
        ("unknown output name", inputs + ["--output", "z=out.npy"],
         r"--output 'z=out.npy': the model has no output named 'z'.*"),
        ("no file after NAME=", ["--input", "x=", "--input", "k.npy"],
         r"--input 'x=': no file after '='"),
    ]
    for name, args, message in usage:
        case(name, args, status=2, stderr="dtrain: error: " + message)

    # --- Errors (exit status 1) -------------------------------------------
    errors = [
        ("batch size differs",
         ["--input", "x3.npy", "--input", "k.npy"],
         r"input 'x': x3.npy has shape 3x4, but the model was compiled for "
         r"2x4 \(recompile with --batch-size 3\)"),
        ("another dimension differs",
         ["--input", "x25.npy", "--input", "k.npy"],
         r"input 'x': x25.npy has shape 2x5, but the model was compiled for "
         r"2x4"),
        ("wrong dtype", ["--input", "x_f64.npy", "--input", "k.npy"],
         r"input 'x': x_f64.npy has dtype f64, expected f32 \(save it with "
         r"\.astype\(np\.float32\)\)"),
        ("wrong integer dtype", ["--input", "x.npy", "--input", "k_i64.npy"],
         r"input 'k': k_i64.npy has dtype i64, expected i32 .*"),
        # k indexes a table of 3 rows ("indices 3 k"): [-3, 3).
        ("index past the table", ["--input", "x.npy", "--input",
                                  "k_big.npy"],
         r"k_big.npy: index 3 of sample 1 \(its element 0\) of input 'k' is "
         r"out of range for the 3 rows of the table it looks up"),
        ("negative index before the table",
         ["--input", "x.npy", "--input", "k_neg.npy"],
         r"k_neg.npy: index -4 of sample 0 \(its element 0\) of input 'k' "
         r"is out of range for the 3 rows of the table it looks up"),
        ("missing .npy", ["--input", "nope.npy", "--input", "k.npy"],
         r"input 'x': nope.npy: cannot open: No such file or directory"),
        ("not a .npy", ["--input", "garbage.onnx", "--input", "k.npy"],
         r"input 'x': garbage.onnx: not a .npy file.*"),
        ("weight shape differs",
         inputs + ["--model", fixture("fake_wrong_shape.onnx")],
         r"weight 'fc.weight' in .*/fake_wrong_shape.onnx has shape 2x2, but "
         r"the model was compiled for 4"),
        ("weight dtype differs",
         inputs + ["--model", fixture("fake_wrong_dtype.onnx")],
         r"weight 'fc.weight' in .*/fake_wrong_dtype.onnx has dtype f64, "
         r"expected f32"),
        ("missing initializer",
         inputs + ["--model", fixture("fake_missing.onnx")],
         r".*/fake_missing.onnx: no initializer 'shift' \(the file has 1 "
         r"initializer: 'fc.weight'\)"),
        ("missing ONNX file", inputs + ["--model", "nope.onnx"],
         r"cannot read the weights: nope.onnx: cannot open: No such file or "
         r"directory"),
        ("unreadable ONNX file", inputs + ["--model", "garbage.onnx"],
         r"cannot read the weights: garbage.onnx: not a valid ONNX model: "
         r".*"),
        ("unwritable output",
         inputs + ["--output", "y=no/such/dir/out.npy"],
         r"output 'y': no/such/dir/out.npy: cannot create: No such file or "
         r"directory"),
    ]
    for name, args, message in errors:
        case(name, args, status=1, stderr="dtrain: error: " + message)
    # The recorded path is used, and named, when --model is absent.
    os.remove(work("fake_model.onnx"))
    case("recorded ONNX file missing", inputs, status=1,
         stderr=r"dtrain: error: cannot read the weights: "
                r".*/fake_model.onnx: cannot open: No such file or "
                r"directory \(the ONNX file the model was compiled from; "
                r"give another with --model FILE.onnx\)")
    case("malformed model description", inputs, status=1, program=BAD_INFO,
         stderr=r"dtrain: error: internal error: the model description "
                r"compiled into this program is malformed \(line 6: unknown "
                r"dtype 'f8' \(accepted: f32, f64, f16, bf16, i64, i32, bool\)\); "
                r"it was generated by a dtrain-compile that does not match "
                r"this runtime")

    print("%d failed" % len(failures) if failures else "all cases passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
