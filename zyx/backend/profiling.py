"""What ``zyx.profiler`` collects: while a profile is open, the backend notes each kernel launch, program
build and copy here as a ``RawEvent``. Device times are read from the launches' OpenCL profiling events
when the profile closes (reading one waits for its kernel, so nothing is read while work is queued).

The backend calls ``note`` only when ``_sinks`` is non-empty: with no profile open the cost is one test.
"""
from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_sinks: tuple[list[RawEvent], ...] = ()  # the record lists of the open profiles, outermost first
now_ns = time.perf_counter_ns  # the host clock every record uses


class RawEvent:
    """One launch, build or copy as the backend saw it: host times in ``perf_counter_ns`` nanoseconds,
    and for a kernel its OpenCL events (two when it ran as whole work-groups plus a remainder)."""

    __slots__ = ("kind", "name", "device", "host_start", "host_end", "cl_events", "nbytes", "ops", "detail")

    def __init__(self, kind: str, name: str, device: Any, host_start: int, host_end: int,
                 cl_events: list[Any] | None = None, nbytes: int = 0, ops: tuple[str, ...] = (),
                 detail: str = "") -> None:
        self.kind = kind
        self.name = name
        self.device = device
        self.host_start = host_start
        self.host_end = host_end
        self.cl_events = cl_events
        self.nbytes = nbytes
        self.ops = ops
        self.detail = detail


def active() -> bool:
    """Whether some profile is open (the backend notes what it does)."""
    return bool(_sinks)


@contextmanager
def collecting() -> Iterator[list[RawEvent]]:
    """Collect the block's launches, builds and copies: yields the list they are appended to. Blocks
    nest; an outer block also gets the inner block's records."""
    global _sinks
    records: list[RawEvent] = []
    _sinks = (*_sinks, records)
    try:
        yield records
    finally:
        _sinks = tuple(s for s in _sinks if s is not records)


def note(record: RawEvent) -> None:
    """Add ``record`` to every open profile."""
    for sink in _sinks:
        sink.append(record)


def note_kernel(name: str, device: Any, host_start: int, event: Any, nbytes: int, ops: tuple[str, ...],
                counts: bool) -> None:
    """A kernel launch. ``counts=False`` is the second launch of one kernel (its remainder work-groups): it
    joins the kernel's record, so kernel events match ``kernel_count()``."""
    end = now_ns()
    for sink in _sinks:
        last = sink[-1] if sink else None
        if not counts and last is not None and last.kind == "kernel" and last.name == name:
            last.cl_events.append(event)  # type: ignore[union-attr]
            last.host_end = end
        else:
            sink.append(RawEvent("kernel", name, device, host_start, end, [event], nbytes, ops))


def buffer_bytes(args: Any) -> int:
    """Bytes of the device buffers among a launch's arguments (a pooled buffer counts its capacity): what
    a kernel with no better count of its traffic reports."""
    total = 0
    for a in args:
        size = getattr(a, "size", None)
        if isinstance(size, int) and hasattr(a, "int_ptr"):
            total += size
    return total
