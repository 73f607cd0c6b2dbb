"""Neural-network ONNX operators: Conv/ConvTranspose, the pools, the normalizations, LRN and the
classification losses. Pools are built from shifted strided slices (one fused elementwise kernel per
pool), which covers ONNX's asymmetric pads, dilations and ceil mode in 1, 2 and 3 dims alike."""
from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

import zyx.frontend.elementwise as ew
import zyx.frontend.reduce as red
import zyx.nn.functional_conv as fc
from zyx import dtype as dtypes
from zyx.frontend.creation import arange, full, ones_like
from zyx.frontend.gather_scatter import gather, scatter
from zyx.frontend.movement import pad
from zyx.frontend.softmax import log_softmax
from zyx.frontend.tensor import Tensor
from zyx.onnx.registry import REQUIRED, Node, axis_of, onnx_op

_AUTO_PAD = ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")


def _spatial_pads(node: Node, sizes: tuple[int, ...], kernel: list[int], strides: list[int],
                  dilations: list[int]) -> list[tuple[int, int]]:
    """(begin, end) padding per spatial dim from ``pads`` or ``auto_pad``."""
    n = len(sizes)
    auto = node.attrs.get("auto_pad", "NOTSET")
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        out = []
        for size, k, s, d in zip(sizes, kernel, strides, dilations):
            total = max((-(-size // s) - 1) * s + (k - 1) * d + 1 - size, 0)
            small = total // 2
            out.append((small, total - small) if auto == "SAME_UPPER" else (total - small, small))
        return out
    if auto == "VALID" or node.attrs.get("pads") is None:
        return [(0, 0)] * n
    pads = node["pads"]
    return list(zip(pads[:n], pads[n:]))


def _conv_params(node: Node, x: Tensor, kernel: list[int]) -> tuple[list[int], list[int], list[tuple[int, int]]]:
    n = x.ndim - 2
    strides = node["strides"] or [1] * n
    dilations = node["dilations"] or [1] * n
    return strides, dilations, _spatial_pads(node, x.shape[2:], kernel, strides, dilations)


def _torch_pads(pads: list[tuple[int, int]]) -> list[int]:
    return [amount for lo_hi in reversed(pads) for amount in lo_hi]


_CONV = {1: fc.conv1d, 2: fc.conv2d, 3: fc.conv3d}
_CONV_T = {1: fc.conv_transpose1d, 2: fc.conv_transpose2d, 3: fc.conv_transpose3d}
_CONV_ATTRS = {"auto_pad": "NOTSET", "dilations": None, "group": 1, "kernel_shape": None, "pads": None,
               "strides": None}


def _check_rank(node: Node, x: Tensor, table: dict[int, Any]) -> None:
    if x.ndim - 2 not in table:
        raise node.unsupported(f"{x.ndim - 2} spatial dimensions")


@onnx_op("Conv", attrs=_CONV_ATTRS, choices={"auto_pad": _AUTO_PAD})
def conv_nd(node: Node, x: Tensor, w: Tensor, b: Tensor | None = None) -> Tensor:
    """ONNX Conv in 1, 2 or 3 spatial dims (asymmetric pads applied to the input first)."""
    _check_rank(node, x, _CONV)
    strides, dilations, pads = _conv_params(node, x, list(w.shape[2:]))
    if any(lo != hi for lo, hi in pads):
        x, padding = pad(x, _torch_pads(pads)), 0
    else:
        padding = [lo for lo, _ in pads]
    return _CONV[x.ndim - 2](x, w, b, strides, padding, dilations, node["group"])


@onnx_op("ConvTranspose", attrs={**_CONV_ATTRS, "output_padding": None, "output_shape": None},
         choices={"auto_pad": _AUTO_PAD})
def _conv_transpose(node: Node, x: Tensor, w: Tensor, b: Tensor | None = None) -> Tensor:
    # The full transposed convolution (no padding), then cropped or zero-extended to ONNX's output
    # window, then the bias: the extra positions of output_padding get the bias too.
    _check_rank(node, x, _CONV_T)
    n = x.ndim - 2
    strides = node["strides"] or [1] * n
    dilations = node["dilations"] or [1] * n
    extra = node["output_padding"] or [0] * n
    kernel = list(w.shape[2:])
    full_sizes = [s * (i - 1) + (k - 1) * d + 1 for i, k, s, d in zip(x.shape[2:], kernel, strides, dilations)]
    if node["output_shape"] is not None or node["auto_pad"] in ("SAME_UPPER", "SAME_LOWER"):
        # ONNX's split of the total padding (Python floor division: a negative total extends the output)
        if node["output_shape"] is not None:
            target = list(node["output_shape"])[-n:]
        else:
            target = [i * s for i, s in zip(x.shape[2:], strides)]
        pads = []
        for size, want, extra_i in zip(full_sizes, target, extra):
            total = size + extra_i - want
            upper = node["auto_pad"] == "SAME_UPPER"
            pads.append((total // 2, total - total // 2) if upper else (total - total // 2, total // 2))
    elif node["auto_pad"] == "VALID" or node["pads"] is None:
        pads = [(0, 0)] * n
    else:
        pads = list(zip(node["pads"][:n], node["pads"][n:]))
    y = _CONV_T[n](x, w, None, strides, 0, 0, node["group"], dilations)
    crop = [(-lo, extra_i - hi) for (lo, hi), extra_i in zip(pads, extra)]
    if any(lo or hi for lo, hi in crop):
        y = pad(y, _torch_pads(crop))
    return y if b is None else y + b.reshape(1, -1, *[1] * n)


# -- pools ------------------------------------------------------------------------------------------

class _Pool:
    """One pool's geometry: kernel, strides, dilations, (begin, end) pads, output sizes, and how far
    past the input (and its begin pad) the last window reaches."""

    def __init__(self, node: Node, x: Tensor) -> None:
        n = x.ndim - 2
        self.kernel = list(node["kernel_shape"])
        self.strides = node.attrs.get("strides") or [1] * n
        self.dilations = node.attrs.get("dilations") or [1] * n
        self.pads = _spatial_pads(node, x.shape[2:], self.kernel, self.strides, self.dilations)
        self.outs, self.reach = [], []
        ceil = node.attrs.get("ceil_mode")
        for size, k, s, d, (lo, hi) in zip(x.shape[2:], self.kernel, self.strides, self.dilations, self.pads):
            span = size + lo + hi - ((k - 1) * d + 1)
            out = (-(-span // s) if ceil else span // s) + 1
            if ceil and (out - 1) * s >= size + lo:
                out -= 1  # a window may not start in the end padding
            self.outs.append(out)
            self.reach.append(max((out - 1) * s + (k - 1) * d + 1 - (size + lo), 0))

    def offsets(self) -> list[tuple[int, ...]]:
        return list(itertools.product(*[range(k) for k in self.kernel]))

    def windows(self, padded: Tensor) -> list[Tensor]:
        """The strided slice of ``padded`` (begin-padded) under each kernel offset."""
        return [padded[(slice(None), slice(None), *[slice(o * d, o * d + (out - 1) * s + 1, s) for o, d, s, out in
                                                    zip(offsets, self.dilations, self.strides, self.outs)])]
                for offsets in self.offsets()]

    def padded(self, x: Tensor, fill: float, include_pads: bool = False) -> Tensor:
        """``x`` with the begin pads and whatever the last windows reach past it filled with ``fill``;
        with ``include_pads`` the declared pads hold 1 and only the reach beyond them ``fill``."""
        if not include_pads:
            return pad(x, _torch_pads([(lo, reach) for (lo, _), reach in zip(self.pads, self.reach)]), value=fill)
        inner = pad(x, _torch_pads(self.pads), value=1.0)
        return pad(inner, _torch_pads([(0, max(reach - hi, 0)) for (_, hi), reach in zip(self.pads, self.reach)]),
                   value=fill)


def _pooled_sum(windows: list[Tensor]) -> Tensor:
    total = windows[0]
    for w in windows[1:]:
        total = total + w
    return total


_POOL_ATTRS = {"auto_pad": "NOTSET", "ceil_mode": 0, "dilations": None, "kernel_shape": None, "pads": None,
               "strides": None}


@onnx_op("MaxPool", attrs={**_POOL_ATTRS, "storage_order": 0}, choices={"auto_pad": _AUTO_PAD})
def _max_pool(node: Node, x: Tensor) -> Tensor | tuple[Tensor, Tensor]:
    pool = _Pool(node, x)
    low = float("-inf") if x.dtype.is_float else int(np.iinfo(x.dtype.numpy).min)
    windows = pool.windows(pool.padded(x, low))
    best = windows[0]
    for w in windows[1:]:
        best = ew.maximum(best, w)
    if len(node.output_names) < 2 or not node.output_names[1]:
        return best
    # Indices: the flat (N, C, spatial) position of each window's first maximum, the spatial dims
    # row-major or, with storage_order=1, column-major.
    sizes = list(x.shape[2:])
    nd = len(sizes)
    order = list(range(nd)) if node["storage_order"] else list(reversed(range(nd)))
    base = arange(x.shape[0] * x.shape[1]).reshape(x.shape[0], x.shape[1], *[1] * nd) * math.prod(sizes)
    index = None
    for offsets, w in zip(pool.offsets(), windows):
        flat, stride = base, 1
        for d in order:
            position = arange(pool.outs[d]) * pool.strides[d] + (offsets[d] * pool.dilations[d] - pool.pads[d][0])
            flat = flat + position.reshape(*[pool.outs[d] if i == 2 + d else 1 for i in range(2 + nd)]) * stride
            stride *= sizes[d]
        hit = w == best
        index = ew.where(hit, flat, -1) if index is None else ew.where(hit & (index < 0), flat, index)
    return best, index


@onnx_op("AveragePool", attrs={**_POOL_ATTRS, "count_include_pad": 0}, choices={"auto_pad": _AUTO_PAD})
def _avg_pool(node: Node, x: Tensor) -> Tensor:
    # The divisor counts the window's positions inside the input (and inside the pads with
    # count_include_pad), never those past the pads that ceil mode adds.
    pool = _Pool(node, x)
    ones = ones_like(x.narrow(0, 0, 1).narrow(1, 0, 1))
    counts = pool.windows(pool.padded(ones, 0.0, include_pads=bool(node["count_include_pad"])))
    return _pooled_sum(pool.windows(pool.padded(x, 0.0))) / _pooled_sum(counts)


@onnx_op("LpPool", attrs={**_POOL_ATTRS, "p": 2}, choices={"auto_pad": _AUTO_PAD})
def _lp_pool(node: Node, x: Tensor) -> Tensor:
    p = node["p"]
    pool = _Pool(node, x)
    total = _pooled_sum(pool.windows(pool.padded(x.abs() ** p if p != 1 else x.abs(), 0.0)))
    return total if p == 1 else total ** (1.0 / p)


@onnx_op("MaxUnpool", attrs={"kernel_shape": REQUIRED, "pads": None, "strides": None})
def _max_unpool(node: Node, x: Tensor, indices: Tensor, output_shape: Tensor | None = None) -> Tensor:
    # MaxPool's flat (N, C, spatial) indices scattered into zeros of the unpooled size, then placed
    # at the start of output_shape when that is larger.
    n = x.ndim - 2
    kernel, strides = node["kernel_shape"], node["strides"] or [1] * n
    pads = node["pads"] or [0] * (2 * n)
    sizes = [(i - 1) * s - (pads[d] + pads[n + d]) + k
             for d, (i, k, s) in enumerate(zip(x.shape[2:], kernel, strides))]
    inferred = (*x.shape[:2], *sizes)
    flat = full((math.prod(inferred),), 0, dtype=x.dtype)
    y = scatter(flat, 0, indices.cast(dtypes.int64).reshape(-1), x.reshape(-1)).reshape(*inferred)
    if output_shape is None:
        return y
    target = node.ints(2, output_shape)
    return pad(y, _torch_pads([(0, t - i) for t, i in zip(target[2:], inferred[2:])]))


@onnx_op("GlobalAveragePool")
def _global_avg_pool(node: Node, x: Tensor) -> Tensor:
    return red.mean(x, tuple(range(2, x.ndim)), True)


@onnx_op("GlobalMaxPool")
def _global_max_pool(node: Node, x: Tensor) -> Tensor:
    return red.max(x, tuple(range(2, x.ndim)), True)


# -- normalizations ---------------------------------------------------------------------------------

def _channel(t: Tensor, rank: int) -> Tensor:
    return t.reshape(1, -1, *[1] * (rank - 2))


@onnx_op("BatchNormalization", attrs={"epsilon": 1e-5, "momentum": 0.9, "training_mode": 0})
def _batch_norm(node: Node, x: Tensor, scale: Tensor, bias: Tensor, mean: Tensor, var: Tensor) -> Any:
    eps = node["epsilon"]
    if not node["training_mode"]:
        inv = (_channel(var, x.ndim) + eps).rsqrt()
        return (x - _channel(mean, x.ndim)) * inv * _channel(scale, x.ndim) + _channel(bias, x.ndim)
    dims = (0, *range(2, x.ndim))
    batch_mean = red.mean(x, dims, True)
    batch_var = red.mean((x - batch_mean) * (x - batch_mean), dims, True)
    y = (x - batch_mean) * (batch_var + eps).rsqrt() * _channel(scale, x.ndim) + _channel(bias, x.ndim)
    m = node["momentum"]
    running_mean = mean * m + batch_mean.reshape(-1) * (1 - m)
    running_var = var * m + batch_var.reshape(-1) * (1 - m)
    return y, running_mean, running_var


def _normalize(x: Tensor, dims: tuple[int, ...], eps: float, stash: bool = True) -> tuple[Tensor, Tensor, Tensor]:
    """(normalized, mean, 1/std) over ``dims`` (keepdim), in float32 for 16-bit inputs when ``stash``."""
    work = x.cast(dtypes.float32) if stash and x.dtype.itemsize < 4 else x
    mean = red.mean(work, dims, True)
    centered = work - mean
    inv = (red.mean(centered * centered, dims, True) + eps).rsqrt()
    return centered * inv, mean, inv


@onnx_op("InstanceNormalization", attrs={"epsilon": 1e-5})
def _instance_norm(node: Node, x: Tensor, scale: Tensor, bias: Tensor) -> Tensor:
    y, _, _ = _normalize(x, tuple(range(2, x.ndim)), node["epsilon"], False)
    return y * _channel(scale, x.ndim) + _channel(bias, x.ndim)


@onnx_op("LayerNormalization", attrs={"axis": -1, "epsilon": 1e-5, "stash_type": 1},
         choices={"stash_type": (1,)})
def _layer_norm(node: Node, x: Tensor, scale: Tensor, bias: Tensor | None = None) -> tuple[Tensor, ...]:
    axis = axis_of(node["axis"], x.ndim)
    y, mean, inv = _normalize(x, tuple(range(axis, x.ndim)), node["epsilon"])
    y = y.cast(x.dtype) * scale
    if bias is not None:
        y = y + bias
    return y, mean, inv


@onnx_op("GroupNormalization", attrs={"epsilon": 1e-5, "num_groups": REQUIRED, "stash_type": 1},
         choices={"stash_type": (1,)})
def _group_norm(node: Node, x: Tensor, scale: Tensor, bias: Tensor) -> Tensor:
    groups = node["num_groups"]
    n, c = x.shape[:2]
    grouped = x.reshape(n, groups, -1)
    y, _, _ = _normalize(grouped, (2,), node["epsilon"])
    if node.version < 21:  # operator version 18: scale and bias per group
        y = y * scale.reshape(1, groups, 1).cast(y.dtype) + bias.reshape(1, groups, 1).cast(y.dtype)
        return y.cast(x.dtype).reshape(*x.shape)
    y = y.cast(x.dtype).reshape(*x.shape)
    return y * _channel(scale, x.ndim) + _channel(bias, x.ndim)


@onnx_op("RMSNormalization", attrs={"axis": -1, "epsilon": 1e-5, "stash_type": 1},
         choices={"stash_type": (1,)})
def _rms_norm(node: Node, x: Tensor, scale: Tensor) -> Tensor:
    axis = axis_of(node["axis"], x.ndim)
    work = x.cast(dtypes.float32) if x.dtype.itemsize < 4 else x  # stash_type 1: float32 statistics
    inv = (red.mean(work * work, tuple(range(axis, x.ndim)), True) + node["epsilon"]).rsqrt()
    return (work * inv).cast(x.dtype) * scale


@onnx_op("LRN", attrs={"alpha": 1e-4, "beta": 0.75, "bias": 1.0, "size": None})
def _lrn(node: Node, x: Tensor) -> Tensor:
    size = node["size"]
    lo, hi = (size - 1) // 2, -(-(size - 1) // 2)
    squares = pad(x * x, [0, 0] * (x.ndim - 2) + [lo, hi])
    total = _pooled_sum([squares.narrow(1, i, x.shape[1]) for i in range(size)])
    return x / (total * (node["alpha"] / size) + node["bias"]) ** node["beta"]


# -- losses -----------------------------------------------------------------------------------------

def _nll(node: Node, logp: Tensor, target: Tensor, weight: Tensor | None) -> Tensor:
    ignore = node["ignore_index"]
    target = target.cast(dtypes.int64)
    keep = (target != ignore) if ignore is not None else None
    safe = ew.where(keep, target, 0) if keep is not None else target
    picked = -gather(logp, 1, safe.unsqueeze(1)).squeeze(1)
    w = ones_like(picked) if weight is None else gather(weight, 0, safe.reshape(-1)).reshape(*safe.shape)
    if keep is not None:
        w = ew.where(keep, w, 0.0)
    loss = picked * w
    if node["reduction"] == "none":
        return loss
    if node["reduction"] == "sum":
        return red.sum(loss)
    return red.sum(loss) / red.sum(w)


_LOSS_ATTRS = {"ignore_index": None, "reduction": "mean"}
_LOSS_CHOICES = {"reduction": ("none", "sum", "mean")}


@onnx_op("NegativeLogLikelihoodLoss", attrs=_LOSS_ATTRS, choices=_LOSS_CHOICES)
def _nll_loss(node: Node, x: Tensor, target: Tensor, weight: Tensor | None = None) -> Tensor:
    return _nll(node, x, target, weight)


@onnx_op("SoftmaxCrossEntropyLoss", attrs=_LOSS_ATTRS, choices=_LOSS_CHOICES)
def _softmax_cross_entropy(node: Node, x: Tensor, target: Tensor, weight: Tensor | None = None
                           ) -> tuple[Tensor, Tensor]:
    logp = log_softmax(x, 1)
    return _nll(node, logp, target, weight), logp
