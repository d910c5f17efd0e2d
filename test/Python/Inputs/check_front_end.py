"""Checks dtrain's Python front end (python/dtrain) end to end against
PyTorch: a perceptron exported with dtrain.export, compiled with
dtrain.compile and trained with Trainer.train, as one process and on 2
ranks under mpirun, prints the losses and accuracies of PyTorch's own SGD
steps on the same batches (rtol 1e-5); a model with a float buffer and a
batch norm exported with dtrain.export lists the buffer, and not the
running statistics, as dtrain.frozen, and its trainer keeps the buffer
constant (PyTorch's losses again; the running statistics move);
save_data keeps integer samples (token ids) as int64; a CNN compiled for
inference through it gives PyTorch's eval() logits; then the front end's
errors, its timeout, its progress parsing on hand-written lines, and its
plot.

usage: check_front_end.py MPIRUN WORKDIR
"""
import copy
import os
import subprocess
import sys
import time
import warnings

import numpy as np
import torch
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir,
                                os.pardir, os.pardir, "python"))
import dtrain  # noqa: E402

LR, BATCH, STEPS = 0.1, 8, 4


def expect_error(what, call, *fragments):
    try:
        call()
    except dtrain.DtrainError as e:
        missing = [f for f in fragments if f not in str(e)]
        if missing:
            sys.exit("%s: the error lacks %s: %s" % (what, missing, e))
        print("%s: DtrainError (exit %s): %s" %
              (what, e.returncode, str(e).splitlines()[0]))
        return
    sys.exit("%s: no DtrainError" % what)


def torch_steps(model, x, y, batch):
    """Losses and accuracies of STEPS plain SGD steps of BATCH samples
    in file order: what the trainer prints for each step."""
    model = copy.deepcopy(model).double()
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    losses, accs = [], []
    for step in range(STEPS):
        xb = torch.from_numpy(x[step * batch:(step + 1) * batch]).double()
        yb = torch.from_numpy(y[step * batch:(step + 1) * batch])
        optimizer.zero_grad()
        logits = model(xb)
        loss = nn.functional.cross_entropy(logits, yb)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        accs.append((logits.argmax(1) == yb).double().mean().item())
    return losses, accs


def compare(what, run, model, x, y, batch):
    losses, accs = torch_steps(model, x, y, batch)
    got_losses = [s["loss"] for s in run.steps]
    got_accs = [s["acc"] for s in run.steps]
    print("%s: losses %s, PyTorch %s" %
          (what, " ".join("%.6f" % v for v in got_losses),
           " ".join("%.6f" % v for v in losses)))
    if [s["step"] for s in run.steps] != list(range(1, STEPS + 1)):
        sys.exit("%s: progress lines for steps %s" %
                 (what, [s["step"] for s in run.steps]))
    if not np.allclose(got_losses, losses, rtol=1e-5, atol=1e-6):
        sys.exit("%s: the losses differ from PyTorch's" % what)
    if not np.allclose(got_accs, accs, atol=1e-4):
        sys.exit("%s: accuracies %s, PyTorch %s" % (what, got_accs, accs))
    if run.final["steps"] != STEPS:
        sys.exit("%s: final line %s" % (what, run.final))


