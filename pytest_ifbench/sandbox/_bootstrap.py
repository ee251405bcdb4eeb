"""Child side, entry point: the file the sandboxed interpreter is started with.

The parent (:mod:`._python`) runs, with the parent's own interpreter::

    [unshare --net] python -s -P -B /path/to/sandbox/_bootstrap.py PAYLOAD REPORT

PAYLOAD and REPORT are inherited descriptors (bubblewrap started directly) or, on
a sandbox backend that passes no descriptors (:mod:`._code_runs`), paths: the job
file, opened and unlinked here before any candidate code exists, and the
host-made write-only report file, opened for appending.  A backend's run may
outlive one job (pooled containers), so in that mode the job first looks at the
places the host does not empty: files in ``/dev/shm`` and ``/dev/mqueue`` and
System V shared memory, message queues and semaphores (:func:`_left_behind`;
under bubblewrap each run has its own).  Should an earlier job have left anything
there, it exits with :data:`LEFT_BEHIND` before reading its job, and the host runs
the job again in a new run (:mod:`._code_runs`).  Removing the leftovers here did
not do: a directory made read-only kept its files, and a job that left 200,000
empty files made every later job spend seconds of its own time limit on them.

It is started by file path -- not ``-m`` (that would import ``pytest_ifbench``
and put the package on ``sys.path`` inside the sandbox) and not from a string
(so the child-side code is ordinary, linted, testable source).  ``-P`` keeps
this file's directory off ``sys.path``; the flags are discussed in the package
docstring.  Standard library only.

This module does nothing but load :mod:`._confine` and :mod:`._harness` from
its own directory under private names (not registered in ``sys.modules``) and
with a **private copy of the builtins**, then hand over.  Two reasons:

* candidate code that monkeypatches ``builtins`` (``builtins.len = ...``)
  must not break the harness or switch off the audit hook, whose code looks
  builtins up in its own copy;
* in script mode the harness empties ``__main__``'s namespace and runs the
  candidate there, which is this file's namespace -- so nothing here may look
  up a global after handing over (the hand-over is the last thing it does).
"""

import builtins
import importlib.util
import os
import sys


def _load(name, filename, private_builtins):
    spec = importlib.util.spec_from_file_location(name, filename)
    module = importlib.util.module_from_spec(spec)
    module.__dict__["__builtins__"] = private_builtins  # exec_module keeps an existing __builtins__
    spec.loader.exec_module(module)
    return module


def _descriptor(arg, flags, unlink):
    """``arg`` as a descriptor: an inherited one (digits) or the file at that path, opened now."""
    if arg.isdigit():
        return int(arg)
    fd = os.open(arg, flags)
    if unlink:
        os.unlink(arg)
    return fd


#: Exit status of a pooled job that found what an earlier job of its run left (see the module doc).
LEFT_BEHIND = 121
#: The places a pooled run keeps between jobs that the host cannot empty itself.
SHARED_DIRS = ("/dev/shm", "/dev/mqueue")


def _left_behind():
    """Whether an earlier job of this run left files in :data:`SHARED_DIRS` or System V shared memory,
    message queues or semaphores."""
    for top in SHARED_DIRS:
        try:
            if os.listdir(top):
                return True
        except OSError:
            continue
    for kind in ("shm", "msg", "sem"):
        try:
            with open(f"/proc/sysvipc/{kind}") as fh:
                if len(fh.read().splitlines()) > 1:
                    return True
        except OSError:
            continue
    return False


def main(argv):
    """``argv`` = [this file, payload fd or path, report fd or path]."""
    if not argv[1].isdigit() and _left_behind():  # before the job is even opened: it runs again elsewhere
        os._exit(LEFT_BEHIND)
    payload = _descriptor(argv[1], os.O_RDONLY, True)
    report = _descriptor(argv[2], os.O_WRONLY | os.O_APPEND, False)
    here = os.path.dirname(os.path.abspath(__file__))
    private_builtins = dict(vars(builtins))
    confine = _load("_ifbench_confine", os.path.join(here, "_confine.py"), private_builtins)
    harness = _load("_ifbench_harness", os.path.join(here, "_harness.py"), private_builtins)
    harness.main(payload, report, confine.confine)  # must stay the last statement


if __name__ == "__main__":
    main(sys.argv)
