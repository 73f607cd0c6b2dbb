"""The graph's part of a capture: which nodes it made, and how many older pending nodes it realized.

A captured call that realizes values pending from before it (a lazy ``zeros()`` cache, say) cannot
be replayed as recorded: a replay would compute them again. The capture layer
(``frontend.capture``) reads ``prior_realized`` and captures such a call again once those values are
realized. ``graph.build`` notes every node it makes, ``graph.realization`` every node it realizes,
while a log is open (``current``, on the thread that opened it).
"""
from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class NodeLog:
    """The nodes one capture made and the older ones it realized (see the module docstring)."""

    __slots__ = ("thread", "created", "prior_realized")

    def __init__(self) -> None:
        self.thread = threading.get_ident()
        self.created: set[int] = set()  # id of every graph node made during the capture
        self.prior_realized = 0  # nodes made before the capture that it realized


current: NodeLog | None = None  # the open log (one at a time: captures do not nest)


@contextmanager
def opened() -> Iterator[NodeLog]:
    """Open a log for the block (inside ``backend.journal.capture``, which refuses nesting)."""
    global current
    log = current = NodeLog()
    try:
        yield log
    finally:
        current = None


def note_made(node: Any) -> None:
    """``node`` was made (``graph.build``)."""
    log = current
    if log is not None and log.thread == threading.get_ident():
        log.created.add(id(node))


def note_realized(node: Any) -> None:
    """``node`` got its buffer (``graph.realization``)."""
    log = current
    if log is not None and log.thread == threading.get_ident() and id(node) not in log.created:
        log.prior_realized += 1
