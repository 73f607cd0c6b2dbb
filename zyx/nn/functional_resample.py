"""Resampling: ``interpolate`` (nearest, nearest-exact, linear, bilinear, bicubic, trilinear, area, lanczos),
``pixel_shuffle`` and ``pixel_unshuffle``.

Source positions and weights depend only on sizes, so they are computed on the host exactly as
PyTorch's CPU kernels compute them (float32 arithmetic for float32/16-bit input, float64 for float64)
and the output is one fused gather kernel (``zyx.frontend.index_map``): 2 taps per linear dim, 4 per
cubic dim, nested as PyTorch nests its sums. Nearest modes whose source index is ``o // k`` or ``o * k``
(integer factors) are plain views (an expand read through a reshape, or a strided slice) and need no
gather. Antialiased and uint8 bilinear/bicubic (and lanczos) go through PyTorch's separable kernels
(``functional_resample_separable``). ``pixel_shuffle`` is a reshape-permute-reshape (one fused copy).
Gradients: the adjoint maps.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from zyx import dtype as dtypes
from zyx.errors import DTypeError, ShapeError
from zyx.frontend.autograd.engine import needs_grad, no_grad, record
from zyx.frontend.creation import from_host, host_cast, pinned_as
from zyx.frontend.index_map import DimMap, apply_adjoint, apply_maps, nested_sum
from zyx.frontend.padding import pad_mode
from zyx.nn.functional_resample_separable import area_pixel_scale, separable_resample

_MODES = {"nearest": None, "nearest-exact": None, "linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3,
          "area": None, "lanczos": 2}
_ALIGNABLE = ("linear", "bilinear", "bicubic", "trilinear", "lanczos")
_ANTIALIASED = ("bilinear", "bicubic", "lanczos")
_CUBIC_A = -0.75


def _spatial_arg(v: Any, nd: int, name: str) -> list[Any]:
    if isinstance(v, (list, tuple)):
        if len(v) != nd:
            raise ShapeError(f"interpolate: {name} {tuple(v)} must have {nd} entries for {nd} spatial dims")
        return list(v)
    return [v] * nd


def _output_sizes(x: Any, nd: int, size: Any, scale_factor: Any,
                  recompute_scale_factor: bool | None) -> tuple[list[int], list[float | None]]:
    """Output sizes and the scales handed to the index computation (None: from the sizes), as PyTorch."""
    spatial = list(x.shape[2:])
    if (size is None) == (scale_factor is None):
        raise ShapeError("interpolate: exactly one of size and scale_factor must be given")
    if size is not None:
        if recompute_scale_factor:
            raise ShapeError("interpolate: recompute_scale_factor is not meaningful with an explicit size (as "
                             "PyTorch); give scale_factor instead")
        sizes = [int(s) for s in _spatial_arg(size, nd, "size")]
        if any(s < 0 for s in sizes):
            raise ShapeError(f"interpolate: output sizes must be non-negative, got {sizes}")
        return sizes, [None] * nd
    scales = [float(s) for s in _spatial_arg(scale_factor, nd, "scale_factor")]
    if any(not s > 0 or math.isinf(s) for s in scales):
        raise ShapeError(f"interpolate: scale_factor must be positive and finite, got {scale_factor}")
    sizes = [math.floor(float(n) * s) for n, s in zip(spatial, scales)]
    return sizes, [None] * nd if recompute_scale_factor else scales


def _f(dt: Any) -> Any:
    return np.float64 if dt is dtypes.float64 else np.float32


def _nearest_map(dim: int, in_size: int, out_size: int, scale: float | None, exact: bool) -> DimMap:
    o = np.arange(out_size)
    s = np.float32(1.0 / scale) if scale is not None and scale > 0 else np.float32(in_size) / np.float32(out_size)
    if exact:
        src = np.floor(((o + 0.5) * np.float64(s)).astype(np.float32)).astype(np.int64)
    elif out_size == in_size:
        src = o
    elif out_size == 2 * in_size:
        src = o >> 1
    else:
        src = np.floor(o.astype(np.float32) * s).astype(np.int64)
    return DimMap(dim, in_size, np.minimum(src, in_size - 1).reshape(1, -1))


def _linear_map(dim: int, in_size: int, out_size: int, align_corners: bool, scale: float | None,
                ft: Any) -> DimMap:
    o = np.arange(out_size)
    if out_size == in_size:  # PyTorch copies: weights (1, 0) on the same element
        return DimMap(dim, in_size, np.stack([o, o]), np.stack([np.ones(out_size), np.zeros(out_size)]))
    r = area_pixel_scale(in_size, out_size, align_corners, scale, ft)
    of = o.astype(ft)
    real = r * of if align_corners else np.maximum(r * (of + ft(0.5)) - ft(0.5), ft(0))
    i0 = np.minimum(np.floor(real).astype(np.int64), in_size - 1)
    lam1 = np.minimum(np.maximum(real - i0.astype(ft), ft(0)), ft(1)).astype(ft)
    lam0 = (ft(1) - lam1).astype(ft)
    i1 = i0 + (i0 < in_size - 1)
    return DimMap(dim, in_size, np.stack([i0, i1]), np.stack([lam0, lam1]).astype(np.float64))


def _cubic_map(dim: int, in_size: int, out_size: int, align_corners: bool, scale: float | None, ft: Any) -> DimMap:
    o = np.arange(out_size)
    r = area_pixel_scale(in_size, out_size, align_corners, scale, ft)
    of = o.astype(ft)
    real = (r * of if align_corners else r * (of + ft(0.5)) - ft(0.5)).astype(ft)
    i0 = np.minimum(np.floor(real).astype(np.int64), in_size - 1)
    t = np.minimum(np.maximum(real - i0.astype(ft), ft(0)), ft(1)).astype(ft)
    a = ft(_CUBIC_A)

    def near(x: Any) -> Any:  # |x| <= 1
        return ((a + ft(2)) * x - (a + ft(3))) * x * x + ft(1)

    def far(x: Any) -> Any:  # 1 < |x| < 2
        return ((a * x - ft(5) * a) * x + ft(8) * a) * x - ft(4) * a

    t2 = (ft(1) - t).astype(ft)
    w = np.stack([far(t + ft(1)), near(t), near(t2), far(t2 + ft(1))]).astype(ft)
    idx = np.stack([np.clip(i0 - 1 + j, 0, in_size - 1) for j in range(4)])
    return DimMap(dim, in_size, idx, w.astype(np.float64))


def _weights_as(m: DimMap, dt: Any, linear: bool) -> DimMap:
    """``m`` with its weights rounded to ``dt``; a linear map's ``lambda0`` is ``1 - lambda1`` computed from
    the rounded ``lambda1``, as PyTorch's kernels store them."""
    if not linear:
        return DimMap(m.dim, m.size, m.idx, host_cast(m.w, dt).astype(np.float64))
    lam1 = host_cast(m.w[1], dt).astype(np.float64)
    return DimMap(m.dim, m.size, m.idx, np.stack([host_cast(1 - lam1, dt).astype(np.float64), lam1]))


