"""A compiled trainer, run as one process or under mpirun."""

import shlex
import subprocess
import tempfile
import threading

from .errors import DtrainError
from .progress import read_progress
from .tool import Executable, options_to_flags


class Run:
    """What a trainer printed: STEPS (a dict per progress line: step,
    epoch, loss, acc, samples/s, ...), EVALS (a dict per validation:
    epoch, val_loss, val_acc, ...), FINAL (the last line's fields),
    RESUMED (where --resume started, or None) and OUTPUT (all of it)."""

    def __init__(self, output):
        self.output = output
        progress = read_progress(output.splitlines())
        self.steps, self.evals = progress["step"], progress["eval"]
        self.final = progress["final"]
        self.resumed = progress["resumed"][-1] if progress["resumed"] else None

    def __repr__(self):
        return "Run(%d progress lines, final=%r)" % (len(self.steps),
                                                      self.final)


class Trainer(Executable):
    """The trainer executable at PATH (dtrain-compile --mode=train)."""

    def command(self, data, val=None, epochs=None, steps=None, np=1,
                mpirun="mpirun", mpirun_args=(), extra_args=(), **options):
        """The command train() runs (a list)."""
        if epochs is None and steps is None:
            raise DtrainError("train: give epochs or steps")
        if not isinstance(np, int) or np < 1:
            raise DtrainError("train: np must be a positive integer (got %r)" %
                              (np, ))
        # A trainer's switches have no =false form: False leaves one out.
        options = dict(data=data, val=val, epochs=epochs, steps=steps,
                       **options)
        command = [self.path] + options_to_flags(
            {key: value for key, value in options.items() if value is not False})
        command += list(extra_args)
        if np > 1:
            launcher = shlex.split(mpirun) if isinstance(mpirun, str) else list(
                mpirun)
            command = launcher + ["-np", str(np)] + list(mpirun_args) + command
        return command

    def train(self, data, val=None, epochs=None, steps=None, np=1,
              mpirun="mpirun", mpirun_args=(), extra_args=(), timeout=None,
              echo=False, **options):
        """Runs the trainer on DATA (.npz, see save_data) for EPOCHS or
        STEPS, on NP ranks under MPIRUN (a command, as a string or a list:
        "mpirun --oversubscribe") with "-np NP" and MPIRUN_ARGS when NP > 1,
        and returns its Run. Keyword OPTIONS are the trainer's flags
        (seed=1, log_every=10, no_shuffle=True, checkpoint_dir="ckpt",
        resume=True, save_onnx="trained.onnx", timeline="trace.json", ...;
        the trainer's --help lists them); EXTRA_ARGS are passed as they
        are. ECHO prints its output as it comes. A failure (exit status
        not 0: a bad file, a rank that died, TIMEOUT seconds passed)
        raises DtrainError with the trainer's message."""
        command = self.command(data, val, epochs, steps, np, mpirun,
                               mpirun_args, extra_args, **options)
        # stderr to a file, so that a trainer that says much there never
        # blocks while stdout is read line by line.
        with tempfile.TemporaryFile(mode="w+") as errors:
            try:
                process = subprocess.Popen(command, stdout=subprocess.PIPE,
                                           stderr=errors, text=True,
                                           stdin=subprocess.DEVNULL)
            except OSError as e:
                raise DtrainError(
                    "cannot run %s: %s" % (command[0], e.strerror), command)
            timed_out = threading.Event()

            def stop():  # mpirun stops its ranks on SIGTERM, not SIGKILL
                timed_out.set()
                process.terminate()
                try:
                    process.wait(10)
                except subprocess.TimeoutExpired:
                    process.kill()

            timer = threading.Timer(timeout, stop) if timeout else None
            if timer:
                timer.start()
            lines = []
            for line in process.stdout:
                if echo:
                    print(line, end="", flush=True)
                lines.append(line)
            process.wait()
            if timer:
                timer.cancel()
            errors.seek(0)
            stderr = errors.read()
        output = "".join(lines)
        if timed_out.is_set():
            raise DtrainError("%s: stopped after %s s" % (self.path, timeout),
                              command, None, output + stderr)
        if process.returncode != 0:
            message = stderr.strip().splitlines()[-10:]
            raise DtrainError(
                "trainer failed (exit %d): %s" %
                (process.returncode, "\n".join(message) or
                 "(nothing on stderr)"), command, process.returncode,
                output + stderr)
        return Run(output)
