"""The non-constant padding modes of ``pad`` (``"reflect"``, ``"replicate"``, ``"circular"``).

Along each padded dim the output has three parts: the left border (a reversed slice of the input for
reflect, its first element expanded for replicate, its last elements for circular), the input, and the
right border. Over all padded dims that makes 3^k parts, each a view of the input zero-padded to its
place (a lazy pad node); ``where`` on the position picks the part that owns an element. The result is
one fused kernel that moves bits (NaN payloads and -0.0 kept, every dtype), and the gradient, by
composition, sums what each input element fed, as PyTorch's.
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
    dims = [d for d, (lo, hi) in enumerate(per_dim) if lo or hi]
    for d in dims:
        _check(x.shape[d], d, *per_dim[d], mode)
    out_shape = tuple(s + lo + hi for s, (lo, hi) in zip(x.shape, per_dim))
    if x.numel() == 0:  # nothing to copy: the output is empty too (another dim is 0)
        return from_node(graph.const(0, x.dtype, out_shape, x.device))
    if x._data.buffer is None:
        # the parts read x through reversed and shifted views: on a buffer that is plain indexing,
        # on pending work it would unravel every index through divisions (and recompute the work)
        x = x.clone()

    def build(k: int, index: list[Any], counts: dict[int, int]) -> Any:
        if k == len(dims):  # one part: a view of x, zero-padded to its place in the output
            piece = x[tuple(index)]
            if counts:
                piece = piece.expand(*[counts.get(d, s) for d, s in enumerate(piece.shape)])
            pads = [0, 0] * x.ndim
            for d in dims:
                start = starts[d]
                pads[2 * (x.ndim - 1 - d)] = start
                pads[2 * (x.ndim - 1 - d) + 1] = out_shape[d] - start - piece.shape[d]
            return piece.pad(pads)
        d = dims[k]
        size, (lo, hi) = x.shape[d], per_dim[d]
        starts[d] = lo
        out = build(k + 1, _with(index, d, slice(None)), counts)
        for side, count, at in (("left", lo, 0), ("right", hi, lo + size)):
            if not count:
                continue
            sl, grow = _border(mode, side, size, count)
            starts[d] = at
            part = build(k + 1, _with(index, d, sl), {**counts, d: count} if grow else counts)
            out = where(_owner(x, d, at, count, out_shape[d]), part, out)
        starts[d] = lo
        return out

    starts: dict[int, int] = {}
    return build(0, [slice(None)] * x.ndim, {})


def _check(size: int, d: int, lo: int, hi: int, mode: str) -> None:
    if mode == "reflect" and (lo >= size or hi >= size):
        raise ShapeError(f"pad: reflect padding ({lo}, {hi}) of dim {d} must be less than its size {size}")
    if mode == "circular" and (lo > size or hi > size):
        raise ShapeError(f"pad: circular padding ({lo}, {hi}) of dim {d} must be at most its size {size}")
    if mode == "replicate" and size == 0:
        raise ShapeError(f"pad: replicate padding of dim {d} needs a non-empty dim, got size 0")


def _border(mode: str, side: str, size: int, count: int) -> tuple[slice, bool]:
    """The slice of the input that fills a border of ``count`` elements, and whether it is one element
    expanded to ``count`` (replicate)."""
    if mode == "reflect":
        stop = size - 2 - count  # -1 when the border reaches the first element: "to the start" is None
        return (slice(count, 0, -1) if side == "left" else slice(size - 2, stop if stop >= 0 else None, -1)), False
    if mode == "replicate":
        return (slice(0, 1) if side == "left" else slice(size - 1, size)), True
    return (slice(size - count, size) if side == "left" else slice(0, count)), False


def _with(index: list[Any], d: int, item: Any) -> list[Any]:
    out = list(index)
    out[d] = item
    return out


def _pads(ndim: int, d: int, before: int, after: int) -> list[int]:
    pads = [0, 0] * ndim
    k = ndim - 1 - d
    pads[2 * k], pads[2 * k + 1] = before, after
    return pads


def _owner(x: Any, d: int, start: int, count: int, total: int) -> Any:
    """True at positions ``start .. start+count`` of ``d`` (size 1 on the other dims): a padded constant,
    which the kernel computes from the position (no buffer)."""
    shape = [1] * x.ndim
    shape[d] = count
    ones = from_node(graph.const(True, dtypes.bool_, tuple(shape), x.device))
    return ones.pad(_pads(x.ndim, d, start, total - start - count), value=False)
