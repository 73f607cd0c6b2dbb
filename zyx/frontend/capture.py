"""A capture (``zyx.jit``, ``Tape``): what one captured call records, for a plan to replay it.

One record per layer, held together by ``Capture``: the backend's journal (``backend.journal``:
buffers and launches), the graph's node log (``graph.node_log``: nodes made, older ones realized)
and, here, the Python side of the call: numbers Python code computed from state that may change
(checks), bookkeeping a replay redoes (hooks), tensors rebound in place, variables whose bound
value Python code read. ``frontend.tape`` interprets the three when the call returns.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from zyx.backend import journal
from zyx.backend.journal import Journal
from zyx.graph import node_log
from zyx.graph.node_log import NodeLog
from zyx.ir import variable

__all__ = ["Capture", "active", "capture", "capture_again", "is_open", "note_assign", "note_check",
           "note_replay_hook", "note_taint"]


class Capture:
    """The records of one captured call (see the module docstring)."""

    __slots__ = ("journal", "nodes", "thread", "checks", "hooks", "assigned", "tainted", "again")

    def __init__(self, j: Journal, nodes: NodeLog) -> None:
        self.journal = j
        self.nodes = nodes
        self.thread = threading.get_ident()
        self.checks: list[tuple[Any, Any]] = []  # (check, value): a replay is valid while check() == value
        self.hooks: list[Callable[[], Any]] = []  # Python bookkeeping a replay runs before its launches
        self.assigned: list[tuple[Any, Any, Any]] = []  # (tensor, data and view before) per rebinding
        self.tainted: set[Any] = set()  # variables whose bound value Python code read
        self.again = False  # capture the next call again (this one set up state a replay must not repeat)


_open: Capture | None = None  # the capture under way, or None (one at a time, process-wide)


def is_open() -> bool:
    """Whether a capture is under way (on any thread): the cheap test before a note."""
    return _open is not None


def active() -> Capture | None:
    """The open capture when the calling thread is the one capturing, else None."""
    c = _open
    if c is not None and c.thread == threading.get_ident():
        return c
    return None


@contextmanager
def capture() -> Iterator[Capture]:
    """Open a capture for the block (captures do not nest: an inner one raises)."""
    global _open
    with journal.capture() as j, node_log.opened() as nodes:
        c = _open = Capture(j, nodes)
        try:
            yield c
        finally:
            _open = None


def note_check(check: Callable[[], Any], value: Any) -> None:
    """The open capture (if any) holds numbers Python computed from state that may change: a plan of it
    replays only while ``check()`` still returns ``value`` (an optimizer's learning rate)."""
    c = active()
    if c is not None:
        c.checks.append((check, value))


def note_replay_hook(hook: Callable[[], Any]) -> None:
    """``hook()`` redoes the Python bookkeeping of the captured call (an optimizer's step counts) at each
    replay, before its launches."""
    c = active()
    if c is not None:
        c.hooks.append(hook)


def capture_again() -> None:
    """The open capture set up state that later calls find ready (an optimizer's first step creates its
    moments): its launches are not those of the next calls, so the next call captures again."""
    c = active()
    if c is not None:
        c.again = True


def note_assign(tensor: Any, before: Any, view: Any) -> None:
    """``tensor`` was rebound to new values in place (``Tensor._assign``); ``before``: its old data,
    read through ``view``."""
    c = active()
    if c is not None:
        c.assigned.append((tensor, before, view))


def note_taint(var: variable.Variable) -> None:
    """Python code read ``var``'s bound value: the capture's plan holds only for that value."""
    c = active()
    if c is not None:
        c.tainted.add(var)


variable.taint_hook = note_taint  # a bound value read by Python code keys the capture by it
