"""Kills one rank of a data-parallel training job (SIGKILL, as a crashed
node would) and checks that the job ends rather than hangs: mpirun exits
non-zero within LIMIT seconds with a message naming the dead rank, and the
last checkpoint (written atomically by rank 0) is still a complete,
loadable archive with every parameter finite.

usage: check_killed_rank.py MPIRUN RANKS VICTIM LIMIT TRAINER ARGS...
(ARGS must include --checkpoint-dir DIR and --checkpoint-every N)
"""
import os
import shlex
import signal
import subprocess
import sys
import time

import numpy as np


def main():
    mpirun, ranks, victim, limit = sys.argv[1:5]
    trainer = sys.argv[5:]
    ranks, victim, limit = int(ranks), int(victim), float(limit)
    directory = trainer[trainer.index("--checkpoint-dir") + 1]
    checkpoint = os.path.join(directory, "checkpoint.npz")
    for rank in range(ranks):
        if os.path.exists("pid.%d" % rank):
            os.remove("pid.%d" % rank)
    # Each rank records its pid, then becomes the trainer.
    wrapper = 'echo $$ > pid.$OMPI_COMM_WORLD_RANK; exec "$@"'
    job = subprocess.Popen(
        shlex.split(mpirun) + ["-np", str(ranks), "sh", "-c", wrapper, "sh"] +
        trainer, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + 60
    while not os.path.exists(checkpoint) or not os.path.exists(
            "pid.%d" % victim):
        if job.poll() is not None or time.time() > deadline:
            print(job.communicate()[0])
            sys.exit("the job ended or wrote no checkpoint within 60 s")
        time.sleep(0.1)
    time.sleep(1.0)  # well inside the training loop
    os.kill(int(open("pid.%d" % victim).read()), signal.SIGKILL)
    killed = time.time()
    try:
        output, _ = job.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        job.kill()
        sys.exit("HANG: the job still ran %.0f s after rank %d was killed" %
                 (limit, victim))
    seconds = time.time() - killed
    print(output[-2000:])
    print("exit status %d after %.1f s (limit %.0f s)" %
          (job.returncode, seconds, limit))
    archive = np.load(checkpoint)
    finite = all(np.isfinite(archive[name]).all() for name in archive.files
                 if archive[name].dtype.kind == "f")
    print("checkpoint: %d members, step %d, all finite %s" %
          (len(archive.files), int(archive["dtrain.step"]), finite))
    return 0 if job.returncode != 0 and finite else 1


if __name__ == "__main__":
    sys.exit(main())
