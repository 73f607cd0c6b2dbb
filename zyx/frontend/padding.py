"""The non-constant padding modes of ``pad`` (``"reflect"``, ``"replicate"``, ``"circular"``).

Along each padded dim, output position ``o`` reads input position ``src(o - before)``: mirrored
about the end elements (reflect), clamped (replicate) or wrapped (circular). Both ways below move
bits (NaN payloads and -0.0 kept, every dtype) and get PyTorch's gradient (the sum of what each input
element fed):

* small outputs (and crops): the source positions are an index map (``zyx.frontend.index_map``), one
  gather kernel over all padded dims that fuses with what reads it;
* large outputs: one launch of the padding kernel (``zyx.kernels.pad``): each output row finds its source
  row once and copies the interior as a block, at memory speed (a gather computes and bounds-checks an
  index per element). Its gradient folds each padded dim's borders back onto the positions they read.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from zyx import graph
from zyx.backend.pool import Buffer
from zyx.errors import ShapeError
from zyx.frontend.autograd.engine import needs_grad, no_grad, record
from zyx.frontend.base import concrete, extern_tensor
from zyx.frontend.elementwise import from_node
from zyx.frontend.index_map import DimMap, apply_maps
from zyx.kernels import pad as kernel

MODES = ("constant", "reflect", "replicate", "circular")
KERNEL_MIN = 1 << 16  # output elements from which the padding kernel beats the fused gather


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
    if math.prod(out_shape) >= KERNEL_MIN and not cropping:
        if not needs_grad(x):
            return _padded(x, per_dim, mode, out_shape)
        with no_grad():
            out = _padded(x, per_dim, mode, out_shape)
        shape = tuple(o - lo - hi for o, (lo, hi) in zip(out.shape, per_dim))  # ints, also for a variable size
        return record(f"{mode}_pad", out, [x], lambda g: (_fold_back(g, shape, per_dim, mode),))
    maps = [DimMap(d, x.shape[d], _sources(x.shape[d], *per_dim[d], mode).reshape(1, -1)) for d in dims]
    return apply_maps(x, maps)


def _padded(x: Any, per_dim: Sequence[tuple[int, int]], mode: str, out_shape: tuple[int, ...]) -> Any:
    """``x`` padded by the padding kernel, as a pending tensor (an ``EXTERN`` node over ``x``'s values); a
    tensor of variable size is read at its bound values (the kernel has no variable form)."""
    x = concrete(x)
    out_shape = tuple(int(s) for s in out_shape)
    if not x._view.is_dense:
        x = x.contiguous()  # the kernel reads dense rows (an offset alone is a launch argument)
    offset, itemsize, device = int(x._view.offset), x.dtype.itemsize, x.device
    layout = kernel.pad_layout(x.shape, per_dim)

    def run(buffers: list[Buffer]) -> Buffer:
        out = device.pool.allocate(math.prod(out_shape) * itemsize)
        kernel.pad_rows(device, out, buffers[0], offset, itemsize, mode, layout)
        return out

    return extern_tensor(f"pad {mode}", run, [x], x.dtype, out_shape, device)


def _fold_back(g: Any, shape: tuple[int, ...], per_dim: Sequence[tuple[int, int]], mode: str) -> Any:
    """The gradient of a pad of ``shape`` from the output's ``g``: per padded dim, the interior plus each
    border added onto the input positions it read (reversed for reflect, summed for replicate)."""
    for d, (lo, hi) in enumerate(per_dim):
        if not (lo or hi):
            continue
        n = shape[d]
        left, right = g.narrow(d, 0, lo), g.narrow(d, lo + n, hi)
        if mode == "reflect":  # output j < lo read lo - j; output lo + n + j read n - 2 - j
            backward = [slice(None)] * g.ndim
            backward[d] = slice(None, None, -1)
            parts = [(left[tuple(backward)], 1), (right[tuple(backward)], n - 1 - hi)]
        elif mode == "replicate":
            parts = [(left.sum(d, keepdim=True), 0), (right.sum(d, keepdim=True), n - 1)]
        else:  # circular: output j < lo read n - lo + j; output lo + n + j read j
            parts = [(left, n - lo), (right, 0)]
        core = g.narrow(d, lo, n)
        for (piece, start), count in zip(parts, (lo, hi)):
            if count:
                pads = [0] * (2 * (g.ndim - d))
                pads[-2:] = [start, n - start - piece.shape[d]]
                core = core + piece.pad(pads)
        g = core
    return g


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
