"""ONNX Resize: separable, one resized axis at a time. Each output position's source taps and
weights along the axis are computed on the host from the operator's attributes (the shapes and
scales are known at run time), and the device work is an index_select per tap and a weighted sum,
so a NaN or infinity reaches only the outputs whose taps read it."""
from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np

import zyx.frontend.elementwise as ew
from zyx import dtype as dtypes
from zyx.frontend.gather_scatter import index_select
from zyx.frontend.tensor import Tensor
from zyx.onnx.registry import Node, axis_of, onnx_op, upload

_COORDINATE_MODES = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
                     "tf_crop_and_resize")
_NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def _source_coordinates(mode: str, out: int, size: int, scale: float, roi: tuple[float, float] | None
                        ) -> tuple[np.ndarray, np.ndarray | None]:
    """Each output position's coordinate in the input, and (tf_crop_and_resize) which fall outside."""
    y = np.arange(out, dtype=np.float64)
    width = scale * size
    if mode == "align_corners":
        return (np.zeros(out) if width == 1 else y * (size - 1) / (width - 1)), None
    if mode == "asymmetric":
        return y / scale, None
    if mode == "tf_crop_and_resize":
        lo, hi = roi if roi is not None else (0.0, 1.0)
        x = np.full(out, (hi - lo) * (size - 1) / 2) if width == 1 else y * (hi - lo) * (size - 1) / (width - 1)
        x = x + lo * (size - 1)
        return x, (x < 0) | (x > size - 1)
    if mode == "pytorch_half_pixel":
        return (np.full(out, -0.5) if width == 1 else (y + 0.5) / scale - 0.5), None
    if mode == "half_pixel":
        return (y + 0.5) / scale - 0.5, None
    center = size / 2  # half_pixel_symmetric
    return center * (1 - out / width) + (y + 0.5) / scale - 0.5, None


