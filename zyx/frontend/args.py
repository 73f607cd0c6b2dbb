"""Argument helpers shared by the frontend modules: shape arguments and the device of an op."""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from zyx import graph
from zyx.errors import ShapeError
from zyx.frontend.base import TensorBase
from zyx.ir.variable import BOUND


def shape_arg(shape: Sequence[Any], what: str = "shape", variables: bool = False) -> tuple[int, ...]:
    """``f(2, 3)`` and ``f((2, 3))`` both give ``(2, 3)``; sizes must be ints. A bound ``zyx.Variable``
    is read as its value (a reported read: a capture keys its plan by it), or, with ``variables``
    (ops that take it as a variable size), raises ``ShapeError`` for the caller to take that path."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    if all(type(s) is int for s in shape):  # the common case, without the checks below
        return tuple(shape)
    out = []
    for s in shape:
        if isinstance(s, bool) or not isinstance(s, (int, np.integer)):
            if type(s) in BOUND and not variables:
                out.append(int(s))
                continue
            raise ShapeError(f"{what} entries must be ints, got {s!r} in {tuple(shape)}")
        out.append(int(s))
    return tuple(out)


def device_of(*xs: Any, out_bytes: int = 0):
    """The device of a kernel on ``xs``: theirs; for mixed devices ``graph.choose_device`` among the
    devices of the pinned operands (``Tensor.pinned``: one pinned device wins), or among all when none
    is pinned."""
    ts = [x for x in xs if isinstance(x, TensorBase)]
    first = ts[0].device
    if all(t.device is first for t in ts):
        return first
    # bytes an operand brings: its elements without broadcast repeats
    held = [(t.device, math.prod(d for d, st in zip(t.shape, t._view.strides) if st) * t.dtype.itemsize)
            for t in ts]
    pinned = [t.device for t in ts if t._data.pinned]
    return graph.choose_device(held, out_bytes, pinned or None)
