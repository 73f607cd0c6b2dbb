"""The capture journal: what the device side of a captured call did, for a plan to replay.

While a journal is open (``capture()``, on the thread that opened it), the backend notes in it
every buffer it allocates, every buffer written from the host, every host read, every launch
(through ``launch.recording()``) and every scalar launch argument that stands for a run-time
value (``note_param``, ``note_host_param``). It holds buffers and launches only: the capture
layer (``frontend.capture``) keeps the Python side of a call and interprets the journal, and a
plan (``graph.plan``) is built from its launches: each launch argument is named as an allocation
of the capture (a fresh buffer at replay), an input, a constant or a run-time value. What a launch
list cannot replay (a host read the Python code may have branched on, random numbers drawn from
the host-side generator, a launch with an error slot of its own) marks the journal
``unreplayable`` with the reason.
"""
from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_open: Journal | None = None  # the journal being written, or None (one at a time, process-wide)


class Journal:
    """The notes of one capture (see the module docstring)."""

    def __init__(self) -> None:
        self.thread = threading.get_ident()
        # Strong references: a buffer of the capture is never recycled within it, so each OpenCL
        # memory object met among the launch arguments stands for exactly one allocation.
        self.allocs: dict[int, Any] = {}  # id(cl memory) -> Buffer allocated during the capture
        self.written: set[int] = set()  # id(cl memory) of buffers written from the host
        self.params: dict[int, Any] = {}  # id(scalar argument) -> (it, what it stands for: opaque here)
        self.unreplayable: str | None = None
        self.launches: list = []
        self.host_params: dict[int, tuple[Any, Any]] = {}  # id(scalar argument) -> (it, fn giving it at replay)


def is_recording() -> bool:
    """Whether a journal is open (on any thread): the cheap test before a note."""
    return _open is not None


def active() -> Journal | None:
    """The open journal when the calling thread is the one capturing, else None."""
    j = _open
    if j is not None and j.thread == threading.get_ident():
        return j
    return None


@contextmanager
def capture() -> Iterator[Journal]:
    """Open a journal for the block (captures do not nest: an inner one raises)."""
    global _open
    from zyx.backend.launch import recording, runtime_lock

    with runtime_lock:  # another thread's launches must not land in this capture
        if _open is not None:
            raise RuntimeError("a capture is already open (zyx.Tape/zyx.jit captures do not nest)")
        j = _open = Journal()
        try:
            with recording() as launches:
                j.launches = launches
                yield j
        finally:
            _open = None


def note_alloc(buf: Any) -> None:
    j = active()
    if j is not None and buf.cl is not None:
        j.allocs[id(buf.cl)] = buf


def note_write(buf: Any) -> None:
    j = active()
    if j is not None and buf.cl is not None:
        j.written.add(id(buf.cl))


def note_read() -> None:
    unreplayable("device values were read back to the host (the Python code may depend on them)")


def note_param(arg: Any, source: Any) -> None:
    """Scalar launch argument ``arg`` (a NumPy scalar) was made from ``source`` (a graph constant, a
    variable's argument: ``graph.plan`` reads it). A source whose value knows how a replay recomputes
    it (a jitted function's number, ``frontend.traced_scalar``: ``value.replay_getter``) becomes a host
    parameter."""
    j = active()
    if j is not None:
        getter = getattr(getattr(source, "value", None), "replay_getter", None)
        if getter is not None:
            j.host_params[id(arg)] = (arg, getter)
        j.params[id(arg)] = (arg, source)


def note_host_param(arg: Any, fn: Any) -> None:
    """Scalar launch argument ``arg`` is Python-side state that changes between calls (an optimizer's bias
    correction): a replay launches with ``fn()`` in its place, after running the hooks."""
    j = active()
    if j is not None:
        j.host_params[id(arg)] = (arg, fn)


def unreplayable(reason: str) -> None:
    """Mark the open capture (if any) as one a launch list cannot replay."""
    j = active()
    if j is not None and j.unreplayable is None:
        j.unreplayable = reason
