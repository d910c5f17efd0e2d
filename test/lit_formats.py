"""lit test formats of dtrain's regression tests (imported by lit.cfg.py)."""

import hashlib
import os
import shutil
import tempfile

import lit.formats


class ShTestWithOwnTmpdir(lit.formats.ShTest):
    """ShTest with a TMPDIR of the test's own. Open MPI 4 keeps the session
    directories of its processes under one $TMPDIR/ompi.<host>.<uid>, which
    a process removes when it finishes and finds it empty: a process of
    another test starting at that moment fails in MPI_Init ("orte_session_dir
    failed", open-mpi/ompi#8510). A directory per test takes the race away;
    it is short, since Open MPI puts Unix sockets in it (108-byte paths)."""

    def execute(self, test, litConfig):
        digest = hashlib.sha1(test.getFullName().encode()).hexdigest()[:12]
        tmpdir = os.path.join(tempfile.gettempdir(),
                              "dtrain-lit-%d" % os.getuid(), digest)
        os.makedirs(tmpdir, exist_ok=True)
        # A lit worker runs one test at a time, with its own copy of config.
        test.config.environment["TMPDIR"] = tmpdir
        try:
            return super().execute(test, litConfig)
        finally:
            shutil.rmtree(tmpdir, ignore_errors=True)