def _as_view(x: Any, m: DimMap) -> Any | None:
    """A nearest map that is ``o // k`` (upsampling by an integer) or ``o * k`` (downsampling): a view."""
    idx, d, n = m.idx[0], m.dim, m.size
    out = idx.size
    if out % n == 0 and np.array_equal(idx, np.arange(out) // (out // n)):
        k = out // n
        shape = list(x.shape)
        wide = x.unsqueeze(d + 1).expand(*shape[:d + 1], k, *shape[d + 1:])
        return wide.reshape(*shape[:d], out, *shape[d + 1:])
    if out and n % out == 0 and np.array_equal(idx, np.arange(out) * (n // out)):
        index = [slice(None)] * x.ndim
        index[d] = slice(0, n, n // out)
        return x[tuple(index)]
    return None


def interpolate(input: Any, size: Any = None, scale_factor: Any = None, mode: str = "nearest",  # noqa: A002
                align_corners: bool | None = None, recompute_scale_factor: bool | None = None,
                antialias: bool = False) -> Any:
    """Resize the spatial dims of ``(N, C, *spatial)`` (PyTorch's ``F.interpolate``): ``mode`` is
    ``"nearest"``, ``"nearest-exact"``, ``"linear"`` (3-D), ``"bilinear"``/``"bicubic"`` (4-D),
    ``"trilinear"`` (5-D), ``"area"`` (adaptive average pooling, 3-D/4-D) or ``"lanczos"`` (4-D, with
    ``antialias=True`` only). ``antialias=True`` (bilinear, bicubic, lanczos; float32, float64, uint8) widens
    the filter by the downscale factor, as PIL. uint8 bilinear/bicubic use PyTorch's fixed-point
    arithmetic and equal its results bit for bit. A nearest resize by an
    integer downscale factor (or to the same size) is a view of the input, as ``x[..., ::k]`` is: unlike
    PyTorch's result it shares the input's storage, so ``clone()`` it before writing into it in place."""
    x = input
    if mode not in _MODES:
        raise ShapeError(f"interpolate: mode must be one of {', '.join(_MODES)}; got {mode!r}")
    if x.ndim < 3 or x.ndim > 5:
        raise ShapeError(f"interpolate: expected a 3-D, 4-D or 5-D input (N, C, *spatial), got shape {x.shape}")
    nd = x.ndim - 2
    want = _MODES[mode]
    if want is not None and want != nd:
        raise ShapeError(f"interpolate: mode {mode!r} expects a {want + 2}-D input, got shape {x.shape}")
    if align_corners is not None and mode not in _ALIGNABLE:
        raise ShapeError("interpolate: align_corners can only be set with the interpolating modes "
                         f"{', '.join(_ALIGNABLE)}, not {mode!r}")
    _check_antialias(x, mode, align_corners, antialias)
    align = bool(align_corners)
    sizes, scales = _output_sizes(x, nd, size, scale_factor, recompute_scale_factor)
    if mode == "area":
        from zyx.nn.functional_pool import adaptive_avg_pool1d, adaptive_avg_pool2d

        if not x.dtype.is_float:
            raise DTypeError(f"interpolate: mode 'area' needs a floating point input (as PyTorch), got {x.dtype.name}")

        if nd == 3:
            raise NotImplementedError("interpolate: mode 'area' on a 5-D input needs adaptive_avg_pool3d, which "
                                      "zyx does not have")
        return (adaptive_avg_pool1d if nd == 1 else adaptive_avg_pool2d)(x, sizes if nd > 1 else sizes[0])
    spatial = x.shape[2:]
    if any(n <= 0 for n in spatial) or any(s <= 0 for s in sizes):
        raise ShapeError(f"interpolate: input spatial size {tuple(spatial)} and output size {tuple(sizes)} "
                         "must both be greater than 0")
    if mode.startswith("nearest"):
        if x.dtype.is_bool:
            raise DTypeError("interpolate: nearest modes do not accept bool tensors (as PyTorch)")
        maps = [_nearest_map(2 + i, n, s, sc, mode == "nearest-exact")
                for i, (n, s, sc) in enumerate(zip(spatial, sizes, scales))]
        rest = []
        for m in maps:
            if m.size == m.out_size and np.array_equal(m.idx[0], np.arange(m.size)):
                continue
            view = _as_view(x, m)
            if view is None:
                rest.append(m)
            else:
                x = view
        return apply_maps(x, rest) if rest else x
    if not x.dtype.is_float and not (x.dtype is dtypes.uint8 and mode in _ANTIALIASED):
        raise DTypeError(f"interpolate: mode {mode!r} needs a floating point input (PyTorch takes uint8 only in "
                         f"the nearest, bilinear, bicubic and lanczos modes), got {x.dtype.name}")
    if antialias or x.dtype is dtypes.uint8:  # PyTorch's separable (PIL-style) kernels
        return separable_resample(x, sizes, scales, mode, align, antialias)
    ft = _f(x.dtype)
    if mode != "bicubic" and not align and x.numel() and all(s in (n, 2 * n) for n, s in zip(spatial, sizes)) \
            and any(s == 2 * n for n, s in zip(spatial, sizes)):
        maps = [_linear_map(2 + i, n, s, align, sc, ft) for i, (n, s, sc) in enumerate(zip(spatial, sizes, scales))]
        dims = [2 + i for i, (n, s) in enumerate(zip(spatial, sizes)) if s == 2 * n]
        if not needs_grad(x):
            return _linear_2x(x, dims)
        with no_grad():
            out = _linear_2x(x, dims)
        compute = dtypes.float64 if x.dtype is dtypes.float64 else dtypes.float32
        return record("upsample_linear", out, [x], lambda g: (apply_adjoint(g, maps, compute),))
    build = _cubic_map if mode == "bicubic" else _linear_map
    maps = [build(2 + i, n, s, align, sc, ft) for i, (n, s, sc) in enumerate(zip(spatial, sizes, scales))]
    if x.dtype.is_float and x.dtype.itemsize == 2 and not (mode == "bilinear" and sum(sizes) <= 128):
        # PyTorch's generic kernel stores the weights in the input's dtype (its channels-last bilinear
        # kernel, taken for small outputs, keeps them in float32)
        maps = [_weights_as(m, x.dtype, mode != "bicubic") for m in maps]
    return apply_maps(x, maps, dtypes.float64 if x.dtype is dtypes.float64 else dtypes.float32)


def _check_antialias(x: Any, mode: str, align_corners: bool | None, antialias: bool) -> None:
    """PyTorch's rules: antialias only for bilinear/bicubic/lanczos on 4-D input; lanczos only with it
    (and without align_corners); the antialiased kernels exist for float32, float64 and uint8."""
    if antialias and (mode not in _ANTIALIASED or x.ndim != 4):
        raise ShapeError(f"interpolate: antialias=True is only for the modes {', '.join(_ANTIALIASED)} on a 4-D "
                         f"input (as PyTorch); got mode {mode!r} and shape {x.shape}")
    if mode == "lanczos" and not antialias:
        raise ShapeError("interpolate: mode 'lanczos' needs antialias=True (as PyTorch)")
    if mode == "lanczos" and align_corners:
        raise ShapeError("interpolate: mode 'lanczos' does not support align_corners=True (as PyTorch)")
    if antialias and x.dtype not in (dtypes.float32, dtypes.float64, dtypes.uint8):
        raise DTypeError(f"interpolate: antialias=True needs a float32, float64 or uint8 input (PyTorch has no "
                         f"antialiased kernel for other dtypes), got {x.dtype.name}")


def _linear_2x(x: Any, dims: list[int]) -> Any:
    """Linear upsampling by exactly 2 along ``dims`` (align_corners=False) without gathers. Output
    ``2k + r`` reads input ``k - 1 + r`` and ``k + r`` with weights ``(0.25, 0.75)`` for ``r = 0`` and
    ``(0.75, 0.25)`` for ``r = 1``, clamped at the borders: on the input replicate-padded by one
    (one padding kernel, a quarter of the output's traffic) both taps are strided views ``xp[k + r + a]``,
    so the output is one kernel of plain vector loads. (Not recorded for autograd: ``interpolate``
    records the adjoint of the equivalent maps.)"""
    compute = dtypes.float64 if x.dtype is dtypes.float64 else dtypes.float32
    # replicate pad by one: the clamped border taps become in-range reads
    xp = pad_mode(x.cast(compute), [(1, 1) if d in dims else (0, 0) for d in range(x.ndim)], "replicate")
    pos = {d: d + sum(1 for e in dims if e < d) for d in range(x.ndim)}  # where dim d lands
    weights = {}
    for d in dims:
        col = [1] * (x.ndim + len(dims))
        col[pos[d] + 1] = 2
        for a, w in enumerate(([0.25, 0.75], [0.75, 0.25])):
            weights[(d, a)] = pinned_as(from_host(np.array(w, compute.numpy).reshape(col), compute, x.device), x)

    def tap(taps: dict[int, int]) -> Any:
        """``xp[k + r + a]`` along each resized dim as (k, r) dims: overlapping windows, a view."""
        t = xp
        for d in sorted(dims, reverse=True):  # inserting after d leaves the lower dims in place
            t = t.narrow(d, taps[d], x.shape[d] + 1).unfold(d, 2, 1).movedim(-1, d + 1)
        return t

    out_shape = [2 * n if d in dims else n for d, n in enumerate(x.shape)]
    out = nested_sum([(d, 2, d) for d in dims], tap, lambda d, a, part: part * weights[(d, a)])
    return out.reshape(out_shape).cast(x.dtype)


def upsample(input: Any, size: Any = None, scale_factor: Any = None, mode: str = "nearest",  # noqa: A002
             align_corners: bool | None = None) -> Any:
    """``interpolate`` (PyTorch's deprecated name)."""
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input: Any, size: Any = None, scale_factor: Any = None) -> Any:  # noqa: A002
    """``interpolate(..., mode="nearest")``."""
    return interpolate(input, size, scale_factor, "nearest")


def upsample_bilinear(input: Any, size: Any = None, scale_factor: Any = None) -> Any:  # noqa: A002
    """``interpolate(..., mode="bilinear", align_corners=True)`` (PyTorch's definition)."""
    return interpolate(input, size, scale_factor, "bilinear", True)


def _factor(v: Any, fn: str) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v <= 0:
        raise ShapeError(f"{fn}: the factor must be a positive int, got {v!r}")
    return int(v)


def pixel_shuffle(input: Any, upscale_factor: int) -> Any:  # noqa: A002
    """``(*, C*r*r, H, W) -> (*, C, H*r, W*r)``: a reshape, a permute and a reshape."""
    x, r = input, _factor(upscale_factor, "pixel_shuffle")
    if x.ndim < 3:
        raise ShapeError(f"pixel_shuffle: expected an input of rank >= 3, got shape {x.shape}")
    *lead, c, h, w = x.shape
    if c % (r * r):
        raise ShapeError(f"pixel_shuffle: the channel count {c} is not divisible by upscale_factor^2 = {r * r}")
    k = len(lead)
    y = x.reshape(*lead, c // (r * r), r, r, h, w)
    y = y.permute(*range(k), k, k + 3, k + 1, k + 4, k + 2)
    return y.reshape(*lead, c // (r * r), h * r, w * r)


def pixel_unshuffle(input: Any, downscale_factor: int) -> Any:  # noqa: A002
    """``(*, C, H*r, W*r) -> (*, C*r*r, H, W)``, the inverse of ``pixel_shuffle``."""
    x, r = input, _factor(downscale_factor, "pixel_unshuffle")
    if x.ndim < 3:
        raise ShapeError(f"pixel_unshuffle: expected an input of rank >= 3, got shape {x.shape}")
    *lead, c, h, w = x.shape
    if h % r or w % r:
        raise ShapeError(f"pixel_unshuffle: height {h} and width {w} must be divisible by downscale_factor {r}")
    k = len(lead)
    y = x.reshape(*lead, c, h // r, r, w // r, r)
    y = y.permute(*range(k), k, k + 2, k + 4, k + 1, k + 3)
    return y.reshape(*lead, c * r * r, h // r, w // r)
