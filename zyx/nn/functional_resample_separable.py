"""Separable filtered resampling, as PyTorch's CPU ``interpolate`` does it for ``antialias=True``
(bilinear, bicubic, lanczos; float32/float64/uint8) and for uint8 bilinear/bicubic without antialias.

Each resized spatial dim is one pass, the last dim first (PyTorch's order): output ``o`` is the sum of
``w[o, j] * x[xmin[o] + j]`` over ``j < xsize[o]``, the taps and weights computed on the host exactly as
PyTorch computes them (float32 arithmetic for float32 input, float64 for float64 and uint8), and the
pass runs on the device as a gather of ``O * T`` positions reshaped to ``(O, T)`` and a weighted sum over
``T``. Between passes the values are stored in the input's dtype, as PyTorch's temporary is.

uint8 is fixed point (PIL's scheme, kept by PyTorch): the float64 weights are scaled by ``2**p`` and
rounded to int16, ``p`` as large as keeps the largest weight below ``2**15``; a pass computes
``clamp((2**(p-1) + sum(x * w)) >> p, 0, 255)`` in integers. This differs from rounding the float
computation, so it is reproduced rather than approximated; a uint8 pass is one template kernel
(``zyx.kernels.resample``). A dim whose size does not change is copied.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from zyx import dtype as dtypes
from zyx.backend.pool import Buffer
from zyx.frontend.base import extern_tensor
from zyx.frontend.creation import from_host, pinned_as, zeros
from zyx.frontend.index_map import DimMap, apply_maps, take_along
from zyx.kernels import resample as resample_kernel

# taps per unit of support (PyTorch's interp_size): bilinear 2, bicubic 4, lanczos-3 6
_INTERP_SIZE = {"bilinear": 2, "bicubic": 4, "lanczos": 6}
# up to this many taps a pass is one fused gather kernel (an unrolled weighted sum); more taps gather
# into a tap axis summed by a reduce, which keeps the kernel source small
_FUSED_TAPS = 8


def _triangle(x: Any, ft: Any) -> Any:
    x = np.abs(x)
    return np.where(x < 1, (ft(1) - x).astype(ft), ft(0)).astype(ft)


def _cubic(a: float) -> Callable[[Any, Any], Any]:
    """The Keys cubic kernel with parameter ``a`` (-0.5 with antialias as PIL, -0.75 without as OpenCV)."""
    def f(x: Any, ft: Any) -> Any:
        x = np.abs(x)
        aa = ft(a)
        near = ((aa + ft(2)) * x - (aa + ft(3))) * x * x + ft(1)
        far = ((aa * x - ft(5) * aa) * x + ft(8) * aa) * x - ft(4) * aa
        return np.where(x < 1, near, np.where(x < 2, far, ft(0))).astype(ft)
    return f


def _lanczos3(x: Any, ft: Any) -> Any:
    """Lanczos-3, ``sinc(x) * sinc(x / 3)``; PyTorch evaluates the second factor in double."""
    x = np.abs(x)

    def sinc(v: Any, t: Any) -> Any:
        pv = (v * t(math.pi)).astype(t)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(v == 0, t(1), (np.sin(pv) / pv).astype(t)).astype(t)

    both = sinc(x, ft).astype(np.float64) * sinc(x.astype(np.float64) / 3.0, np.float64)
    return np.where(x < 3, both.astype(ft), ft(0)).astype(ft)


def _filter(mode: str, antialias: bool) -> Callable[[Any, Any], Any]:
    if mode == "bilinear":
        return _triangle
    if mode == "bicubic":
        return _cubic(-0.5 if antialias else -0.75)
    return _lanczos3


def area_pixel_scale(in_size: int, out_size: int, align_corners: bool, scale: float | None, ft: Any) -> Any:
    """PyTorch's ``area_pixel_compute_scale`` in ``ft``: the step in input positions per output position
    (shared with ``functional_resample``'s gather maps)."""
    if align_corners:
        return ft(in_size - 1) / ft(out_size - 1) if out_size > 1 else ft(0)
    if scale is not None and scale > 0:
        return ft(1.0 / scale)
    return ft(in_size) / ft(out_size)


def _aa_taps(in_size: int, out_size: int, scale: Any, mode: str, ft: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Antialiased taps: the filter stretched by the downscale factor, centred on each output pixel,
    normalized to sum 1. Returns ``(xmin, xsize, w)`` with ``w`` of shape ``(out_size, T)``, zero past
    ``xsize``. The mixed float/double steps follow PyTorch's C++ expression by expression."""
    interp = _INTERP_SIZE[mode]
    support = ft(interp * 0.5 * float(scale)) if scale >= 1 else ft(interp * 0.5)
    taps = int(math.ceil(float(support))) * 2 + 1
    i = np.arange(out_size, dtype=np.float64)
    center = (np.float64(scale) * (i + 0.5)).astype(ft)
    invscale = ft(1.0 / np.float64(scale)) if scale >= 1 else ft(1)
    xmin = np.maximum(np.trunc((center - support).astype(ft).astype(np.float64) + 0.5), 0).astype(np.int64)
    xmax = np.trunc((center + support).astype(ft).astype(np.float64) + 0.5).astype(np.int64)
    xsize = np.clip(np.minimum(xmax, in_size) - xmin, 0, taps)
    j = np.arange(taps)
    pos = (xmin[:, None] + j[None, :]).astype(ft) - center[:, None]
    arg = ((pos.astype(ft).astype(np.float64) + 0.5) * np.float64(invscale)).astype(ft)
    w = np.where(j[None, :] < xsize[:, None], _filter(mode, True)(arg, ft), ft(0)).astype(ft)
    total = np.cumsum(w, axis=1, dtype=ft)[:, -1]  # PyTorch sums the taps in order, in ft
    safe = np.where(total != 0, total, ft(1)).astype(ft)
    w = np.where((total != 0)[:, None], (w / safe[:, None]).astype(ft), w)
    return xmin, xsize, w


def _plain_taps(in_size: int, out_size: int, scale: Any, mode: str,
                align_corners: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """uint8 without antialias: the float path's 2 or 4 taps, with taps falling outside the input folded
    onto the border taps (PyTorch's ``_compute_indices_min_size_weights``). Also returns the largest
    partial sum met while folding, which PyTorch uses to choose the fixed-point precision."""
    interp = _INTERP_SIZE[mode]
    cubic = interp > 2
    i = np.arange(out_size, dtype=np.float64)
    if align_corners:
        real = scale * i
    else:
        real = scale * (i + 0.5) - 0.5
        if not cubic:
            real = np.maximum(real, 0.0)
    index = np.minimum(np.floor(real.astype(np.float32)).astype(np.int64), in_size - 1)  # floorf, as PyTorch
    lam = np.minimum(np.maximum(real - index, 0.0), 1.0)
    support = interp // 2
    lo = index - support + 1
    xmin = np.maximum(lo, 0)
    xsize = np.clip(np.minimum(index + support + 1, in_size) - xmin, 0, interp)
    kernel = _filter(mode, False)
    w = np.zeros((out_size, interp))
    rows = np.arange(out_size)
    slot = np.zeros(out_size, np.int64)
    wt_max = 0.0
    for k in range(interp):
        u = lo + k
        slot = np.where(u <= 0, 0, np.where(u >= in_size - 1, xsize - 1, slot))
        w[rows, slot] += kernel(np.float64(k + 1 - support) - lam, np.float64)
        if out_size:
            wt_max = max(wt_max, float(w[rows, slot].max()))
        slot = slot + 1
    return xmin, xsize, w, wt_max


def _fixed_point(w: np.ndarray, wt_max: float) -> tuple[np.ndarray, int]:
    """int16 weights ``round(w * 2**p)`` (halves away from zero) and ``p`` (PIL's precision rule)."""
    p = 0
    while p < 22 and int(0.5 + wt_max * (1 << (p + 1))) < (1 << 15):
        p += 1
    v = w * float(1 << p)
    return np.where(v < 0, np.trunc(v - 0.5), np.trunc(v + 0.5)).astype(np.int64), p


def _one_pass(x: Any, dim: int, xmin: np.ndarray, xsize: np.ndarray, w: np.ndarray, shift: int | None) -> Any:
    """``out[o] = sum_j w[o, j] * x[xmin[o] + j]`` along ``dim`` (all-zero tap columns dropped).
    ``shift``: uint8 fixed point (integer sum, then round, shift and clamp: ``uint8_pass``)."""
    out_size, taps = w.shape
    n = x.shape[dim]
    valid = np.arange(taps)[None, :] < xsize[:, None]
    w = np.where(valid, w, 0)
    used = int(valid.any(axis=0).nonzero()[0].max()) + 1 if valid.any() else 1  # drop all-zero tap columns
    if shift is not None:
        return uint8_pass(x, dim, xmin, w[:, :used], shift)
    idx = np.where(valid, np.minimum(xmin[:, None] + np.arange(taps)[None, :], n - 1), 0)
    idx, w = idx[:, :used], w[:, :used]
    if used <= _FUSED_TAPS:
        return apply_maps(x, [DimMap(dim, n, idx.T, w.T.astype(np.float64))], x.dtype, x.dtype)
    g = take_along(x, dim, idx.reshape(-1))
    shape = list(x.shape)
    g = g.reshape(*shape[:dim], out_size, used, *shape[dim + 1:]).movedim(dim + 1, -1)
    col = [1] * x.ndim
    col[dim] = out_size
    wt = np.ascontiguousarray(w.reshape(*col, used)).astype(x.dtype.numpy)
    return (g * pinned_as(from_host(wt, x.dtype, x.device), x)).sum(-1)


def uint8_pass(x: Any, dim: int, xmin: np.ndarray, weights: np.ndarray, shift: int) -> Any:
    """``x`` (uint8) resized along ``dim``: output ``o`` is ``clamp((2**(shift-1) + sum_j weights[o, j] *
    x[min(xmin[o] + j, n - 1)]) >> shift, 0, 255)``; ``weights`` (outputs, taps) int, zero past a row's taps.

    A pass over the last dim of at least ``TRANSPOSE_MIN_ROWS`` rows runs on the transposed rows: two
    transposing copies around the vectorized pass over dim 0."""
    shape = list(x.shape)
    outer = math.prod(shape[:dim])
    if dim == x.ndim - 1 and outer >= resample_kernel.TRANSPOSE_MIN_ROWS:
        rows = _uint8_pass(x.reshape(outer, shape[dim]).T, 0, xmin, weights, shift)  # (outputs, outer)
        return rows.T.contiguous().reshape(*shape[:dim], weights.shape[0])
    return _uint8_pass(x, dim, xmin, weights, shift)


def _uint8_pass(x: Any, dim: int, xmin: np.ndarray, weights: np.ndarray, shift: int) -> Any:
    """``uint8_pass`` as one launch of the kernel on ``x`` as it is (rows when ``dim`` is not the last)."""
    o_size, taps = weights.shape
    shape = list(x.shape)
    n = shape[dim]
    out_shape = (*shape[:dim], o_size, *shape[dim + 1:])
    outer, inner = math.prod(shape[:dim]), math.prod(shape[dim + 1:])
    device = x.device
    if math.prod(out_shape) == 0 or taps == 0 or n == 0:
        return zeros(*out_shape, dtype=dtypes.uint8, device=device)
    xc = x.contiguous()
    if xc._view.offset:
        xc = xc.clone()  # the kernel reads from the storage's first element
    xmin32, w32 = np.ascontiguousarray(xmin, np.int32), np.ascontiguousarray(weights, np.int32).reshape(-1)
    inline = resample_kernel.inline_tables(device, xmin32.size + w32.size)
    inputs = [xc] if inline else [xc, *(pinned_as(from_host(t, dtypes.int32, device), x) for t in (xmin32, w32))]
    src = resample_kernel.pass_source(n, o_size, taps, shift, inner > 1, xmin32 if inline else None,
                                      w32 if inline else None)

    def run(bufs: list[Buffer]) -> Buffer:
        return resample_kernel.uint8_pass(device, src, bufs, outer, o_size, inner)

    return extern_tensor("resample uint8", run, inputs, dtypes.uint8, out_shape, device)


def separable_resample(x: Any, sizes: list[int], scales: list[float | None], mode: str, align_corners: bool,
                       antialias: bool) -> Any:
    """``x`` (N, C, H, W) resized to ``sizes`` by separable passes (W, then H), as PyTorch's CPU kernel."""
    is_u8 = x.dtype is dtypes.uint8
    ft = np.float64 if is_u8 or x.dtype is dtypes.float64 else np.float32
    if list(x.shape[2:]) == list(sizes):
        return x.clone()  # PyTorch copies; a result must not share the input's storage
    for k in reversed(range(len(sizes))):
        dim = 2 + k
        n, o = x.shape[dim], sizes[k]
        if n == o:
            continue
        scale = area_pixel_scale(n, o, align_corners, scales[k], ft)
        if antialias:
            xmin, xsize, w = _aa_taps(n, o, scale, mode, ft)
            wt_max = float(w.max()) if w.size else 0.0
        else:
            xmin, xsize, w, wt_max = _plain_taps(n, o, scale, mode, align_corners)
        if is_u8:
            w16, p = _fixed_point(w.astype(np.float64), wt_max)
            x = _one_pass(x, dim, xmin, xsize, w16, p)
        else:
            x = _one_pass(x, dim, xmin, xsize, w, None)
    return x
