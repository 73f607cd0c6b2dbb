"""PoCL settings zyx chooses before the OpenCL platforms load (PoCL reads its environment once).

**Worker affinity.** PoCL's CPU driver runs kernels on one worker thread per core, and left alone
the OS may stack those workers on one core (``/proc/<pid>/task/*/stat`` shows them on the same
vCPU), and a kernel then runs as if PoCL had one thread; pinned (``POCL_AFFINITY=1``: worker i on
CPU i) it uses every core. PoCL aborts the process when pinning fails (worker i's CPU not allowed, e.g. under
``taskset`` or a cpuset), so zyx pins only when the process may run on every CPU 0..n-1 of the
workers PoCL will start. A ``POCL_AFFINITY`` the user set is left alone (``POCL_AFFINITY=0`` opts out).

**Ranks sharing a machine.** Under ``torchrun`` (or anything that sets ``LOCAL_RANK`` and
``LOCAL_WORLD_SIZE``) several zyx processes run on one machine; each PoCL would start a worker per
core and the ranks would fight over every core. So each local rank takes its own contiguous share
of the CPUs the process may run on (``os.sched_setaffinity``, which PoCL's workers inherit) and
PoCL starts that many workers (``POCL_MAX_PTHREAD_COUNT``, unless the user set it). A share is not
every CPU, so ``pin_pocl_workers`` then leaves pinning off (it would put worker i on CPU i, outside it).
"""
from __future__ import annotations

import os
import sys
from collections.abc import MutableMapping


def core_share(allowed: set[int], local_rank: int, local_world_size: int) -> set[int]:
    """Local rank ``local_rank``'s CPUs out of ``allowed``: the sorted CPUs cut into ``local_world_size``
    contiguous runs, the earlier ones a CPU longer when they do not divide evenly; with more ranks than
    CPUs, ranks share CPUs round-robin (``rank % len(allowed)``)."""
    cpus = sorted(allowed)
    if local_world_size > len(cpus):
        return {cpus[local_rank % len(cpus)]}
    size, extra = divmod(len(cpus), local_world_size)
    start = local_rank * size + min(local_rank, extra)
    return set(cpus[start:start + size + (local_rank < extra)])


def share_cores_among_local_ranks(environ: MutableMapping[str, str] | None = None) -> set[int] | None:
    """Limit this process to its local rank's share of the CPUs (``core_share``) when ``LOCAL_RANK`` and
    ``LOCAL_WORLD_SIZE`` > 1 are set (Linux), and set ``POCL_MAX_PTHREAD_COUNT`` to its size unless the user
    set it; returns the share, or None when nothing changed. Call before the platforms load."""
    env = os.environ if environ is None else environ
    try:
        local_rank, local_world = int(env.get("LOCAL_RANK", "")), int(env.get("LOCAL_WORLD_SIZE", ""))
    except ValueError:
        return None
    if local_world < 2 or not 0 <= local_rank < local_world or not sys.platform.startswith("linux"):
        return None
    try:
        share = core_share(os.sched_getaffinity(0), local_rank, local_world)
        os.sched_setaffinity(0, share)
    except (AttributeError, OSError):
        return None
    env.setdefault("POCL_MAX_PTHREAD_COUNT", str(len(share)))
    return share


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
