"""Pooling over spatial dims (API.md "Convolution, pooling and resampling"): max, average, adaptive, unpool.

Pooling is a reduce over the window view of the padded input (``unfold`` on each spatial dim): one
kernel, the window never materialized; gradients by composition.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from zyx import dtype as dtypes
from zyx.errors import DTypeError, ShapeError
from zyx.frontend.autograd.engine import is_grad_enabled, no_grad, record
from zyx.frontend.creation import arange, pinned_as, tensor, zeros
from zyx.frontend.elementwise import where
from zyx.frontend.layout import is_channels_last
from zyx.frontend.softmax import float_work
from zyx.nn.functional_conv import _batched, _pads, _tuple, _windows


def _pool_geometry(x: Any, nd: int, kernel_size: Any, stride: Any, padding: Any, dilation: Any, ceil_mode: bool,
                   fn: str) -> tuple:
    """Kernel, stride, dilation, per-dim (before, after) padding (after includes the ceil-mode overhang) and
    output sizes of a pooling of ``x`` (N, C, *spatial)."""
    ks = _tuple(kernel_size, nd, "kernel_size", fn)
    st = ks if stride is None or (not isinstance(stride, int) and len(stride) == 0) else \
        _tuple(stride, nd, "stride", fn)
    pd, dl = _tuple(padding, nd, "padding", fn), _tuple(dilation, nd, "dilation", fn)
    if any(k <= 0 for k in ks) or any(s <= 0 for s in st) or any(d <= 0 for d in dl):
        raise ShapeError(f"{fn}: kernel_size {ks}, stride {st} and dilation {dl} must be positive")
    if any(p < 0 or p > k // 2 for p, k in zip(pd, ks)):
        raise ShapeError(f"{fn}: padding {pd} should be at most half of kernel_size {ks}")
    pads, outs = [], []
    for L, k, s, p, d in zip(x.shape[2:], ks, st, pd, dl):
        span = L + 2 * p - d * (k - 1) - 1
        m = (-(-span // s) if ceil_mode else span // s) + 1
        if ceil_mode and (m - 1) * s >= L + p:  # the last window must start inside the input or left padding
            m -= 1
        if m <= 0:
            raise ShapeError(f"{fn}: the output size along a spatial dim is {m} (input {L}, kernel {k}, "
                             f"padding {p}, dilation {d}, stride {s}); expected at least 1")
        pads.append((p, max((m - 1) * s + d * (k - 1) + 1 - L - p, 0)))
        outs.append(m)
    return ks, st, dl, pads, tuple(outs)


def _lowest(dt: Any) -> Any:
    if dt.is_float:
        return float("-inf")
    if dt.is_bool:
        return False
    return int(np.iinfo(dt.numpy).min)


def _max_pool(x: Any, nd: int, kernel_size: Any, stride: Any, padding: Any, dilation: Any, ceil_mode: bool,
              return_indices: bool, fn: str) -> Any:
    x, unbatched = _batched(x, nd, fn)
    ks, st, dl, pads, outs = _pool_geometry(x, nd, kernel_size, stride, padding, dilation, ceil_mode, fn)
    needs_grad = x._ag is not None and is_grad_enabled()
    # windows that tile the input (``MaxPool2d(2)``): a window's first maximum is told by its place in
    # the window, and the gradient is one elementwise kernel over a reshape of the input
    tiled = st == ks and all(d == 1 for d in dl) and all(p == (0, 0) for p in pads)
    # an input lying channels-last (a convolution's output) is pooled as (N, *spatial, C): the kernels
    # then read and write consecutive channels instead of gathering across work items
    cl = is_channels_last(x)
    with no_grad():  # the gradient is recorded below: all of it goes to each window's first maximum
        xl = _to_layout(x, cl)
        win = _windows(xl.pad(_layout_pads(pads, cl), _lowest(x.dtype)), ks, st, dl, 1 if cl else 2)
        out = win.amax(tuple(range(2 + nd, 2 + 2 * nd)))
        idx = _first_max(xl, win, out, ks, st, dl, pads, True, cl) if return_indices else None
        first = None
        if needs_grad:
            first = idx if idx is not None and not tiled else \
                _first_max(xl, win, out, ks, st, dl, pads, not tiled, cl)
        out = _from_layout(out, cl)
    if needs_grad:
        geometry = (tuple(x.shape), ks, outs, tiled, cl)
        record(fn, out, [x], lambda g: (_max_pool_backward(g, first, geometry),))
    if not return_indices:
        return out.squeeze(0) if unbatched else out
    idx = _from_layout(idx, cl)
    if unbatched:
        out, idx = out.squeeze(0), idx.squeeze(0)
    return out, idx


def _to_layout(x: Any, cl: bool) -> Any:
    """(N, C, *spatial) as pooled: itself, or (channels-last ``cl``) the (N, *spatial, C) view."""
    return x.permute(0, *range(2, x.ndim), 1) if cl else x


def _from_layout(y: Any, cl: bool) -> Any:
    """A pooled (N, C, *spatial) or (``cl``) (N, *spatial, C) result as the (N, C, *spatial) view."""
    return y.permute(0, y.ndim - 1, *range(1, y.ndim - 1)) if cl else y


def _layout_pads(pads: list, cl: bool) -> list[int]:
    """``F.pad`` amounts padding the spatial dims by ``pads`` of the input as pooled (``_to_layout``)."""
    return _pads(list(pads) + [(0, 0)]) if cl else _pads(pads)


def _first_max(x: Any, win: Any, out: Any, ks: tuple, st: tuple, dl: tuple, pads: list, plane_ids: bool,
               cl: bool = False) -> Any:
    """Where each window's maximum is, as PyTorch's ``max_pool`` picks it: its flat index in the input
    plane (``plane_ids``, the indices ``max_pool`` returns), else its row-major place in the window (the
    tiled gradient's, as float32: exact for any window, and the float kernels run as vectors on a CPU);
    ``_pick_max`` says which. Padding (index ``plane``) never wins, since every window holds at least one
    input element. ``x``/``win``/``out`` in the pooled layout (``cl``: channels last), and so is the result."""
    nd = len(ks)
    red = tuple(range(2 + nd, 2 + 2 * nd))
    if not plane_ids:  # the rank tables uploaded as they are (computed, each would be a kernel of its own)
        places = math.prod(ks)
        local = np.arange(places, dtype=np.float32).reshape(*(1,) * (2 + nd), *ks)
        ranks = [pinned_as(tensor(r, device=x.device), x) for r in (local + places, (places - 1) - local)]
        return _pick_max(win, out, ranks, places, red)
    spatial = tuple(x.shape[1:1 + nd]) if cl else tuple(x.shape[2:])
    plane = math.prod(spatial)
    ids = pinned_as(arange(plane, device=x.device), x)
    ids = ids.reshape(1, *spatial, 1) if cl else ids.reshape(1, 1, *spatial)
    ids = _windows(ids.pad(_layout_pads(pads, cl), plane), ks, st, dl, 1 if cl else 2)
    return _pick_max(win, out, [ids + plane, (plane - 1) - ids], plane, red)


def _pick_max(win: Any, out: Any, ranks: list, plane: int, red: tuple[int, ...]) -> Any:
    """The plane index (ids below ``plane``) PyTorch's max pools report for each window of ``win`` (maxima
    ``out``): walking the window in increasing index, a value replaces the kept one when it is larger or
    NaN, so the first maximum, or the last NaN when the window holds one. One max reduce of a rank key: a
    NaN's is ``plane + id``, a maximum's ``plane - 1 - id`` (``ranks``: those two tables), the rest -1."""
    nd = len(red)
    top = win == out.reshape(*out.shape, *(1,) * nd)
    key = where(win != win, ranks[0], where(top, ranks[1], -1)).amax(red)
    return where(key >= plane, key - plane, (plane - 1) - key)


def _max_pool_backward(g: Any, first: Any, geometry: tuple) -> Any:
    """The input gradient of a max pool: each output's gradient goes to its window's first maximum
    (``first``, from ``_first_max``, in the pooled layout), summed where windows overlap (PyTorch's rule;
    ``amax``'s would split it among ties, common after a ReLU or on integer-valued data). Tiled windows: a
    ``where`` over a reshape of the input in the pooled layout (fuses with its consumer); others scatter
    into the input plane."""
    shape, ks, outs, tiled, cl = geometry
    n, c, spatial = shape[0], shape[1], shape[2:]
    if tiled:
        used = tuple(o * k for o, k in zip(outs, ks))
        ones = tuple(v for o in outs for v in (o, 1))  # (o0, 1, o1, 1, ...)
        places = math.prod(ks)
        local = np.arange(places, dtype=np.float32).reshape(*(v for k in ks for v in (1, k)), *((1,) if cl else ()))
        local = pinned_as(tensor(local, device=g.device), g)  # (1, k0, 1, k1, ...)
        if cl:  # (N, o0, 1, o1, 1, ..., C) -> (N, *used, C)
            gl = _to_layout(g, True)
            gx = where(local == first.reshape(n, *ones, c), gl.reshape(n, *ones, c), 0).reshape(n, *used, c)
        else:
            gx = where(local == first.reshape(n, c, *ones), g.reshape(n, c, *ones), 0).reshape(n, c, *used)
        tail = [(0, L - u) for L, u in zip(spatial, used)]
        if any(t for _, t in tail):
            gx = gx.pad(_layout_pads(tail, cl))
        return _from_layout(gx, cl)
    first = _from_layout(first, cl)
    flat = zeros(n, c, math.prod(spatial), dtype=g.dtype, device=g.device)
    return flat.scatter_add(2, first.reshape(n, c, -1), g.reshape(n, c, -1)).reshape(n, c, *spatial)


def max_pool1d(input: Any, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,  # noqa: A002 - PyTorch's name
               ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """Max over sliding windows of (N, C, L) (padding reads -inf); ``return_indices``: (values, flat indices)."""
    return _max_pool(input, 1, kernel_size, stride, padding, dilation, ceil_mode, return_indices, "max_pool1d")


def max_pool2d(input: Any, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,  # noqa: A002 - PyTorch's name
               ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """Max over sliding windows of (N, C, H, W); ``return_indices``: also each maximum's index in its
    (H*W) plane, as PyTorch."""
    return _max_pool(input, 2, kernel_size, stride, padding, dilation, ceil_mode, return_indices, "max_pool2d")


def max_pool3d(input: Any, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,  # noqa: A002 - PyTorch's name
               ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """Max over sliding windows of (N, C, D, H, W)."""
    return _max_pool(input, 3, kernel_size, stride, padding, dilation, ceil_mode, return_indices, "max_pool3d")


def _max_unpool(x: Any, indices: Any, nd: int, kernel_size: Any, stride: Any, padding: Any, output_size: Any,
                fn: str) -> Any:
    """Each value of ``x`` written at its ``indices`` (a flat position in the output plane, as ``max_pool``
    returns them) of a zero output: one scatter per plane."""
    x, unbatched = _batched(x, nd, fn)
    if tuple(indices.shape) != tuple(x.shape) and tuple(indices.shape) != tuple(x.shape[1:]):
        raise ShapeError(f"{fn}: indices of shape {tuple(indices.shape)} do not match the input's {tuple(x.shape)}")
    ks = _tuple(kernel_size, nd, "kernel_size", fn)
    st = ks if stride is None else _tuple(stride, nd, "stride", fn)
    pd = _tuple(padding, nd, "padding", fn)
    if output_size is None:
        outs = tuple((n - 1) * s - 2 * p + k for n, s, p, k in zip(x.shape[2:], st, pd, ks))
    else:
        outs = tuple(int(v) for v in output_size)[-nd:]
        if len(outs) != nd:
            raise ShapeError(f"{fn}: output_size {tuple(output_size)} needs {nd} spatial sizes")
    if any(o < 0 for o in outs):
        raise ShapeError(f"{fn}: the output size {outs} is negative")
    n, c = x.shape[:2]
    flat = indices.reshape(n, c, -1)
    if flat.dtype is not dtypes.int64:
        flat = flat.cast(dtypes.int64)
    out = pinned_as(zeros(n, c, math.prod(outs), dtype=x.dtype, device=x.device), x)
    out = out.scatter(2, flat, x.reshape(n, c, -1)).reshape(n, c, *outs)
    return out.squeeze(0) if unbatched else out


def max_unpool1d(input: Any, indices: Any, kernel_size: Any, stride: Any = None, padding: Any = 0,  # noqa: A002 - PyTorch's name
                 output_size: Any = None) -> Any:
    """The partial inverse of ``max_pool1d``: values at their ``indices``, zeros elsewhere."""
    return _max_unpool(input, indices, 1, kernel_size, stride, padding, output_size, "max_unpool1d")


def max_unpool2d(input: Any, indices: Any, kernel_size: Any, stride: Any = None, padding: Any = 0,  # noqa: A002 - PyTorch's name
                 output_size: Any = None) -> Any:
    """The partial inverse of ``max_pool2d``: values at their ``indices`` (flat in the H*W plane), zeros elsewhere."""
    return _max_unpool(input, indices, 2, kernel_size, stride, padding, output_size, "max_unpool2d")


def max_unpool3d(input: Any, indices: Any, kernel_size: Any, stride: Any = None, padding: Any = 0,  # noqa: A002 - PyTorch's name
                 output_size: Any = None) -> Any:
    """The partial inverse of ``max_pool3d``."""
    return _max_unpool(input, indices, 3, kernel_size, stride, padding, output_size, "max_unpool3d")


def _avg_pool(x: Any, nd: int, kernel_size: Any, stride: Any, padding: Any, ceil_mode: bool,
              count_include_pad: bool, divisor_override: Any, fn: str) -> Any:
    x, unbatched = _batched(x, nd, fn)
    if not x.dtype.is_float and x.dtype is not dtypes.int64:
        raise DTypeError(f"{fn}: expected a floating-point or int64 x (as PyTorch), got {x.dtype.name}")
    ks, st, dl, pads, outs = _pool_geometry(x, nd, kernel_size, stride, padding, 1, ceil_mode, fn)
    if not x.dtype.is_float:
        out = _int_avg(x, ks, st, dl, pads, outs, count_include_pad, divisor_override)
        return out.squeeze(0) if unbatched else out
    w, out_dt = float_work(x)
    win = _windows(w.pad(_pads(pads)), ks, st, dl)
    total = win.sum(tuple(range(2 + nd, 2 + 2 * nd)))
    if divisor_override:
        out = total * (1.0 / divisor_override)
    elif all(hi == lo for lo, hi in pads) and (count_include_pad or not any(lo for lo, _ in pads)):
        out = total * (1.0 / math.prod(ks))
    else:  # windows overlapping padding count only what PyTorch counts: a constant (out,) array
        count = _window_counts(tuple(x.shape[2:]), ks, st, pads, outs, count_include_pad)
        out = total * pinned_as(tensor(1.0 / count, dtype=w.dtype, device=x.device), x)
    out = out.cast(out_dt)
    return out.squeeze(0) if unbatched else out


def _int_avg(x: Any, ks: tuple, st: tuple, dl: tuple, pads: list, outs: tuple, count_include_pad: bool,
             divisor_override: Any) -> Any:
    """PyTorch's integer average pool: the window's int64 sum divided by its divisor, truncated toward zero
    (C++ integer division), in ``x``'s dtype."""
    nd = len(ks)
    total = _windows(x.pad(_pads(pads)), ks, st, dl).sum(tuple(range(2 + nd, 2 + 2 * nd)))  # int64
    if divisor_override:
        div: Any = int(divisor_override)
    elif all(hi == lo for lo, hi in pads) and (count_include_pad or not any(lo for lo, _ in pads)):
        div = math.prod(ks)
    else:
        count = _window_counts(tuple(x.shape[2:]), ks, st, pads, outs, count_include_pad)
        div = pinned_as(tensor(count.astype(np.int64), device=x.device), x)
    return where(total < 0, -((-total) // div), total // div).cast(x.dtype)


def _window_counts(spatial: tuple[int, ...], ks: tuple[int, ...], st: tuple[int, ...], pads: list, outs: tuple,
                   count_include_pad: bool) -> np.ndarray:
    """Each window's divisor: its elements inside the input (and inside the padding when
    ``count_include_pad``), never past the padded input's end (the ceil-mode overhang)."""
    per_dim = []
    for L, k, s, (p, _), m in zip(spatial, ks, st, pads, outs):
        start = np.arange(m) * s - p
        end = np.minimum(start + k, L + p)
        if not count_include_pad:
            start, end = np.maximum(start, 0), np.minimum(end, L)
        per_dim.append((end - np.maximum(start, -p)).astype(np.float64))
    count = per_dim[0]
    for c in per_dim[1:]:
        count = np.multiply.outer(count, c)
    return count


def avg_pool1d(input: Any, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,  # noqa: A002 - PyTorch's name
               count_include_pad: bool = True) -> Any:
    """Mean over sliding windows of (N, C, L)."""
    return _avg_pool(input, 1, kernel_size, stride, padding, ceil_mode, count_include_pad, None, "avg_pool1d")


def avg_pool2d(input: Any, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,  # noqa: A002 - PyTorch's name
               count_include_pad: bool = True, divisor_override: Any = None) -> Any:
    """Mean over sliding windows of (N, C, H, W)."""
    return _avg_pool(input, 2, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override,
                     "avg_pool2d")


def avg_pool3d(input: Any, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,  # noqa: A002 - PyTorch's name
               count_include_pad: bool = True, divisor_override: Any = None) -> Any:
    """Mean over sliding windows of (N, C, D, H, W)."""
    return _avg_pool(input, 3, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override,
                     "avg_pool3d")


def _adaptive_sizes(x: Any, output_size: Any, nd: int, fn: str) -> tuple[int, ...]:
    if x.ndim not in (nd + 1, nd + 2):
        raise ShapeError(f"{fn}: expected a {nd + 1}-D (unbatched) or {nd + 2}-D (batched) input, got shape "
                         f"{tuple(x.shape)}")
    spatial = tuple(x.shape[-nd:])
    if 0 in spatial or 0 in x.shape[-nd - 1:-nd]:
        raise ShapeError(f"{fn}: expected non-empty channel and spatial dims, got shape {tuple(x.shape)}")
    sizes = (output_size,) * nd if isinstance(output_size, int) else tuple(output_size)
    if len(sizes) != nd:
        raise ShapeError(f"{fn}: output_size must be an int or {nd} ints, got {output_size!r}")
    sizes = tuple(L if s is None else int(s) for s, L in zip(sizes, spatial))
    if any(s < 0 for s in sizes):
        raise ShapeError(f"{fn}: output_size must be non-negative, got {output_size!r}")
    return sizes


def _empty_pool(x: Any, sizes: tuple[int, ...]) -> Any:
    """The empty result of an adaptive pool to a size with a 0 (PyTorch returns it too)."""
    return pinned_as(zeros(*x.shape[:x.ndim - len(sizes)], *sizes, dtype=x.dtype, device=x.device), x)


def _bins(length: int, size: int) -> list[tuple[int, int]]:
    """PyTorch's adaptive bins: ``[floor(i*L/n), ceil((i+1)*L/n))``."""
    return [((i * length) // size, -(-((i + 1) * length) // size)) for i in range(size)]


def _adaptive_avg(x: Any, output_size: Any, nd: int, fn: str) -> Any:
    sizes = _adaptive_sizes(x, output_size, nd, fn)
    spatial = tuple(x.shape[-nd:])
    if not x.dtype.is_float:
        raise DTypeError(f"{fn}: expected a floating-point x, got {x.dtype.name}")
    if 0 in sizes:
        return _empty_pool(x, sizes)
    if all(L % s == 0 for L, s in zip(spatial, sizes)):  # uniform windows: one pooling kernel
        ks = tuple(L // s for L, s in zip(spatial, sizes))
        return _avg_pool(x, nd, ks, ks, 0, False, True, None, fn)
    # uneven bins: a product with each dim's (L, out) averaging matrix
    w, out_dt = float_work(x)
    for i, (L, s) in enumerate(zip(spatial, sizes)):
        a = np.zeros((L, s))
        for j, (lo, hi) in enumerate(_bins(L, s)):
            a[lo:hi, j] = 1.0 / (hi - lo)
        dim = w.ndim - nd + i
        m = pinned_as(tensor(a, dtype=w.dtype, device=w.device), w)
        w = (w.transpose(dim, -1) @ m).transpose(dim, -1)
    return w.cast(out_dt)


def adaptive_avg_pool1d(input: Any, output_size: Any) -> Any:  # noqa: A002 - PyTorch's name
    """Mean over PyTorch's adaptive bins of (N, C, L) to ``output_size``."""
    return _adaptive_avg(input, output_size, 1, "adaptive_avg_pool1d")


def adaptive_avg_pool2d(input: Any, output_size: Any) -> Any:  # noqa: A002 - PyTorch's name
    """Mean over PyTorch's adaptive bins of (N, C, H, W) to ``output_size`` (an int, a pair, None keeps a dim)."""
    return _adaptive_avg(input, output_size, 2, "adaptive_avg_pool2d")


def _adaptive_max(x: Any, output_size: Any, return_indices: bool, nd: int, fn: str) -> Any:
    sizes = _adaptive_sizes(x, output_size, nd, fn)
    spatial = tuple(x.shape[-nd:])
    if 0 in sizes:
        out = _empty_pool(x, sizes)
        return (out, _empty_pool(x.cast(dtypes.int64), sizes)) if return_indices else out
    if all(L % s == 0 for L, s in zip(spatial, sizes)):
        ks = tuple(L // s for L, s in zip(spatial, sizes))
        return _max_pool(x, nd, ks, ks, 0, 1, False, return_indices, fn)
    x, unbatched = _batched(x, nd, fn)
    out, idx = _adaptive_max_uneven(x, sizes, fn)
    if unbatched:
        out, idx = out.squeeze(0), idx.squeeze(0)
    return (out, idx) if return_indices else out


def _adaptive_max_uneven(x: Any, sizes: tuple[int, ...], fn: str) -> tuple[Any, Any]:
    """Max and first-max plane index over uneven adaptive bins of (N, C, *spatial): each bin's elements are
    gathered from the flat plane into a (*sizes, *widest bin) window (a shorter bin repeats its last element,
    which changes neither its max nor where the first max is), then reduced as ``max_pool`` reduces; the
    gradient goes to each bin's first maximum, as PyTorch's."""
    n, c, spatial = x.shape[0], x.shape[1], tuple(x.shape[2:])
    nd, plane = len(spatial), math.prod(spatial)
    bins = [_bins(L, s) for L, s in zip(spatial, sizes)]
    ks = tuple(max(hi - lo for lo, hi in b) for b in bins)
    flat = np.zeros(sizes + ks, dtype=np.int64)
    stride = 1
    for d in reversed(range(nd)):
        pos = np.array([[min(lo + j, hi - 1) for j in range(ks[d])] for lo, hi in bins[d]])  # (out_d, k_d)
        shape = [1] * (2 * nd)
        shape[d], shape[nd + d] = sizes[d], ks[d]
        flat = flat + pos.reshape(shape) * stride
        stride *= spatial[d]
    ids = pinned_as(tensor(flat, device=x.device), x)
    red = tuple(range(2 + nd, 2 + 2 * nd))
    needs_grad = x._ag is not None and is_grad_enabled()
    with no_grad():
        win = x.reshape(n, c, plane).index_select(2, ids.reshape(-1)).reshape(n, c, *sizes, *ks)
        out = win.amax(red)
        ids = ids.reshape(1, 1, *ids.shape)
        first = _pick_max(win, out, [ids + plane, (plane - 1) - ids], plane, red)
    if needs_grad:
        geometry = (tuple(x.shape), ks, sizes, False, False)
        out = record(fn, out, [x], lambda g: (_max_pool_backward(g, first, geometry),))
    return out, first


def adaptive_max_pool1d(input: Any, output_size: Any, return_indices: bool = False) -> Any:  # noqa: A002 - PyTorch's name
    """Max over PyTorch's adaptive bins of (N, C, L)."""
    return _adaptive_max(input, output_size, return_indices, 1, "adaptive_max_pool1d")


def adaptive_max_pool2d(input: Any, output_size: Any, return_indices: bool = False) -> Any:  # noqa: A002 - PyTorch's name
    """Max over PyTorch's adaptive bins of (N, C, H, W); ``return_indices`` when the bins are uniform."""
    return _adaptive_max(input, output_size, return_indices, 2, "adaptive_max_pool2d")
