"""Index maps known on the host: ``out[.., o, ..] = sum_t w[t, o] * x[.., idx[t, o], ..]`` along some dims.

``repeat_interleave`` with a tensor of repeats and the reflect/replicate/circular pads of small
tensors (one tap, no weights) and ``interpolate`` (nearest: one tap; linear, cubic: two or four
weighted taps per dim) are such maps. The indices are computed on the host (they
depend only on sizes, or on repeats already read back), so the map is one fused gather kernel: each
tap is a bounds-checked load from ``x``'s buffer at a flat element index, which is the sum of two small
index arrays uploaded once (output dims before the split point, and after it), read through broadcast
views so that the index arithmetic fuses with the loads and the weighted sum.

The gradient of a map is its adjoint (``DimMap.adjoint``: for every input position, the output
positions reading it), applied one dim at a time; the adjoint's gradient is the map again, so
second derivatives work too.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from zyx import dtype as dtypes
from zyx import graph
from zyx.dtype import DType
from zyx.frontend.autograd.engine import needs_grad, no_grad, record
from zyx.frontend.creation import from_host, pinned_as
from zyx.frontend.elementwise import from_node, where
from zyx.ir.view import View

_INT32_MAX = (1 << 31) - 1


@dataclass(frozen=True)
class DimMap:
    """One dim's map: ``out[o] = sum_t w[t, o] * x[idx[t, o]]`` over taps ``t`` where ``valid[t, o]``.

    ``idx`` is an int array ``(T, O)`` of positions in ``[0, size)``; ``w`` a float64 array of the same
    shape or None (pure selection); ``valid`` a bool array or None (every tap counts). ``size`` is the
    input length along the dim."""

    dim: int
    size: int
    idx: np.ndarray
    w: np.ndarray | None = None
    valid: np.ndarray | None = None

    @property
    def out_size(self) -> int:
        return int(self.idx.shape[1])

    def adjoint(self) -> DimMap:
        """The transposed map: for every input position ``i``, the sum over the (tap, output) pairs that
        read ``i`` (padded to the largest fan-in with invalid taps)."""
        taps, outs = self.idx.shape
        keep = np.ones((taps, outs), bool) if self.valid is None else self.valid
        src = self.idx[keep].astype(np.int64)
        dst = np.broadcast_to(np.arange(outs), (taps, outs))[keep]
        wts = None if self.w is None else self.w[keep]
        order = np.argsort(src, kind="stable")
        src, dst = src[order], dst[order]
        counts = np.bincount(src, minlength=self.size)
        fan = int(counts.max()) if counts.size else 0
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
        rank = np.arange(src.size) - starts[src]
        idx = np.zeros((max(fan, 1), self.size), np.int64)
        valid = np.zeros((max(fan, 1), self.size), bool)
        idx[rank, src] = dst
        valid[rank, src] = True
        w = None
        if wts is not None:
            w = np.zeros((max(fan, 1), self.size), np.float64)
            w[rank, src] = wts[order]
        return DimMap(self.dim, outs, idx, w, None if valid.all() else valid)


def apply_maps(x: Any, maps: Sequence[DimMap], compute: DType | None = None, out_dtype: DType | None = None) -> Any:
    """``x`` with every map applied (one fused kernel; dims distinct). Weighted maps sum in ``compute``
    (the weights' dtype; default float32, float64 for float64 input) and the result is cast to
    ``out_dtype`` (default ``x``'s dtype); the taps nest in the order of ``maps`` (outermost first), so the sum is
    ``sum_a w_a * (sum_b w_b * x[a, b])`` as PyTorch's interpolation kernels compute it."""
    maps = list(maps)
    if needs_grad(x):
        with no_grad():
            out = apply_maps(x, maps, compute, out_dtype)
        return record("index_map", out, [x], lambda g: (apply_adjoint(g, maps, compute),))
    shape = list(x.shape)
    for m in maps:
        shape[m.dim] = m.out_size
    shape_t = tuple(shape)
    out_dtype = x.dtype if out_dtype is None else out_dtype
    if math.prod(shape_t) == 0 or x.numel() == 0:
        return from_node(graph.const(0, out_dtype, shape_t, x.device))
    weighted = any(m.w is not None for m in maps)
    if compute is None:
        compute = dtypes.float64 if x.dtype is dtypes.float64 else dtypes.float32
    by_dim = {m.dim: m for m in maps}
    split = _split_point(shape_t, by_dim)
    v = x._view
    index_dt = np.int32 if max(v.span()[1], math.prod(x._data.shape)) <= _INT32_MAX else np.int64
    uploads: dict[tuple, Any] = {}

    def index_part(lo: int, hi: int, taps: dict[int, int]) -> Any:
        chosen = tuple(sorted((d, t) for d, t in taps.items() if lo <= d < hi))
        got = uploads.get((lo, chosen))
        if got is None:
            arr = _flat_part(v, shape_t, lo, hi, {d: by_dim[d].idx[t] for d, t in chosen}, index_dt)
            got = uploads[(lo, chosen)] = pinned_as(from_host(arr, None, x.device), x)
        return got

    table = graph.Src(x._data, View((math.prod(x._data.shape), 1), (1, 0), 0), x.dtype)
    weights: dict[tuple[int, int], Any] = {}

    def weight(m: DimMap, t: int) -> Any:
        got = weights.get((m.dim, t))
        if got is None:
            col = [1] * len(shape_t)
            col[m.dim] = m.out_size
            arr = m.w[t].astype(compute.numpy).reshape(col)
            got = weights[(m.dim, t)] = pinned_as(from_host(arr, compute, x.device), x)
        return got

    def mask(m: DimMap, t: int) -> Any:
        col = [1] * len(shape_t)
        col[m.dim] = m.out_size
        return pinned_as(from_host(m.valid[t].reshape(col), dtypes.bool_, x.device), x)

    def tap_value(taps: dict[int, int]) -> Any:
        flat = index_part(0, split, taps) + index_part(split, len(shape_t), taps)
        spec = graph.GatherSpec((~0, len(shape_t)), (tuple(range(len(shape_t))),), (False,))
        node = graph.gather(table, (graph.Src(flat._data, flat._view, flat.dtype),), spec, (*shape_t, 1), x.device)
        got = from_node(node).reshape(shape_t)
        return got.cast(compute) if weighted else got

    def weigh(m: DimMap, t: int, part: Any) -> Any:
        if m.w is not None:
            part = part * weight(m, t)
        return where(mask(m, t), part, 0) if m.valid is not None else part

    out = nested_sum([(m.dim, m.idx.shape[0], m) for m in maps], tap_value, weigh)
    return out.cast(out_dtype) if out.dtype is not out_dtype else out


def nested_sum(levels: Sequence[tuple[int, int, Any]], leaf: Callable[[dict[int, int]], Any],
               weigh: Callable[[Any, int, Any], Any], k: int = 0, taps: dict[int, int] | None = None) -> Any:
    """``sum_t weigh(level, t, <the same over the inner levels>)`` over each level ``(dim, taps, info)``,
    outermost first, down to ``leaf({dim: tap})``: the nesting PyTorch's interpolation kernels sum in.
    (A module function: a recursive closure would be a reference cycle holding tensors until gc.)"""
    taps = {} if taps is None else taps
    if k == len(levels):
        return leaf(taps)
    dim, count, info = levels[k]
    total = None
    for t in range(count):
        part = weigh(info, t, nested_sum(levels, leaf, weigh, k + 1, {**taps, dim: t}))
        total = part if total is None else total + part
    return total


def apply_adjoint(g: Any, maps: Sequence[DimMap], compute: DType | None) -> Any:
    """The gradient of ``apply_maps``: the adjoint maps, one dim at a time (innermost first)."""
    for m in reversed(maps):
        g = apply_maps(g, [m.adjoint()], compute)
    return g


def _split_point(shape: tuple[int, ...], maps: dict[int, DimMap]) -> int:
    """Where the output dims split into the two index arrays (each holding one array per tap choice of
    its mapped dims): the point that keeps the larger upload smallest."""
    def size(lo: int, hi: int) -> int:
        return math.prod(shape[lo:hi]) * math.prod(m.idx.shape[0] for d, m in maps.items() if lo <= d < hi)

    return min(range(len(shape) + 1), key=lambda s: max(size(0, s), size(s, len(shape))))


def _flat_part(v: View, shape: tuple[int, ...], lo: int, hi: int, chosen: dict[int, np.ndarray],
               index_dt: Any) -> np.ndarray:
    """The flat element offsets contributed by output dims ``lo..hi`` (size 1 on the other dims): the
    view's offset when ``lo == 0``, plus ``position * stride`` per dim, a mapped dim's positions being
    its chosen tap's indices (``chosen``) and any other dim's its coordinates."""
    out = np.full([1] * len(shape), v.offset if lo == 0 else 0, np.int64)
    for d in range(lo, hi):
        col = [1] * len(shape)
        col[d] = shape[d]
        pos = chosen[d].astype(np.int64) if d in chosen else np.arange(shape[d], dtype=np.int64)
        out = out + (pos * v.strides[d]).reshape(col)
    return np.ascontiguousarray(out.astype(index_dt))


def take_along(x: Any, dim: int, index: np.ndarray) -> Any:
    """``x`` indexed along ``dim`` by the host int array ``index`` (positions already in range)."""
    return apply_maps(x, [DimMap(dim, x.shape[dim], np.asarray(index, np.int64).reshape(1, -1))])
