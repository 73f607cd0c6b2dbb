"""Quantization ONNX operators: QuantizeLinear/DequantizeLinear (per tensor, per axis, blocked;
integer and float8 targets), DynamicQuantizeLinear, and the integer products MatMulInteger,
QLinearMatMul, ConvInteger and QLinearConv. Integer convolutions run in float64, exact for the
sums of 8-bit products they take."""
from __future__ import annotations

from typing import Any

import numpy as np

import zyx.frontend.elementwise as ew
import zyx.frontend.reduce as red
from zyx import dtype as dtypes
from zyx.frontend.creation import full
from zyx.frontend.tensor import Tensor
from zyx.onnx.ops_math import cast
from zyx.onnx.ops_nn import conv_nd
from zyx.onnx.registry import Node, axis_of, onnx_dtype, onnx_op

_FLOAT8 = (dtypes.float8_e4m3, dtypes.float8_e5m2)


def _along(node: Node, param: Tensor, x: Tensor) -> Tensor:
    """A scale or zero point shaped to broadcast against ``x``: scalar, per ``axis`` or in blocks."""
    if param.ndim == 0 or param.numel() == 1:
        return param.reshape(())
    axis = axis_of(node.attrs.get("axis", 1), x.ndim)
    block = node.attrs.get("block_size") or 0
    if not block:
        return param.reshape(*[param.numel() if d == axis else 1 for d in range(x.ndim)])
    return param.repeat_interleave(block, axis).narrow(axis, 0, x.shape[axis])


def _check_output_dtype(node: Node) -> None:
    if node.attrs.get("output_dtype"):
        onnx_dtype(node, node["output_dtype"])
    if node.attrs.get("precision"):
        onnx_dtype(node, node["precision"])


def _saturate_int(y: Tensor, dt: dtypes.DType) -> Tensor:
    info = np.iinfo(dt.numpy)
    return ew.clip(y, int(info.min), int(info.max)).cast(dt)


# Version 10 (per-tensor only, no attributes) means what 13 does for the same inputs.
@onnx_op("QuantizeLinear", attrs={"axis": 1, "block_size": 0, "output_dtype": 0, "precision": 0, "saturate": 1},
         check=_check_output_dtype, versions=(10, 10**6))
def _quantize(node: Node, x: Tensor, scale: Tensor, zero_point: Tensor | None = None) -> Tensor:
    target = zero_point.dtype if zero_point is not None else (
        onnx_dtype(node, node["output_dtype"]) if node["output_dtype"] else dtypes.uint8)
    if node["precision"]:
        work = onnx_dtype(node, node["precision"])
        scaled = x.cast(work) / _along(node, scale, x).cast(work)
    else:
        scaled = x / _along(node, scale, x)
    if target in _FLOAT8:
        return cast(node, scaled, target)
    if target.is_float or target == dtypes.bool_:
        raise node.unsupported(f"quantizing to {target.name}")
    q = scaled.round().cast(dtypes.int32)
    if zero_point is not None:
        q = q + _along(node, zero_point, x).cast(dtypes.int32)
    return _saturate_int(q, target)


@onnx_op("DequantizeLinear", attrs={"axis": 1, "block_size": 0, "output_dtype": 0}, check=_check_output_dtype,
         versions=(10, 10**6))
def _dequantize(node: Node, x: Tensor, scale: Tensor, zero_point: Tensor | None = None) -> Tensor:
    dx = x.cast(dtypes.float32)
    if zero_point is not None and x.dtype not in _FLOAT8:
        dx = dx - _along(node, zero_point, x).cast(dtypes.float32)
    y = dx * _along(node, scale, x)
    return y.cast(onnx_dtype(node, node["output_dtype"]) if node["output_dtype"] else scale.dtype)