class Gained(nn.Module):
    """A perceptron with a batch norm and a constant float buffer, GAIN,
    that scales its hidden units: a buffer such as a causal mask, which
    dtrain must not train."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 32)
        self.bn = nn.BatchNorm1d(32)
        self.fc2 = nn.Linear(32, 10)
        self.register_buffer("gain", torch.linspace(0.5, 2.0, 32))

    def forward(self, x):
        return self.fc2(torch.relu(self.bn(self.fc1(x.flatten(1))) *
                                   self.gain))


def initializers(path):
    import onnx
    from onnx import numpy_helper
    return {t.name: numpy_helper.to_array(t)
            for t in onnx.load(path).graph.initializer}


def check_frozen(x, y):
    """dtrain.export lists a module's float buffers in dtrain.frozen, but
    not a batch norm's running statistics; the trainer does not train the
    buffer (PyTorch's losses, which never change it) and writes it back
    as it was, while the running statistics and the weights move."""
    import onnx
    torch.manual_seed(0)
    model = Gained()
    with warnings.catch_warnings():  # about bn.num_batches_tracked
        warnings.simplefilter("ignore")
        dtrain.export(model, torch.randn(2, 1, 8, 8), "gained.onnx")
    metadata = {p.key: p.value
                for p in onnx.load("gained.onnx").metadata_props}
    print("dtrain.frozen: %s" % metadata.get("dtrain.frozen"))
    if metadata.get("dtrain.frozen") != "gain":
        sys.exit("gained.onnx: dtrain.frozen is %r, expected 'gain'" %
                 metadata.get("dtrain.frozen"))
    trainer = dtrain.compile("gained.onnx", "gained.bin", batch_size=BATCH,
                             lr=LR, data_parallel=False)
    info = subprocess.run([trainer.path, "--print-info"], check=True,
                          capture_output=True, text=True).stdout
    names = {line.split()[-1] for line in info.splitlines()[3:]}
    if "gain" in names or "fc1.weight" not in names:
        sys.exit("gained.bin --print-info: gain trained?\n" + info)
    run = trainer.train("train.npz", steps=STEPS, log_every=1,
                        no_shuffle=True, save_onnx="gained-trained.onnx")
    compare("a frozen buffer", run, model, x, y, BATCH)
    before = initializers("gained.onnx")
    after = initializers("gained-trained.onnx")
    moved = sorted(name for name in before
                   if not np.array_equal(before[name], after[name]))
    print("a frozen buffer: initializers moved: %s" % " ".join(moved))
    if "gain" in moved or not {"fc1.weight", "bn.running_mean",
                               "bn.running_var"} <= set(moved):
        sys.exit("gained-trained.onnx: the wrong initializers moved")


def check_integer_samples():
    """save_data keeps integer samples (token ids, from numpy or torch, of
    any width) as int64, float ones as float32, and the labels, one per
    sample or per position, as int64."""
    tokens = np.arange(32, dtype=np.int32).reshape(4, 8) % 16
    for what, x in (("int32 numpy", tokens),
                    ("int16 torch", torch.from_numpy(tokens).short()),
                    ("float64 numpy", tokens.astype(np.float64))):
        dtrain.save_data("tokens.npz", x, tokens.astype(np.int32))
        with np.load("tokens.npz") as saved:
            print("save_data of %s samples: x %s %s, y %s %s" %
                  (what, saved["x"].dtype, saved["x"].shape,
                   saved["y"].dtype, saved["y"].shape))
            if not np.array_equal(saved["x"], tokens) or \
                    not np.array_equal(saved["y"], tokens):
                sys.exit("save_data of %s samples changed them" % what)


def running(program):
    """The processes whose command line names PROGRAM (from /proc)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                if program.encode() in f.read().split(b"\0"):
                    found.append(pid)
        except OSError:  # ended meanwhile
            pass
    return found


def main():
    mpirun, workdir = sys.argv[1:]
    os.chdir(workdir)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(64, 32), nn.ReLU(),
                          nn.Linear(32, 10))
    generator = np.random.default_rng(1)
    x = generator.standard_normal((64, 1, 8, 8)).astype(np.float32)
    y = generator.integers(0, 10, 64)
    dtrain.save_data("train.npz", torch.from_numpy(x), y)
    dtrain.export(model, torch.randn(2, 1, 8, 8), "mlp.onnx")

    single = dtrain.compile("mlp.onnx", "single.bin", batch_size=BATCH,
                            lr=LR, data_parallel=False)
    run = single.train("train.npz", steps=STEPS, log_every=1,
                       no_shuffle=True)
    compare("one process", run, model, x, y, BATCH)

    # 2 ranks of BATCH samples step as one process on 2*BATCH: the
    # gradients are averaged, and the loss printed is the ranks' mean.
    parallel = dtrain.compile("mlp.onnx", "parallel.bin", batch_size=BATCH,
                              lr=LR)
    run = parallel.train("train.npz", steps=STEPS, np=2, mpirun=mpirun,
                         log_every=1, no_shuffle=True)
    compare("2 ranks", run, model, x, y, 2 * BATCH)
    with open("log.txt", "w") as f:  # for python3 -m dtrain plot
        f.write(run.output)

    check_frozen(x, y)
    check_integer_samples()

    # An inference executable: a CNN with batch norm (its running
    # statistics) and dropout (off), exported in evaluation mode, against
    # PyTorch's eval().
    cnn = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4),
                        nn.ReLU(), nn.Dropout(0.5), nn.Flatten(),
                        nn.Linear(4 * 8 * 8, 10))
    with torch.no_grad():  # statistics that are not the initial ones
        cnn[1].running_mean.uniform_(-0.5, 0.5)
        cnn[1].running_var.uniform_(0.5, 2.0)
    dtrain.export(cnn, torch.randn(2, 1, 8, 8), "cnn.onnx", training=False)
    infer = dtrain.compile("cnn.onnx", "cnn.bin", mode="infer", batch_size=4)
    logits = infer.run(torch.from_numpy(x[:4]))
    with torch.no_grad():
        expected = cnn.eval()(torch.from_numpy(x[:4])).numpy()
    print("inference: logits %s, max diff from PyTorch %.1e" %
          (logits.shape, np.abs(logits - expected).max()))
    if not np.allclose(logits, expected, rtol=1e-5, atol=1e-5):
        sys.exit("inference: the logits differ from PyTorch's")
    expect_error("an input of another batch size",
                 lambda: infer.run(x[:3]), "model failed (exit 1)")

    # Errors: the tools' own messages.
    expect_error("an option dtrain-compile refuses",
                 lambda: dtrain.compile("mlp.onnx", "bad.bin", batch_size=BATCH,
                                       optimizer="sgdd"),
                 "dtrain-compile failed (exit 1)", "sgdd")
    expect_error("a --frozen name that is no initializer",
                 lambda: dtrain.compile("mlp.onnx", "bad.bin", batch_size=BATCH,
                                        frozen="gain"),
                 "dtrain-compile failed (exit 1)", "'gain'")
    expect_error("a missing model",
                 lambda: dtrain.compile("none.onnx", "bad.bin"),
                 "none.onnx: no such model file")
    expect_error("a missing data file",
                 lambda: single.train("none.npz", steps=1),
                 "trainer failed (exit 1)", "none.npz")
    expect_error("a trainer flag that does not exist",
                 lambda: single.train("train.npz", steps=1, colour=True),
                 "trainer failed (exit 2)", "--colour")
    # A run past its timeout is stopped, under mpirun with its ranks.
    for trainer, ranks in ((single, 1), (parallel, 2)):
        started = time.monotonic()
        expect_error("a timeout on %d rank(s)" % ranks,
                     lambda: trainer.train("train.npz", epochs=10**6, np=ranks,
                                           mpirun=mpirun, timeout=2),
                     "stopped after 2 s")
        if time.monotonic() - started > 15:
            sys.exit("the run took %.0f s to stop" %
                     (time.monotonic() - started))
    # mpirun returns once it has signalled its ranks; on a loaded machine
    # they may take a moment to exit, but not longer than 10 s.
    deadline = time.monotonic() + 10
    while running(os.path.abspath("parallel.bin")) and \
            time.monotonic() < deadline:
        time.sleep(0.1)
    left = running(os.path.abspath("parallel.bin"))
    if left:
        sys.exit("ranks left running 10 s after the timeout: %s" % left)
    expect_error("no length", lambda: single.train("train.npz"),
                 "give epochs or steps")
    expect_error("np=0", lambda: single.train("train.npz", steps=1, np=0),
                 "np must be a positive integer")
    expect_error("a missing tool",
                 lambda: dtrain.find_tool("dtrain-compile", "/nonexistent"),
                 "/nonexistent: no such executable")
    expect_error("labels that are not integers",
                 lambda: dtrain.save_data("bad.npz", x, y.astype(float)),
                 "the labels must be integers")

    # Progress lines as the trainer's --help describes them.
    assert dtrain.parse_progress(
        "step=10 epoch=1 loss=2.165054 acc=0.2313 samples/s=9176.3") == (
            "step", {"step": 10, "epoch": 1, "loss": 2.165054,
                     "acc": 0.2313, "samples/s": 9176.3})
    assert dtrain.parse_progress(
        "epoch=1 val_loss=1.31 val_acc=0.82 val_samples=352") == (
            "eval", {"epoch": 1, "val_loss": 1.31, "val_acc": 0.82,
                     "val_samples": 352})
    assert dtrain.parse_progress("final steps=45 epochs=1 loss=1.7") == (
        "final", {"steps": 45, "epochs": 1, "loss": 1.7})
    assert dtrain.parse_progress("resumed step=70 epoch=2 batch=25") == (
        "resumed", {"step": 70, "epoch": 2, "batch": 25})
    assert dtrain.parse_progress("dtrain: error: --data needs a file") is None
    assert dtrain.parse_progress("") is None
    print("parse_progress: 6 lines as expected")

    dtrain.plot(run, "progress.png")
    with open("progress.png", "rb") as f:
        signature = f.read(8)
    if signature != b"\x89PNG\r\n\x1a\n":
        sys.exit("progress.png is not a PNG: %r" % signature)
    # A loss without accuracy (MSE): the default keys are the run's.
    dtrain.plot(["step=1 epoch=1 loss=0.5", "step=2 epoch=1 loss=0.25"],
                "mse.png")
    if not os.path.getsize("mse.png"):
        sys.exit("mse.png is empty")
    expect_error("a key the run lacks",
                 lambda: dtrain.plot(run, "bad.png", keys=("loss", "foo")),
                 "no foo in the progress lines")
    print("plot: progress.png written")


if __name__ == "__main__":
    main()