def _cubic(ratio: float, scale: float, a: float, antialias: bool) -> np.ndarray:
    if not antialias:
        r = ratio
        return np.array([((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a,
                         ((a + 2) * r - (a + 3)) * r * r + 1,
                         ((a + 2) * (1 - r) - (a + 3)) * (1 - r) * (1 - r) + 1,
                         ((a * ((1 - r) + 1) - 5 * a) * ((1 - r) + 1) + 8 * a) * ((1 - r) + 1) - 4 * a])
    scale = min(scale, 1.0)
    start = int(np.floor(-2 / scale) + 1)
    t = np.abs(scale * (np.arange(start, 2 - start) - ratio))
    coeffs = np.where(t <= 1, (a + 2) * t**3 - (a + 3) * t**2 + 1,
                      np.where(t < 2, a * t**3 - 5 * a * t**2 + 8 * a * t - 4 * a, 0.0))
    return coeffs / coeffs.sum()


def _linear(ratio: float, scale: float, antialias: bool) -> np.ndarray:
    if not antialias:
        return np.array([1 - ratio, ratio])
    scale = min(scale, 1.0)
    start = int(np.floor(-1 / scale) + 1)
    coeffs = np.clip(1 - np.abs((np.arange(start, 2 - start) - ratio) * scale), 0, 1)
    return coeffs / coeffs.sum()


def _nearest(ratio: float, mode: str) -> np.ndarray:
    if ratio == 1:
        return np.array([0.0, 1.0])
    pick_right = {"round_prefer_floor": ratio > 0.5, "round_prefer_ceil": ratio >= 0.5, "floor": False,
                  "ceil": True}[mode]
    return np.array([0.0, 1.0]) if pick_right else np.array([1.0, 0.0])


def taps(node: Node, out: int, size: int, scale: float, roi: tuple[float, float] | None
         ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """(indices, weights) of shape (out, taps) along one axis, and the extrapolated positions."""
    x, outside = _source_coordinates(node["coordinate_transformation_mode"], out, size, scale, roi)
    floor = np.floor(x)
    ratios = np.where(x == floor, 1.0, x - floor)  # ratio in (0, 1]: the left pixel preferred
    mode, antialias = node["mode"], bool(node["antialias"])
    if mode == "nearest":
        coeffs = np.stack([_nearest(float(r), node["nearest_mode"]) for r in ratios])
    elif mode == "linear":
        coeffs = np.stack([_linear(float(r), scale, antialias) for r in ratios])
    else:
        coeffs = np.stack([_cubic(float(r), scale, node["cubic_coeff_a"], antialias) for r in ratios])
    n = coeffs.shape[1]
    half = int(np.ceil(n / 2))
    padded = x + half
    p = np.floor(padded).astype(np.int64)
    frac = padded - p
    if n % 2 == 0:
        shift = np.where(frac == 0, -(n // 2), -(n // 2) + 1)
    else:
        shift = np.where(frac <= 0.5, -((n - 1) // 2), -((n - 1) // 2) + 1)
    neighbors = (p + shift)[:, None] + np.arange(n)[None, :] - half
    if node["exclude_outside"]:
        coeffs = np.where((neighbors < 0) | (neighbors >= size), 0.0, coeffs)
        total = coeffs.sum(axis=1, keepdims=True)
        coeffs = coeffs / np.where(total == 0, 1.0, total)
    return np.clip(neighbors, 0, size - 1), coeffs, outside


def _resize_axis(node: Node, x: Tensor, axis: int, out: int, scale: float, roi: tuple[float, float] | None
                 ) -> Tensor:
    indices, weights, outside = taps(node, out, x.shape[axis], scale, roi)
    shape = [out if d == axis else 1 for d in range(x.ndim)]
    if node["mode"] == "nearest":
        chosen = indices[np.arange(out), weights.argmax(axis=1)]
        y = index_select(x, axis, upload(chosen.astype(np.int64)))
    else:
        y = None
        for j in range(indices.shape[1]):
            if not weights[:, j].any():
                continue
            w = upload(weights[:, j].astype(x.dtype.numpy)).reshape(*shape)
            term = index_select(x, axis, upload(indices[:, j])) * w
            y = term if y is None else y + term
        y = index_select(x, axis, upload(indices[:, 0])) * 0 if y is None else y
    if outside is not None and outside.any():
        mask = upload(outside).reshape(*shape)
        y = ew.where(mask, node["extrapolation_value"], y)
    return y


_RESIZE_DEFAULTS = {"antialias": 0, "axes": None, "coordinate_transformation_mode": "half_pixel",
                    "cubic_coeff_a": -0.75, "exclude_outside": 0, "extrapolation_value": 0.0,
                    "keep_aspect_ratio_policy": "stretch", "mode": "nearest", "nearest_mode": "round_prefer_floor"}


@onnx_op("Resize", attrs=_RESIZE_DEFAULTS,
         choices={"coordinate_transformation_mode": _COORDINATE_MODES, "mode": ("nearest", "linear", "cubic"),
                  "nearest_mode": _NEAREST_MODES, "keep_aspect_ratio_policy": ("stretch", "not_larger", "not_smaller"),
                  "antialias": (0, 1)})
def _resize(node: Node, x: Tensor, roi: Tensor | None = None, scales: Tensor | None = None,
            sizes: Tensor | None = None) -> Tensor:
    rank = x.ndim
    axes = [axis_of(a, rank) for a in node["axes"]] if node["axes"] is not None else list(range(rank))
    roi_values = None if roi is None or roi.numel() == 0 else [float(v) for v in node.host(1, roi).reshape(-1)]
    scale_values = None if scales is None or scales.numel() == 0 else \
        [float(v) for v in node.host(2, scales).reshape(-1)]
    size_values = None if sizes is None or sizes.numel() == 0 else node.ints(3, sizes)
    scale_of = dict.fromkeys(range(rank), 1.0)
    out_of = {d: x.shape[d] for d in range(rank)}
    if size_values is not None:
        for d, s in zip(axes, size_values):
            scale_of[d], out_of[d] = s / x.shape[d], s
        policy = node["keep_aspect_ratio_policy"]
        if policy != "stretch":
            pick = min if policy == "not_larger" else max
            common = pick(scale_of[d] for d in axes)
            for d in axes:
                scale_of[d], out_of[d] = common, int(common * x.shape[d] + 0.5)
    elif scale_values is not None:
        for d, s in zip(axes, scale_values):
            scale_of[d], out_of[d] = s, int(s * x.shape[d])
    else:
        raise ValueError(f"ONNX Resize node {node.name!r}: neither scales nor sizes is given")
    roi_of = {}
    if roi_values is not None:
        k = len(roi_values) // 2
        for i, d in enumerate(axes if k == len(axes) else range(rank)):
            roi_of[d] = (roi_values[i], roi_values[k + i])
    work = x if x.dtype in (dtypes.float32, dtypes.float64) or node["mode"] == "nearest" else x.cast(dtypes.float32)
    for d in axes:
        unchanged = math.isclose(scale_of[d], 1.0) and out_of[d] == work.shape[d]
        identity_roi = d not in roi_of or (math.isclose(roi_of[d][0], 0.0) and math.isclose(roi_of[d][1], 1.0))
        if unchanged and (identity_roi or node["coordinate_transformation_mode"] != "tf_crop_and_resize"):
            continue
        work = _resize_axis(node, work, d, out_of[d], scale_of[d], roi_of.get(d))
    return _cast_back(work, x.dtype)


def _cast_back(y: Tensor, dt: Any) -> Tensor:
    if y.dtype == dt:
        return y
    if dt.is_float:
        return y.cast(dt)
    info = np.iinfo(dt.numpy)
    return ew.clip(y, float(info.min), float(info.max)).cast(dt)


@onnx_op("Upsample", attrs={"mode": "nearest"}, choices={"mode": ("nearest",)}, versions=(9, 10))
def _upsample(node: Node, x: Tensor, scales: Tensor) -> Tensor:
    # Resize's ancestor: nearest neighbour at floor(i / scale), Resize's asymmetric/floor mode.
    as_resize = replace(node, attrs={**_RESIZE_DEFAULTS, "coordinate_transformation_mode": "asymmetric",
                                     "nearest_mode": "floor"},
                        input_names=[node.input_names[0], "", node.input_names[1], ""])
    return _resize(as_resize, x, None, scales)
