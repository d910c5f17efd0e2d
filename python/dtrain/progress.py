"""A trainer's progress lines, as dictionaries.

A trainer prints plain key=value pairs (see a trainer's --help):
    step=10 epoch=1 loss=2.165054 acc=0.2313 samples/s=9176.3
    epoch=1 val_loss=1.318934 val_acc=0.8210 val_samples=352
    final steps=45 epochs=1 loss=1.719274 acc=0.5924 val_acc=0.8210
and 'resumed step= epoch= batch=' after --resume.
"""

import re

_FIELD = re.compile(r"(\S+?)=(\S+)")
_INT = re.compile(r"[+-]?\d+$")


def _value(text):
    if _INT.match(text):
        return int(text)
    try:
        return float(text)
    except ValueError:
        return text


def parse_progress(line):
    """The kind of progress line LINE is and its fields, values as int or
    float where they read as one: ("step" | "eval" | "final" | "resumed",
    dict), or None for a line that is not progress (a warning, a message
    of mpirun's)."""
    line = line.strip()
    kind = None
    for prefix in ("final", "resumed"):
        if line.startswith(prefix + " "):
            kind, line = prefix, line[len(prefix) + 1:]
    words = line.split()
    fields = dict(_FIELD.match(w).groups() for w in words if _FIELD.match(w))
    if not words or len(fields) != len(words):
        return None
    fields = {key: _value(text) for key, text in fields.items()}
    if kind is None:
        if "val_loss" in fields:
            kind = "eval"
        elif "step" in fields:
            kind = "step"
        else:
            return None
    return kind, fields


def read_progress(lines):
    """The progress in LINES (an iterable of lines, or a file's path): a
    dict of lists "step", "eval" and "resumed", and "final" (a dict, or
    None where the run did not end)."""
    if isinstance(lines, str):
        with open(lines) as f:
            lines = f.read().splitlines()
    progress = {"step": [], "eval": [], "resumed": [], "final": None}
    for line in lines:
        parsed = parse_progress(line)
        if parsed is None:
            continue
        kind, fields = parsed
        if kind == "final":
            progress["final"] = fields
        else:
            progress[kind].append(fields)
    return progress
