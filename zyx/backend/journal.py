"""The capture journal: what the device side of a captured call did, for a plan to replay.

While a journal is open (``capture()``, on the thread that opened it), the backend notes in it
every buffer it allocates, every buffer written from the host, every host read, every launch
(through ``launch.recording()``) and every scalar launch argument that stands for a run-time
value (``note_param``). A plan (``graph.plan``) is then built from the launches: each launch
argument is named as an allocation of the capture (a fresh buffer at replay), an input, a
constant or a run-time value. What a launch list cannot replay (a host read the Python code may
have branched on, random numbers drawn from the host-side generator, a launch with an error
slot of its own) marks the journal ``unreplayable`` with the reason.
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
        self.params: dict[int, Any] = {}  # id(scalar argument) -> what it stands for
        self.unreplayable: str | None = None
        self.assigned: list[tuple[Any, Any, Any]] = []  # (tensor, data and view before) per rebinding
        self.tainted: set[Any] = set()  # variables whose bound value Python code read
        self.created: set[int] = set()  # id of every graph node made during the capture
        # pending values made before the capture that it realized (a lazy zeros() cache, say): a
        # replay must not compute them again, so such a capture is redone once they are realized
        self.prior_realized = 0
        self.launches: list = []
        self.checks: list[tuple[Any, Any]] = []  # (check, value): a replay is valid while check() == value
        self.host_params: dict[int, tuple[Any, Any]] = {}  # id(scalar argument) -> (it, fn giving it at replay)
        self.hooks: list[Any] = []  # Python bookkeeping a replay runs before its launches
        self.again = False  # capture the next call again (this one set up state a replay must not repeat)


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
    """Scalar launch argument ``arg`` (a NumPy scalar) was made from ``source`` (a graph constant). A
    constant whose value knows how a replay recomputes it (a jitted function's number,
    ``frontend.traced_scalar``: ``value.replay_getter``) becomes a host parameter."""
    j = active()
    if j is not None:
        getter = getattr(getattr(source, "value", None), "replay_getter", None)
        if getter is not None:
            j.host_params[id(arg)] = (arg, getter)
        j.params[id(arg)] = (arg, source)


def note_check(check: Any, value: Any) -> None:
    """The open capture (if any) holds numbers Python computed from state that may change: a plan of it
    replays only while ``check()`` still returns ``value`` (an optimizer's learning rate)."""
    j = active()
    if j is not None:
        j.checks.append((check, value))


def note_host_param(arg: Any, fn: Any) -> None:
    """Scalar launch argument ``arg`` is Python-side state that changes between calls (an optimizer's bias
    correction): a replay launches with ``fn()`` in its place, after running the hooks."""
    j = active()
    if j is not None:
        j.host_params[id(arg)] = (arg, fn)


def note_replay_hook(hook: Any) -> None:
    """``hook()`` redoes the Python bookkeeping of the captured call (an optimizer's step counts) at each
    replay, before its launches."""
    j = active()
    if j is not None:
        j.hooks.append(hook)


def capture_again() -> None:
    """The open capture set up state that later calls find ready (an optimizer's first step creates its
    moments): its launches are not those of the next calls, so the next call captures again."""
    j = active()
    if j is not None:
        j.again = True


def unreplayable(reason: str) -> None:
    """Mark the open capture (if any) as one a launch list cannot replay."""
    j = active()
    if j is not None and j.unreplayable is None:
        j.unreplayable = reason


def note_assign(tensor: Any, before: Any, view: Any) -> None:
    """``tensor`` was rebound to new values in place (``Tensor._assign``); ``before``: its old data,
    read through ``view``."""
    j = active()
    if j is not None:
        j.assigned.append((tensor, before, view))


def note_taint(variable: Any) -> None:
    """Python code read ``variable``'s bound value: the capture's plan holds only for that value."""
    j = active()
    if j is not None:
        j.tainted.add(variable)


def note_node(node: Any) -> None:
    """A graph node was made during the capture."""
    j = active()
    if j is not None:
        j.created.add(id(node))


def note_realized(node: Any) -> None:
    """A graph node got its buffer during the capture."""
    j = active()
    if j is not None and id(node) not in j.created:
        j.prior_realized += 1
