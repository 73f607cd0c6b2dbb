"""``zyx.nn.functional`` activations beyond relu/gelu/silu/sigmoid (API.md "More elementwise, activations and
comparisons"): the clamped family (relu6, hardtanh, hardsigmoid, hardswish), the exponential family (elu, selu,
celu, softplus, mish, logsigmoid), softsign, tanhshrink, glu, normalize and one_hot.

Each is composed from lazy elementwise ops, so it fuses with its neighbours and gets its gradient by
composition. Two habits keep those gradients equal to PyTorch's: a branch that would overflow (``exp`` of a large
input) reads a ``where``-masked input, so the branch not taken never multiplies a zero gradient by inf; and
clamps whose PyTorch gradient is zero on the boundary (hardtanh, hardsigmoid) select with strict comparisons.
"""
from __future__ import annotations

import math
from typing import Any

from zyx import dtype as dtypes
from zyx.errors import DTypeError, ShapeError
from zyx.frontend import reduce as R
from zyx.frontend.elementwise import binary, unary, where
from zyx.frontend.elementwise_math import expm1, log1p
from zyx.ir.view import normalize_dim
from zyx.op import Op

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _float32_for_16bit(fn):
    """Run ``fn`` on a 16-bit float tensor in float32 and round once, as PyTorch computes these activations."""
    def wrapped(x: Any, *args: Any, **kwargs: Any) -> Any:
        if x.dtype.is_float and x.dtype.itemsize < 4:
            return fn(x.cast(dtypes.float32), *args, **kwargs).cast(x.dtype)
        return fn(x, *args, **kwargs)

    wrapped.__name__ = wrapped.__qualname__ = fn.__name__
    wrapped.__doc__ = fn.__doc__
    return wrapped


def _hard_clamp(x: Any, lo: float, hi: float):
    """``x`` clamped to ``[lo, hi]``; the gradient passes only strictly inside (PyTorch's hardtanh); NaN stays."""
    return where(binary(Op.LE, x, lo), lo, where(binary(Op.GE, x, hi), hi, x))


def hardtanh(x: Any, min_val: float = -1.0, max_val: float = 1.0):
    """``x`` clamped to ``[min_val, max_val]``; an integer tensor keeps its dtype, its limits truncated to
    integers (PyTorch's)."""
    if min_val > max_val:
        raise ShapeError(f"hardtanh: min_val ({min_val}) must not exceed max_val ({max_val})")
    if x.dtype.is_bool:
        raise DTypeError("hardtanh: bool inputs are not supported (expected a numeric tensor; cast it first)")
    if x.dtype.is_int:
        min_val, max_val = int(min_val), int(max_val)
        if not x.dtype.is_signed and min_val < 0:
            raise DTypeError(f"hardtanh: cannot clamp an unsigned {x.dtype.name} tensor to negative limits "
                             f"({min_val}, {max_val}); expected limits >= 0")
    return _hard_clamp(x, min_val, max_val)


def relu6(x: Any):
    """``min(max(x, 0), 6)`` (``hardtanh(x, 0, 6)``: integer tensors keep their dtype)."""
    return hardtanh(x, 0.0, 6.0)


@_float32_for_16bit
def hardsigmoid(x: Any):
    """``relu6(x + 3) / 6``."""
    return _hard_clamp(x + 3.0, 0.0, 6.0) / 6.0


@_float32_for_16bit
def hardswish(x: Any):
    """``x * relu6(x + 3) / 6``."""
    return x * _hard_clamp(x + 3.0, 0.0, 6.0) / 6.0


def _exp_branch(x: Any, scale_in: float, scale_out: float):
    """``expm1(x * scale_in) * scale_out`` where ``x <= 0``, read from a masked input (no overflow elsewhere).
    Callers select it where ``x <= 0``, so a NaN takes the identity side and its gradient, as PyTorch's."""
    neg = where(binary(Op.LE, x, 0.0), x, 0.0)
    return expm1(neg * scale_in if scale_in != 1.0 else neg) * scale_out


@_float32_for_16bit
def elu(x: Any, alpha: float = 1.0):
    """``x`` where positive, else ``alpha * (exp(x) - 1)``."""
    return where(binary(Op.LE, x, 0.0), _exp_branch(x, 1.0, alpha), x)


@_float32_for_16bit
def selu(x: Any):
    """``scale * elu(x, alpha)`` with the self-normalizing constants."""
    return where(binary(Op.LE, x, 0.0), _exp_branch(x, 1.0, _SELU_ALPHA * _SELU_SCALE), x * _SELU_SCALE)


@_float32_for_16bit
def celu(x: Any, alpha: float = 1.0):
    """``x`` where positive, else ``alpha * (exp(x / alpha) - 1)``."""
    if alpha == 0:
        raise ShapeError("celu: alpha must not be 0")
    return where(binary(Op.LE, x, 0.0), _exp_branch(x, 1.0 / alpha, alpha), x)


def leaky_relu(x: Any, negative_slope: float = 0.01):
    """``x`` where positive, else ``negative_slope * x``."""
    return where(binary(Op.GT, x, 0.0), x, x * negative_slope)


