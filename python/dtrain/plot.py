"""Plots of a run's progress (matplotlib, Debian's python3-matplotlib)."""

from .errors import DtrainError
from .progress import read_progress
from .trainer import Run


def _progress(run):
    if isinstance(run, Run):
        return {"step": run.steps, "eval": run.evals}
    return read_progress(run)


def plot(run, path, keys=None):
    """Draws the training curves of RUN (a Run, a log file's path, or a
    list of its lines) to the image PATH (its extension picks the format:
    .png, .svg, .pdf): each of KEYS against the step, one panel each (by
    default loss, and acc where the loss has one: not MSE), and the
    validation accuracy against the step each epoch ended at where the run
    validated. Returns PATH."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise DtrainError("plot needs matplotlib (apt install "
                          "python3-matplotlib): %s" % e)
    progress = _progress(run)
    steps = progress["step"]
    if not steps:
        raise DtrainError("plot: the run has no progress lines")
    if keys is None:
        keys = [k for k in ("loss", "acc") if any(k in s for s in steps)]
    missing = [k for k in keys if not any(k in s for s in steps)]
    if missing:
        raise DtrainError("plot: no %s in the progress lines (they have: %s)" %
                          (", ".join(missing), ", ".join(steps[0])))
    figure, axes = plt.subplots(len(keys), 1, sharex=True, squeeze=False,
                                figsize=(6, 2.5 * len(keys)))
    # The step each epoch ended at: the last progress line of that epoch.
    epoch_end = {s["epoch"]: s["step"] for s in steps if "epoch" in s}
    for axis, key in zip(axes[:, 0], keys):
        points = [(s["step"], s[key]) for s in steps if key in s]
        axis.plot(*zip(*points), label=key)
        if key == "acc":
            validated = [(epoch_end[e["epoch"]], e["val_acc"])
                         for e in progress["eval"] if e["epoch"] in epoch_end]
            if validated:
                axis.plot(*zip(*validated), "o-", label="val_acc")
        axis.set_ylabel(key)
        axis.grid(True, alpha=0.3)
        axis.legend()
    axes[-1, 0].set_xlabel("step")
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)
    return path
