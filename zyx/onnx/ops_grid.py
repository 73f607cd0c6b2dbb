"""Sampling ONNX operators: GridSample (nearest, linear, cubic; zeros, border, reflection padding;
2-D and 3-D), AffineGrid and Col2Im. GridSample gathers each interpolation tap from the flattened
spatial dims and sums the taps weighted, so each output reads only its own neighbourhood."""
from __future__ import annotations

import itertools
import math

import numpy as np

import zyx.frontend.elementwise as ew
import zyx.frontend.reduce as red
from zyx import dtype as dtypes
from zyx.frontend.gather_scatter import gather
from zyx.frontend.tensor import Tensor
from zyx.nn.functional_conv import fold
from zyx.onnx.registry import Node, onnx_op, upload

_CUBIC_A = -0.75


def _reflect(v: Tensor, low: float, high: float) -> Tensor:
    """Reflect by the near border until inside [low, high] (the reference's integer-count form)."""
    span = high - low
    below, above = low - v, v - high
    n_below, n_above = (below / span).trunc(), (above / span).trunc()
    r_below, r_above = below - n_below * span, above - n_above * span
    even_below, even_above = (n_below % 2) == 0, (n_above % 2) == 0
    from_below = ew.where(even_below, low + r_below, high - r_below)
    from_above = ew.where(even_above, high - r_above, low + r_above)
    return ew.where(v < low, from_below, ew.where(v > high, from_above, v))


def _cubic_weights(t: Tensor) -> list[Tensor]:
    a = _CUBIC_A
    return [((a * (t + 1) - 5 * a) * (t + 1) + 8 * a) * (t + 1) - 4 * a,
            ((a + 2) * t - (a + 3)) * t * t + 1,
            ((a + 2) * (1 - t) - (a + 3)) * (1 - t) * (1 - t) + 1,
            ((a * (2 - t) - 5 * a) * (2 - t) + 8 * a) * (2 - t) - 4 * a]


@onnx_op("GridSample", attrs={"align_corners": 0, "mode": "linear", "padding_mode": "zeros"},
         choices={"mode": ("nearest", "linear", "cubic"), "padding_mode": ("zeros", "border", "reflection")})
def _grid_sample(node: Node, x: Tensor, grid: Tensor) -> Tensor:
    n, c, *sizes = x.shape
    nd = len(sizes)
    out = grid.shape[1:-1]
    points = math.prod(out)
    if n * c * points == 0:
        return x.reshape(-1)[:0].reshape(n, c, *out) if x.numel() else x.reshape(n, c, *[0] * nd)
    align, mode, padding = bool(node["align_corners"]), node["mode"], node["padding_mode"]
    coords = grid.cast(dtypes.float32).reshape(n, 1, points, nd)
    per_dim = []  # (taps, weights) per spatial dim: index tensors (n, 1, points) and weights
    for d, size in enumerate(sizes):
        g = coords[..., nd - 1 - d]  # the grid's last axis lists x (the last spatial dim) first
        v = (g + 1) / 2 * (size - 1) if align else ((g + 1) * size - 1) / 2
        if mode == "nearest":
            v = v.round()
        low, high = (0.0, size - 1.0) if align else (-0.5, size - 0.5)
        if padding == "border":
            v = ew.where((v < low) | (v > high), ew.clip(v, 0.0, size - 1.0), v)
        elif padding == "reflection":
            v = _reflect(v, low, high)
        if mode == "nearest":
            taps, weights = [v], [None]
        else:
            base = v.floor()
            t = v - base
            if mode == "linear":
                taps, weights = [base, base + 1], [1 - t, t]
            else:
                taps, weights = [base - 1, base, base + 1, base + 2], _cubic_weights(t)
        fetched = []
        for tap in taps:
            valid = None
            if padding == "zeros":
                valid = (tap >= 0) & (tap <= size - 1)
                index = ew.clip(tap, 0.0, size - 1.0)
            elif padding == "border":
                index = ew.clip(tap, 0.0, size - 1.0)
            else:
                index = ew.clip(_reflect(tap, low, high).trunc(), 0.0, size - 1.0)
            fetched.append((index.cast(dtypes.int64), valid))
        per_dim.append(list(zip(fetched, weights)))
    strides = [math.prod(sizes[d + 1:]) for d in range(nd)]
    flat = x.reshape(n, c, math.prod(sizes))
    total = None
    for combo in itertools.product(*per_dim):
        index, weight, valid = None, None, None
        for d, ((tap, ok), w) in enumerate(combo):
            index = tap * strides[d] if index is None else index + tap * strides[d]
            if w is not None:
                weight = w if weight is None else weight * w
            if ok is not None:
                valid = ok if valid is None else valid & ok
        value = gather(flat, 2, index.expand(n, c, points))
        if weight is not None:
            value = value * weight.cast(x.dtype)
        if valid is not None:
            value = ew.where(valid, value, 0.0)
        total = value if total is None else total + value
    return total.cast(x.dtype).reshape(n, c, *out)


def _base_grid(sizes: list[int], align: bool) -> np.ndarray:
    """Homogeneous normalized coordinates (x first), one row per output point: (points, nd + 1)."""
    axes = []
    for size in sizes:
        axes.append(np.linspace(-1, 1, size) if align else (2 * np.arange(size) + 1) / size - 1)
    mesh = np.meshgrid(*axes, indexing="ij")
    columns = [m.reshape(-1) for m in reversed(mesh)] + [np.ones(math.prod(sizes))]
    return np.stack(columns, axis=1)


@onnx_op("AffineGrid", attrs={"align_corners": 0})
def _affine_grid(node: Node, theta: Tensor, size: Tensor) -> Tensor:
    n, _, *sizes = node.ints(1, size)
    base = upload(_base_grid(sizes, bool(node["align_corners"])).astype(theta.dtype.numpy))
    grid = red.matmul(base, theta.transpose(1, 2))  # (n, points, nd)
    return grid.reshape(n, *sizes, len(sizes))


@onnx_op("Col2Im", attrs={"dilations": None, "pads": None, "strides": None})
def _col2im(node: Node, x: Tensor, image_shape: Tensor, block_shape: Tensor) -> Tensor:
    image, block = node.ints(1, image_shape), node.ints(2, block_shape)
    nd = len(image)
    if nd != 2:
        raise node.unsupported(f"{nd} spatial dimensions")
    pads = node["pads"] or [0] * (2 * nd)
    if pads[:nd] != pads[nd:]:
        raise node.unsupported("asymmetric pads")
    return fold(x, tuple(image), tuple(block), dilation=tuple(node["dilations"] or [1] * nd),
                padding=tuple(pads[:nd]), stride=tuple(node["strides"] or [1] * nd))
