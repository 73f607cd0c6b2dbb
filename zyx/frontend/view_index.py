"""Basic indexing on views: a normalized index (ints, slices, None, ``...``) and the ``View`` it selects.

Pure functions of shapes and views, below every op module: movement, indexing, contract ops and the
gradient rules all read an index the same way.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from zyx.errors import IndexOutOfRange, ShapeError
from zyx.ir.variable import BOUND
from zyx.ir.view import View


def infer_shape(shape: tuple[int, ...], numel: int, old: tuple[int, ...]) -> tuple[int, ...]:
    if shape.count(-1) > 1:
        raise ShapeError(f"reshape: only one dimension can be -1, got {shape}")
    if any(s < -1 for s in shape):
        raise ShapeError(f"reshape: invalid size in {shape}")
    if -1 in shape:
        known = math.prod(s for s in shape if s != -1)
        if known == 0 or numel % known:
            raise ShapeError(f"reshape: cannot reshape {old} ({numel} elements) to {shape}")
        shape = tuple(numel // known if s == -1 else s for s in shape)
    if math.prod(shape) != numel:
        raise ShapeError(f"reshape: cannot reshape {old} ({numel} elements) to {shape}")
    return shape


def expand_index(ndim: int, index: Any) -> list[Any]:
    """A basic index as a list of ints, slices and None, its ``...`` spelled out as full slices."""
    items = index if isinstance(index, tuple) else (index,)
    if sum(1 for it in items if it is Ellipsis) > 1:
        raise IndexOutOfRange("an index can only have a single ellipsis ('...')")  # an IndexError, as PyTorch
    consumed = sum(1 for it in items if it is not None and it is not Ellipsis)
    if consumed > ndim:
        raise IndexOutOfRange(f"too many indices for a tensor of rank {ndim}: got {consumed}")
    expanded: list[Any] = []
    for it in items:
        if it is Ellipsis:
            expanded.extend([slice(None)] * (ndim - consumed))
        else:
            expanded.append(it)
    return expanded


def basic_index(view: View, index: Any) -> View:
    """The view selected by a basic index: ints, slices (any non-zero step), None and ``...``."""
    expanded = expand_index(view.ndim, index)
    dim = 0
    for it in expanded:
        if it is None:
            view = view.unsqueeze(dim)
            dim += 1
        elif isinstance(it, slice):
            if it.step == 0:
                raise ShapeError("slice step cannot be zero")
            start, stop, step = it.indices(view.shape[dim])
            view = view.slice(dim, start, stop, step)
            dim += 1
        elif isinstance(it, (int, np.integer)) and not isinstance(it, bool) or type(it) in BOUND:  # t, t + 1: by value
            size = view.shape[dim]
            i = int(it)
            if not -size <= i < size:
                raise IndexOutOfRange(f"index {i} is out of bounds for dim {dim} with size {size}")
            view = view.select(dim, i % size)
        else:
            # an IndexError (and a ShapeError), as PyTorch raises for x[1.5]
            raise IndexOutOfRange(f"unsupported index {it!r}: only ints, slices, None and ... are supported")
    return view
