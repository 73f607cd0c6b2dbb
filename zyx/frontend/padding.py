"""The non-constant padding modes of ``pad`` (``"reflect"``, ``"replicate"``, ``"circular"``).

Each padded dim is three views of the input: the left border (a reversed slice for reflect, the first
element expanded for replicate, the last elements for circular), the input, and the right border. Each
is zero-padded to the output size (a lazy pad node) and one ``where`` on the position picks the part
that owns it, so the result is one fused kernel per dim that moves bits (NaN payloads and -0.0 kept,
every dtype), and the gradient, by composition, sums what each input element fed, as PyTorch's.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from zyx import dtype as dtypes
from zyx import graph
from zyx.errors import ShapeError
from zyx.frontend.elementwise import from_node, where

MODES = ("constant", "reflect", "replicate", "circular")


def pad_mode(x: Any, per_dim: Sequence[tuple[int, int]], mode: str) -> Any:
    """``x`` padded by ``per_dim[d] = (before, after)`` (non-negative) in ``mode`` (not ``"constant"``)."""
    for d in reversed(range(x.ndim)):
        lo, hi = per_dim[d]
        if lo or hi:
            x = _pad_dim(x, d, lo, hi, mode)
    return x


def _pad_dim(x: Any, d: int, lo: int, hi: int, mode: str) -> Any:
    size = x.shape[d]
    if mode == "reflect" and (lo >= size or hi >= size):
        raise ShapeError(f"pad: reflect padding ({lo}, {hi}) of dim {d} must be less than its size {size}")
    if mode == "circular" and (lo > size or hi > size):
        raise ShapeError(f"pad: circular padding ({lo}, {hi}) of dim {d} must be at most its size {size}")
    if mode == "replicate" and size == 0:
        raise ShapeError(f"pad: replicate padding of dim {d} needs a non-empty dim, got size 0")
    if x.numel() == 0:  # nothing to copy: the output is empty too (another dim is 0)
        shape = list(x.shape)
        shape[d] = size + lo + hi
        return from_node(graph.const(0, x.dtype, tuple(shape), x.device))

    def part(start: int, stop: int, step: int = 1) -> Any:
        index = [slice(None)] * x.ndim
        index[d] = slice(start, stop, step)
        return x[tuple(index)]

    def grow(piece: Any, count: int) -> Any:  # replicate: one element seen ``count`` times
        shape = list(piece.shape)
        shape[d] = count
        return piece.expand(*shape)

    if mode == "reflect":
        left = part(lo, 0, -1) if lo else None
        right = part(size - 2, size - 2 - hi, -1) if hi else None
    elif mode == "replicate":
        left = grow(part(0, 1), lo) if lo else None
        right = grow(part(size - 1, size), hi) if hi else None
    else:
        left = part(size - lo, size) if lo else None
        right = part(0, hi) if hi else None
    total = size + lo + hi
    out = _placed(x, d, lo, total)
    if left is not None:
        out = where(_owner(x, d, 0, lo, total), _placed(left, d, 0, total), out)
    if right is not None:
        out = where(_owner(x, d, lo + size, hi, total), _placed(right, d, lo + size, total), out)
    return out


def _pads(ndim: int, d: int, before: int, after: int) -> list[int]:
    pads = [0, 0] * ndim
    k = ndim - 1 - d
    pads[2 * k], pads[2 * k + 1] = before, after
    return pads


def _placed(piece: Any, d: int, start: int, total: int) -> Any:
    """``piece`` at ``start`` along ``d`` of a zero axis of ``total`` (a lazy pad)."""
    return piece.pad(_pads(piece.ndim, d, start, total - start - piece.shape[d]))


def _owner(x: Any, d: int, start: int, count: int, total: int) -> Any:
    """True at positions ``start .. start+count`` of ``d`` (size 1 on the other dims): a padded constant,
    which the kernel computes from the position (no buffer)."""
    shape = [1] * x.ndim
    shape[d] = count
    ones = from_node(graph.const(True, dtypes.bool_, tuple(shape), x.device))
    return ones.pad(_pads(x.ndim, d, start, total - start - count), value=False)