@onnx_op("DynamicQuantizeLinear")
def _dynamic_quantize(node: Node, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    zero = full((), 0.0, dtype=dtypes.float32)
    high = ew.maximum(zero, red.max(x).cast(dtypes.float32))
    low = ew.minimum(zero, red.min(x).cast(dtypes.float32))
    scale = ew.where(high == low, 1.0, high - low) / 255.0
    zp = ew.clip(-low / scale, 0.0, 255.0).round()
    y = ew.clip((x / scale).round() + zp, 0.0, 255.0).cast(dtypes.uint8)
    return y, scale.cast(x.dtype), zp.cast(dtypes.uint8)


def _centered(x: Tensor, zero_point: Tensor | None, row_axis: int | None = None) -> Tensor:
    """``x - zero_point`` in int32; a per-row zero point of A sits on A's rows (``row_axis``)."""
    xi = x.cast(dtypes.int32)
    if zero_point is None:
        return xi
    zp = zero_point.cast(dtypes.int32)
    if row_axis is not None and zp.ndim == 1 and zp.numel() > 1:
        zp = zp.reshape(-1, 1)
    return xi - zp


@onnx_op("MatMulInteger")
def _matmul_integer(node: Node, a: Tensor, b: Tensor, a_zero: Tensor | None = None, b_zero: Tensor | None = None
                    ) -> Tensor:
    return red.matmul(_centered(a, a_zero, -2), _centered(b, b_zero)).cast(dtypes.int32)


@onnx_op("QLinearMatMul")
def _qlinear_matmul(node: Node, a: Tensor, a_scale: Tensor, a_zero: Tensor, b: Tensor, b_scale: Tensor,
                    b_zero: Tensor, y_scale: Tensor, y_zero: Tensor) -> Tensor:
    product = red.matmul(_centered(a, a_zero, -2), _centered(b, b_zero)).cast(dtypes.int32)
    multiplier = a_scale * b_scale / y_scale
    y = product.cast(multiplier.dtype) * multiplier
    out = y_zero.dtype if y_zero is not None else a.dtype
    if y_zero is not None:
        y = y + y_zero.cast(y.dtype)
    return _saturate_int(y.round(), out)


_CONV_ATTRS = {"auto_pad": "NOTSET", "dilations": None, "group": 1, "kernel_shape": None, "pads": None,
               "strides": None}


def _int_conv(node: Node, x: Tensor, x_zero: Tensor | None, w: Tensor, w_zero: Tensor | None) -> Tensor:
    xs = x.cast(dtypes.float64) - (x_zero.cast(dtypes.float64) if x_zero is not None else 0.0)
    ws = w.cast(dtypes.float64)
    if w_zero is not None:
        zp = w_zero.cast(dtypes.float64)
        ws = ws - (zp.reshape(-1, *[1] * (w.ndim - 1)) if zp.ndim == 1 and zp.numel() > 1 else zp)
    return conv_nd(node, xs, ws, None)


@onnx_op("ConvInteger", attrs=_CONV_ATTRS, choices={"auto_pad": ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")})
def _conv_integer(node: Node, x: Tensor, w: Tensor, x_zero: Tensor | None = None, w_zero: Tensor | None = None
                  ) -> Tensor:
    return _int_conv(node, x, x_zero, w, w_zero).cast(dtypes.int32)


@onnx_op("QLinearConv", attrs=_CONV_ATTRS, choices={"auto_pad": ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")})
def _qlinear_conv(node: Node, x: Tensor, x_scale: Tensor, x_zero: Tensor, w: Tensor, w_scale: Tensor,
                  w_zero: Tensor, y_scale: Tensor, y_zero: Tensor | None = None, bias: Tensor | None = None) -> Any:
    acc = _int_conv(node, x, x_zero, w, w_zero)
    if bias is not None:
        acc = acc + bias.cast(dtypes.float64).reshape(1, -1, *[1] * (x.ndim - 2))
    scale = w_scale.reshape(1, -1, *[1] * (x.ndim - 2)) if w_scale.numel() > 1 else w_scale.reshape(())
    y = acc.cast(dtypes.int32).cast(dtypes.float32) * (x_scale * scale / y_scale)
    out = y_zero.dtype if y_zero is not None else x.dtype
    if y_zero is not None:
        y = y + y_zero.cast(dtypes.float32)
    info = np.iinfo(out.numpy)
    return ew.clip(y, float(info.min), float(info.max)).round().cast(out)
