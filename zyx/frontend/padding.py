"""The non-constant padding modes of ``pad`` (``"reflect"``, ``"replicate"``, ``"circular"``).

Along each padded dim, output position ``o`` reads input position ``src(o - before)``: mirrored
about the end elements (reflect), clamped (replicate) or wrapped (circular). Both ways below move
bits (NaN payloads and -0.0 kept, every dtype) and get PyTorch's gradient (the sum of what each input
element fed):

* small outputs: the source positions are an index map (``zyx.frontend.index_map``), one gather kernel
  over all padded dims that fuses with what reads it;
* large outputs: per padded dim one ``cat`` of the border views (reversed or expanded slices) and the
  input, copies at memory speed (a gather computes and bounds-checks an index per element: 3-6x slower
  than PyTorch's pad on (8, 64, 112, 112), where the copies are 2-3x faster; bench/RESULTS.md).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from zyx import graph
from zyx.errors import ShapeError
from zyx.frontend.elementwise import from_node
from zyx.frontend.index_map import DimMap, apply_maps

MODES = ("constant", "reflect", "replicate", "circular")
CAT_MIN = 1 << 16  # output elements from which the cat copies beat the one gather kernel


def pad_mode(x: Any, per_dim: Sequence[tuple[int, int]], mode: str) -> Any:
    """``x`` padded by ``per_dim[d] = (before, after)`` in ``mode`` (not ``"constant"``); a negative amount
    (reflect, replicate) drops output positions, the others still mirroring/clamping about the input's ends."""
    dims = [d for d, (lo, hi) in enumerate(per_dim) if lo or hi]
    for d in dims:
        _check(x.shape[d], d, *per_dim[d], mode)
    out_shape = tuple(s + lo + hi for s, (lo, hi) in zip(x.shape, per_dim))
    if x.numel() == 0:  # nothing to copy: the output is empty too (another dim is 0)
        return from_node(graph.const(0, x.dtype, out_shape, x.device))
    cropping = any(lo < 0 or hi < 0 for lo, hi in per_dim)
    if math.prod(out_shape) >= CAT_MIN and not cropping:
        for d in dims:
            x = _cat_dim(x, d, *per_dim[d], mode)
        return x
    maps = [DimMap(d, x.shape[d], _sources(x.shape[d], *per_dim[d], mode).reshape(1, -1)) for d in dims]
    return apply_maps(x, maps)


def _cat_dim(x: Any, d: int, lo: int, hi: int, mode: str) -> Any:
    """``x`` padded along ``d`` as one ``cat`` of the left border, ``x`` and the right border."""
    from zyx.frontend.contract_ops import cat  # contract ops build on the movement module that imports this

    n = x.shape[d]

    def part(start: int, stop: int | None, step: int = 1, count: int = 0) -> Any:
        index = [slice(None)] * x.ndim
        index[d] = slice(start, stop, step)
        piece = x[tuple(index)]
        if count:  # replicate: the end element seen ``count`` times
            piece = piece.expand(*[count if k == d else s for k, s in enumerate(piece.shape)])
        return piece

    if mode == "reflect":
        left, right = part(lo, 0, -1), part(n - 2, n - 2 - hi if n - 2 - hi >= 0 else None, -1)
    elif mode == "replicate":
        left, right = part(0, 1, count=lo), part(n - 1, n, count=hi)
    else:
        left, right = part(n - lo, n), part(0, hi)
    return cat([p for p, k in ((left, lo), (x, 1), (right, hi)) if k], d)


def _sources(size: int, lo: int, hi: int, mode: str) -> np.ndarray:
    """The input position each output position of one padded dim reads."""
    pos = np.arange(-lo, size + hi)
    if mode == "replicate":
        return np.clip(pos, 0, size - 1)
    if mode == "circular":
        return pos % size
    period = 2 * (size - 1)  # reflect: mirrored about the first and last elements
    if period == 0:
        return np.zeros_like(pos)
    m = pos % period
    return np.where(m < size, m, period - m)


def _check(size: int, d: int, lo: int, hi: int, mode: str) -> None:
    if size + lo + hi < 0:
        raise ShapeError(f"pad: padding ({lo}, {hi}) of dim {d} of size {size} leaves an output size "
                         f"{size + lo + hi}; expected at least 0")
    if mode == "reflect" and (lo >= size or hi >= size):
        raise ShapeError(f"pad: reflect padding ({lo}, {hi}) of dim {d} must be less than its size {size}")
    if mode == "circular" and (lo > size or hi > size):
        raise ShapeError(f"pad: circular padding ({lo}, {hi}) of dim {d} must be at most its size {size}")
    if mode == "replicate" and size == 0:
        raise ShapeError(f"pad: replicate padding of dim {d} needs a non-empty dim, got size 0")
