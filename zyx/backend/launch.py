"""Kernel launches on a device's in-order queue, with profiling events and a launch count."""
from __future__ import annotations

import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, Callable

from zyx import settings
from zyx.backend import profiling
from zyx.backend.program import build_program
from zyx.backend.timing import event_seconds
from zyx.errors import AllocationError, ZyxError

if TYPE_CHECKING:
    from zyx.backend.cl_device import ClDevice

_launches = 0
_cl: Any = None  # pyopencl, imported on the first prepared launch (an import statement costs per call)

#: One re-entrant lock serializes zyx's runtime state across Python threads: graph
#: realization, kernel argument setting + enqueue, and the contract ops. Lock order is
#: always this lock before a pool's own lock; nothing that runs while a pool lock is held
#: (buffer release from ``__del__``) takes this one, so dropping tensors cannot deadlock.
runtime_lock = threading.RLock()
# The lists of the open ``recording()`` blocks, outermost first; () while none is open or
# inside ``not_recording()``. A tuple, so a block restores its outer state by assignment.
_recordings: tuple[list, ...] = ()


def kernel_count() -> int:
    """Kernels launched so far in this process."""
    return _launches


@contextmanager
def recording() -> Iterator[list]:
    """Collect the launches of the block: yields a list that gets one entry per launch,
    ``(kernel, global size, local size, args, offset, counts)``, so a schedule can be replayed
    without codegen. Blocks nest: an outer block also collects the inner block's launches."""
    global _recordings
    outer, launches = _recordings, []
    _recordings = (*outer, launches)
    try:
        yield launches
    finally:
        _recordings = outer


@contextmanager
def not_recording() -> Iterator[None]:
    """Suspend every open ``recording()`` for the block (a tuner's trial launches are no part of
    the schedule being recorded)."""
    global _recordings
    outer, _recordings = _recordings, ()
    try:
        yield
    finally:
        _recordings = outer


#: A tuner's measurement of one candidate: warm-up launches, then timed ones (``trial_seconds``).
TRIAL_WARMUP, TRIAL_RUNS = 1, 5


def trial_seconds(enqueue: Callable[[], Any]) -> float:
    """Device time of a tuning candidate, what every tuner compares: ``enqueue()`` (returning its event
    or events) run ``TRIAL_WARMUP`` times, then the fastest of ``TRIAL_RUNS``, none of it recorded (trial
    launches are no part of a recorded schedule). The fastest, not the median: other work on the device
    only slows a run down, so the fastest is nearest the candidate's own speed."""
    with not_recording():
        for _ in range(TRIAL_WARMUP):
            event_seconds(enqueue())
        return min(event_seconds(enqueue()) for _ in range(TRIAL_RUNS))


def is_recording() -> bool:
    """Whether launches made now are collected by some ``recording()`` block."""
    return bool(_recordings)


@dataclass(frozen=True)
class CompiledKernel:
    """A built kernel ready to launch on one device."""

    device: ClDevice
    name: str
    cl_kernel: Any
    source: str
    ops: tuple[str, ...] = ()  # the ops fused into it, for the profiler (an IR kernel's op names)
    nbytes: int | None = None  # bytes one launch reads and writes, for the profiler (None: its buffers' sizes)

    @cached_property
    def work_group_size(self) -> int:
        """``CL_KERNEL_WORK_GROUP_SIZE``: the largest local size this kernel allows (read once)."""
        import pyopencl as cl

        return int(self.cl_kernel.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, self.device.cl_device))

    def declare_scalars(self, args: Sequence[Any]) -> None:
        """Tell pyopencl the scalar argument types (from the first launch's NumPy scalars), once:
        its generic ``set_args`` costs far more per scalar argument than the typed one."""
        if "_scalars_declared" not in self.__dict__:
            import numpy as np

            self.cl_kernel.set_scalar_arg_dtypes([a.dtype if isinstance(a, np.generic) else None for a in args])
            self.__dict__["_scalars_declared"] = True  # a frozen dataclass: cached state goes in __dict__


_kernels: dict[tuple[str, str, str, str, Any], CompiledKernel] = {}


