"""What the wrappers of dtrain's programs share: running one, its flags
from keyword options, and a compiled executable's path."""

import os
import subprocess

from .errors import DtrainError


def run_tool(what, command):
    """Runs COMMAND (a list) to completion and returns its
    CompletedProcess; a non-zero exit raises DtrainError "WHAT failed
    (exit N): <what it printed on stderr, else stdout>"."""
    result = subprocess.run(command, capture_output=True, text=True,
                            stdin=subprocess.DEVNULL)
    if result.returncode != 0:
        message = result.stderr.strip() or result.stdout.strip()
        raise DtrainError(
            "%s failed (exit %d): %s" % (what, result.returncode, message),
            command, result.returncode, result.stdout + result.stderr)
    return result


def options_to_flags(options):
    """A dtrain program's flags for keyword OPTIONS: batch_size=32 is
    --batch-size=32, a True flag --channels-last, False
    --data-parallel=false, a list or tuple the flag once per value
    (input_shape=["x=1x3x32x32", ...]), None nothing."""
    flags = []
    for key, value in options.items():
        flag = "--" + key.replace("_", "-")
        if value is None:
            continue
        if value is True:
            flags.append(flag)
        elif value is False:
            flags.append(flag + "=false")
        elif isinstance(value, (list, tuple)):
            flags.extend("%s=%s" % (flag, v) for v in value)
        else:
            flags.append("%s=%s" % (flag, value))
    return flags


class Executable:
    """A program dtrain-compile made, at PATH (made absolute)."""

    def __init__(self, path):
        if not os.path.isfile(path):
            raise DtrainError("%s: no such executable" % path)
        self.path = os.path.abspath(path)

    def __repr__(self):
        return "%s(%r)" % (type(self).__name__, self.path)
