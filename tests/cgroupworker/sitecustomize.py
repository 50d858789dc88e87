"""Puts each Ray worker of a test's study into a memory cgroup of its own.

On ``PYTHONPATH`` only for ``test_faults``'s out-of-memory study: a Python
process that is a Ray worker (``default_worker.py``), started with
``SEEDSWEEP_TEST_WORKER_CGROUP`` set to a cgroup-v1 memory folder, makes a
child ``w<pid>`` there with ``SEEDSWEEP_TEST_WORKER_LIMIT_MIB`` as its limit and
moves itself in. The kernel's OOM killer then ends that worker, and only it,
when it allocates past the limit. Anything else imports this as a no-op.
"""

import os
import sys

_parent = os.environ.get("SEEDSWEEP_TEST_WORKER_CGROUP")
if _parent and any(arg.endswith("default_worker.py") for arg in sys.argv):
    _mine = os.path.join(_parent, f"w{os.getpid()}")
    os.makedirs(_mine, exist_ok=True)
    with open(os.path.join(_mine, "memory.limit_in_bytes"), "w") as _f:
        _f.write(str(int(os.environ["SEEDSWEEP_TEST_WORKER_LIMIT_MIB"]) << 20))
    with open(os.path.join(_mine, "cgroup.procs"), "w") as _f:
        _f.write(str(os.getpid()))