@_float32_for_16bit
def softplus(x: Any, beta: float = 1.0, threshold: float = 20.0):
    """``log(1 + exp(beta * x)) / beta``, and ``x`` itself where ``beta * x > threshold``."""
    xb = x * beta if beta != 1.0 else x
    big = binary(Op.GT, xb, threshold)
    soft = log1p(unary(Op.EXP, where(big, 0.0, xb)))
    return where(big, x, soft / beta if beta != 1.0 else soft)


@_float32_for_16bit
def mish(x: Any):
    """``x * tanh(softplus(x))``."""
    return x * unary(Op.TANH, softplus(x))


@_float32_for_16bit
def logsigmoid(x: Any):
    """``log(sigmoid(x))`` computed stably: ``min(x, 0) - log1p(exp(-|x|))``."""
    return binary(Op.MINIMUM, x, 0.0) - log1p(unary(Op.EXP, -unary(Op.ABS, x)))


@_float32_for_16bit
def softsign(x: Any):
    """``x / (1 + |x|)``."""
    return x / (unary(Op.ABS, x) + 1.0)


@_float32_for_16bit
def tanhshrink(x: Any):
    """``x - tanh(x)``."""
    return x - unary(Op.TANH, x)


def tanh(x: Any):
    return unary(Op.TANH, x)


def glu(x: Any, dim: int = -1):
    """The first half of ``x`` along ``dim`` times the sigmoid of the second half."""
    if x.ndim == 0:
        raise ShapeError("glu: a 0-d tensor has no dim to halve")
    d = normalize_dim(dim, x.ndim)
    if x.shape[d] % 2:
        raise ShapeError(f"glu: halving dim {dim} needs an even size, got {x.shape[d]} (input shape {x.shape})")
    a, b = x.chunk(2, d)
    return a * unary(Op.SIGMOID, b)


def vector_norm(x: Any, p: float = 2.0, dim: Any = None, keepdim: bool = False):
    """The ``p``-norm over ``dim`` (p = inf: max |x|, 0: the count of nonzeros). Its gradient at a zero vector is
    zero (the square root reads a masked sum there), as PyTorch's."""
    a = unary(Op.ABS, x)
    if p == math.inf:
        return R.reduce(a, Op.MAX, dim, keepdim)
    if p == -math.inf:
        return R.reduce(a, Op.MIN, dim, keepdim)
    if p == 0:
        return R.reduce(binary(Op.NE, x, 0.0).cast(x.dtype), Op.SUM, dim, keepdim)
    if p == 1:
        return R.reduce(a, Op.SUM, dim, keepdim)
    if p == 2:
        s = R.reduce(x * x, Op.SUM, dim, keepdim)
    else:
        s = R.reduce(binary(Op.POW, a, float(p)), Op.SUM, dim, keepdim)
    pos = binary(Op.GT, s, 0.0)
    safe = where(pos, s, 1.0)
    root = unary(Op.SQRT, safe) if p == 2 else binary(Op.POW, safe, 1.0 / p)
    return where(pos, root, s)


@_float32_for_16bit
def normalize(x: Any, p: float = 2.0, dim: int = 1, eps: float = 1e-12):
    """``x / max(||x||_p, eps)`` along ``dim``."""
    if not x.dtype.is_float:
        raise DTypeError(f"normalize: expected a floating point tensor, got {x.dtype.name}")
    d = normalize_dim(dim, max(x.ndim, 1)) if x.ndim else None
    n = vector_norm(x, p, d, keepdim=True)
    return x / n.clip(min=eps)


def one_hot(tensor: Any, num_classes: int = -1):
    """int64 ``(..., num_classes)``: 1 at each value's class. ``num_classes=-1`` takes the largest value + 1; values
    are checked to lie in ``[0, num_classes)`` (this reads them, as PyTorch does)."""
    from zyx.frontend.creation import arange, pinned_as

    if not tensor.dtype.is_int:
        raise DTypeError(f"one_hot: expected an integer (class index) tensor, got {tensor.dtype.name}")
    if tensor.numel() == 0:
        if num_classes < 0:
            raise ShapeError("one_hot: cannot infer the number of classes of an empty tensor (pass num_classes)")
    else:
        lo, hi = int(R.reduce(tensor, Op.MIN, None).item()), int(R.reduce(tensor, Op.MAX, None).item())
        if lo < 0:
            raise ShapeError(f"one_hot: class values must be non-negative, got {lo}")
        if num_classes < 0:
            num_classes = hi + 1
        elif hi >= num_classes:
            raise ShapeError(f"one_hot: class values must be smaller than num_classes = {num_classes}, got {hi}")
    classes = pinned_as(arange(num_classes, device=tensor.device, dtype=dtypes.int64), tensor)
    return binary(Op.EQ, tensor.unsqueeze(-1), classes).cast(dtypes.int64)


__all__ = ["celu", "elu", "glu", "hardsigmoid", "hardswish", "hardtanh", "leaky_relu", "logsigmoid", "mish",
           "normalize", "one_hot", "relu6", "selu", "softplus", "softsign", "tanh", "tanhshrink", "vector_norm"]
