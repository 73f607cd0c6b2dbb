"""Where a tensor's values lie in memory: what a kernel reading it streams along.

A realized tensor's layout is its view's strides. A pending elementwise value has no layout of its own:
the kernel that reads it computes it in place, reading its operands, so it lies as its largest operand does
(a BatchNorm-ReLU of a channels-last convolution output is channels-last). Consumers that may choose their
loop order (pooling, the direct convolution) ask here, so a chain of them keeps one layout and every kernel
reads and writes consecutive addresses instead of gathering across work items.
"""
from __future__ import annotations

import math
from typing import Any

from zyx.graph.node import BOUNDARIES, LazyNode
from zyx.ir.view import View

#: pending elementwise nodes followed at most (a BatchNorm-ReLU chain is ~6 deep)
MAX_DEPTH = 16


def _read_view(node: LazyNode, view: View) -> View | None:
    """The view (of ``view``'s shape) through which the value ``node`` read as ``view`` reads its storage:
    ``view`` itself when ``node`` is stored (realized, a reduce, a copy, a kernel of its own), else, for a
    pending elementwise node read densely or through a permutation, its largest operand's (permuted alike);
    None when no single view says."""
    for _ in range(MAX_DEPTH):
        if node.buffer is not None or node.op in BOUNDARIES or not node.srcs:
            return view
        order = _permutation(view, node.shape)
        if order is None:
            return None
        best, size = None, 0
        for s in node.srcs:
            b = s.base
            if b is None or s.view is None or s.view.shape != node.shape:
                continue
            n = math.prod(b.shape)
            if n > size:
                best, size = s, n
        if best is None:
            return None
        node, view = best.base, best.view.permute(order)
    return None


def _permutation(view: View, shape: tuple[int, ...]) -> tuple[int, ...] | None:
    """The dims ``order`` with ``View.contiguous(shape).permute(order)`` reading as ``view`` does, or None
    when ``view`` is not a permutation of the dense ``shape``."""
    if view.offset != 0 or view.ndim != len(shape):
        return None
    dense = View.contiguous(shape).strides
    by_stride = {(dense[j], shape[j]): j for j in range(len(shape)) if shape[j] != 1}
    ones = iter(j for j in range(len(shape)) if shape[j] == 1)
    order = []
    for d, st in zip(view.shape, view.strides):
        j = next(ones, None) if d == 1 else by_stride.get((st, d))
        if j is None:
            return None
        order.append(j)
    return tuple(order) if len(set(order)) == len(order) else None


def is_channels_last(t: Any) -> bool:
    """Whether ``t`` (N, C, *spatial), with more than one channel, lies channels-last in memory: as
    (N, *spatial, C) dense, read directly or through the pending elementwise work that computes it."""
    if t.ndim < 3 or not all(type(d) is int for d in t.shape):  # a variable size: no fixed layout
        return False
    if t.shape[0] == 0 or t.shape[1] <= 1 or math.prod(t.shape[2:]) <= 1:
        return False
    view = _read_view(t._data, t._view)
    if view is None:
        return False
    return view.permute((0, *range(2, t.ndim), 1)).is_dense


__all__ = ["is_channels_last"]
