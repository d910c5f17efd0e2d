"""Reading a compiled trainer's output, for the checks of its runs."""
import re
import sys


def final_fields(path):
    """The key=value fields of the last 'final ' line of the log PATH."""
    with open(path) as f:
        finals = [l for l in f if l.startswith("final ")]
    if not finals:
        sys.exit("%s: no final line" % path)
    return dict(re.findall(r"(\S+)=(\S+)", finals[-1]))
