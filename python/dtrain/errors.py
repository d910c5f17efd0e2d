"""The one exception the front end raises."""


class DtrainError(Exception):
    """A tool failed, or was not found. COMMAND is what ran (a list, or
    None), RETURNCODE its exit status (None where it did not run), OUTPUT
    what it printed (stderr last)."""

    def __init__(self, message, command=None, returncode=None, output=""):
        super().__init__(message)
        self.command = command
        self.returncode = returncode
        self.output = output