def compile_kernel(device: ClDevice, source: str, name: str, options: str = "",
                   ops: tuple[str, ...] = (), nbytes: int | None = None) -> CompiledKernel:
    """The kernel ``name`` of ``source`` built for ``device`` (cached); ``ops`` and ``nbytes`` (what it
    computes, the bytes a launch moves) are what a profile shows of it."""
    key = (device.id, source, options, name, device)  # the device object too: kernels belong to its context
    ck = _kernels.get(key)
    if ck is None:
        with runtime_lock:  # one kernel object per (device, source, name), even across threads
            ck = _kernels.get(key)
            if ck is None:
                import pyopencl as cl

                prg = build_program(device, source, options, name)
                ck = CompiledKernel(device, name, cl.Kernel(prg, name), source, ops, nbytes)
                _kernels[key] = ck
    return ck


def launch(
    kernel: CompiledKernel,
    global_size: Sequence[int],
    local_size: Sequence[int] | None,
    args: Sequence[Any],
    wait_for: Sequence[Any] | None = None,
    offset: Sequence[int] | None = None,
    counts: bool = True,
) -> Any:
    """Enqueue ``kernel`` and return its profiling event (asynchronous); ``offset`` is the
    global work offset (``get_global_id`` starts there). ``counts=False`` for the second launch
    of one kernel split in two (whole work-groups, then the rest): ``kernel_count`` counts kernels."""
    import pyopencl as cl

    global _launches
    device = kernel.device
    host_start = profiling.now_ns() if profiling._sinks else 0
    try:
        with runtime_lock:  # a kernel object's arguments are shared state until enqueued
            kernel.declare_scalars(args)
            kernel.cl_kernel.set_args(*args)
            event = cl.enqueue_nd_range_kernel(
                device.queue, kernel.cl_kernel, tuple(global_size),
                tuple(local_size) if local_size is not None else None,
                global_work_offset=tuple(offset) if offset is not None else None, wait_for=wait_for,
            )
    except cl.MemoryError as exc:
        raise AllocationError(f"launch of {kernel.name} on {device} ran out of memory: {exc}") from None
    except cl.Error as exc:
        raise ZyxError(
            f"launch of {kernel.name} on {device} failed (global {tuple(global_size)}, "
            f"local {local_size}): {exc}"
        ) from None
    _launches += counts
    if profiling._sinks:
        nbytes = profiling.buffer_bytes(args) if kernel.nbytes is None else kernel.nbytes
        profiling.note_kernel(kernel.name, device, host_start, event, nbytes, kernel.ops, counts)
    if _recordings:
        entry = (kernel, tuple(global_size), None if local_size is None else tuple(local_size), tuple(args),
                 None if offset is None else tuple(offset), counts)
        for launches in _recordings:
            launches.append(entry)
    if settings.DEBUG >= 1:
        ms = event_seconds(event) * 1e3
        at = f" offset={tuple(offset)}" if offset is not None and any(offset) else ""
        print(f"zyx: {kernel.name:<32} global={tuple(global_size)} local={local_size}{at} {ms:9.3f} ms "
              f"on {device.id}", file=sys.stderr)
    return event


def launch_prepared(kernel: CompiledKernel, global_size: tuple, local_size: tuple | None, args: Sequence[Any],
                    offset: tuple | None, counts: bool) -> None:
    """``launch`` for a kernel launched before with arguments of the same types (a replayed plan):
    no lock taken (the caller holds ``runtime_lock``), no event kept, nothing but the count
    noted, unless launches are being recorded, profiled or printed (then it is ``launch``)."""
    global _launches, _cl
    if _recordings or settings.DEBUG >= 1 or profiling._sinks:
        launch(kernel, global_size, local_size, args, offset=offset, counts=counts)
        return
    cl = _cl
    if cl is None:
        import pyopencl as cl

        _cl = cl
    try:
        kernel.cl_kernel.set_args(*args)
        cl.enqueue_nd_range_kernel(kernel.device.queue, kernel.cl_kernel, global_size, local_size,
                                   global_work_offset=offset)
    except cl.Error:
        launch(kernel, global_size, local_size, args, offset=offset, counts=counts)  # raises zyx's error
        return
    _launches += counts

