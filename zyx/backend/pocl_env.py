"""PoCL settings zyx chooses before the OpenCL platforms load (PoCL reads its environment once).

**Worker affinity.** PoCL's CPU driver runs kernels on one worker thread per core, and left alone
the OS may stack those workers on one core (``/proc/<pid>/task/*/stat`` shows them on the same
vCPU), and a kernel then runs as if PoCL had one thread; pinned (``POCL_AFFINITY=1``: worker i on
CPU i) it uses every core. PoCL aborts the process when pinning fails (worker i's CPU not allowed, e.g. under
``taskset`` or a cpuset), so zyx pins only when the process may run on every CPU 0..n-1 of the
workers PoCL will start. A ``POCL_AFFINITY`` the user set is left alone (``POCL_AFFINITY=0`` opts out).
"""
from __future__ import annotations

import os
import sys
from collections.abc import MutableMapping


def pinning_is_safe(allowed: set[int], cpu_count: int, max_threads: str | None) -> bool:
    """Whether PoCL can pin its workers: worker i goes to CPU i for i below its thread count (the
    CPU count, or ``POCL_MAX_PTHREAD_COUNT`` when that is lower), and each of those CPUs is allowed."""
    workers = cpu_count
    if max_threads is not None and max_threads.strip():
        try:
            workers = min(workers, int(max_threads))
        except ValueError:
            return False  # PoCL's reading of an odd value is unknown: do not pin
    return workers >= 2 and set(range(cpu_count)) <= allowed  # workers <= cpu_count: their CPUs are among these


def pin_pocl_workers(environ: MutableMapping[str, str] | None = None) -> bool:
    """Set ``POCL_AFFINITY=1`` in ``environ`` (``os.environ``) when the user has not set it and pinning
    is safe here (Linux, every CPU allowed); True when it was set. Call before the platforms load."""
    env = os.environ if environ is None else environ
    if "POCL_AFFINITY" in env or not sys.platform.startswith("linux"):
        return False
    try:
        allowed = os.sched_getaffinity(0)
    except (AttributeError, OSError):
        return False
    if not pinning_is_safe(allowed, os.cpu_count() or 0, env.get("POCL_MAX_PTHREAD_COUNT")):
        return False
    env["POCL_AFFINITY"] = "1"
    return True
