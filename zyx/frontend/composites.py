"""PyTorch-named elementwise ops that zyx composes from its primitives, and ``CompositesMixin``.

``div`` with ``rounding_mode``, the ``bitwise_*`` names of ``~ & | ^``, and ``logaddexp``/``logaddexp2``.
Everything is built from ``binary``/``unary``, so it fuses and differentiates like its parts.
"""
from __future__ import annotations

import math
from typing import Any

from zyx import dtype as dtypes
from zyx.errors import DTypeError, ShapeError
from zyx.frontend.base import TensorBase
from zyx.frontend.elementwise import binary, unary, where
from zyx.op import Op


def _negative(x: Any, tensor_cls: type) -> Any:
    """``x < 0`` for a tensor (a bool tensor) or a Python number (a bool)."""
    return binary(Op.LT, x, 0) if isinstance(x, tensor_cls) else x < 0


def div(a: Any, b: Any, rounding_mode: str | None = None) -> Any:
    """PyTorch's ``torch.div``: true division, or rounded toward zero (``"trunc"``) or down (``"floor"``).

    With a rounding mode, integer operands give an integer result (exact, no float round trip) and
    float operands round the true quotient, as PyTorch does.
    """
    if rounding_mode is None:
        return binary(Op.DIV, a, b)
    if rounding_mode == "floor":
        return binary(Op.FLOORDIV, a, b)
    if rounding_mode != "trunc":
        raise ShapeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
                         f"{rounding_mode!r}")
    tensor_cls = type(a) if isinstance(a, TensorBase) else type(b)
    dt = dtypes.result_type(a, b)
    if dt.is_float:
        return unary(Op.TRUNC, binary(Op.DIV, a, b))
    # integers: floor division, one step toward zero where a remainder is left and the signs differ
    q = binary(Op.FLOORDIV, a, b)
    inexact = binary(Op.NE, binary(Op.MOD, a, b), 0)
    differ = binary(Op.XOR, _negative(a, tensor_cls), _negative(b, tensor_cls))
    return where(binary(Op.AND, inexact, differ), q + 1, q)


def logaddexp(a: Any, b: Any, base2: bool = False) -> Any:
    """``log(exp(a) + exp(b))`` without overflow (``log2(2**a + 2**b)`` with ``base2``), as PyTorch."""
    if not isinstance(a, TensorBase) and not isinstance(b, TensorBase):
        raise DTypeError(f"logaddexp: expected a Tensor operand, got {type(a).__name__} and {type(b).__name__}")
    out = dtypes.result_type(a, b)
    if not out.is_float:  # as PyTorch, which implements it for floating dtypes only
        raise DTypeError(f"logaddexp: expected floating-point operands, got {out.name}")
    work = out if out.itemsize >= 4 else dtypes.float32
    a, b = (x.cast(work) if isinstance(x, TensorBase) else float(x) for x in (a, b))
    m = binary(Op.MAXIMUM, a, b)
    gap = -unary(Op.ABS, a - b)
    if base2:
        tail = (unary(Op.EXP2, gap) + 1.0).log2()
    else:
        tail = unary(Op.EXP, gap).log1p()
    # equal operands (both infinite ones included, where a - b is NaN): their mean + log(2), so the
    # gradient splits in half between them as PyTorch's does
    y = where(binary(Op.EQ, a, b), a * 0.5 + b * 0.5 + (1.0 if base2 else math.log(2.0)), m + tail)
    return y if y.dtype is out else y.cast(out)


class CompositesMixin(TensorBase):
    """``div(rounding_mode=)``, ``bitwise_*`` (shifts included), ``logaddexp``, ``logaddexp2``."""

    __slots__ = ()

    def div(self, other: Any, *, rounding_mode: str | None = None):
        """``self / other``, or its quotient rounded (``"trunc"``, ``"floor"``) as ``torch.div``."""
        return div(self, other, rounding_mode)

    divide = div

    def bitwise_not(self):
        """``~self`` (bool and integer tensors)."""
        return unary(Op.INVERT, self)

    def bitwise_and(self, other: Any):
        """``self & other``."""
        return binary(Op.AND, self, other)

    def bitwise_or(self, other: Any):
        """``self | other``."""
        return binary(Op.OR, self, other)

    def bitwise_xor(self, other: Any):
        """``self ^ other``."""
        return binary(Op.XOR, self, other)

    def bitwise_left_shift(self, other: Any):
        """``self << other`` (integer tensors)."""
        return binary(Op.SHL, self, other)

    def bitwise_right_shift(self, other: Any):
        """``self >> other`` (integer tensors; arithmetic for signed ones)."""
        return binary(Op.SHR, self, other)

    def logaddexp(self, other: Any):
        """``log(exp(self) + exp(other))`` computed without overflow."""
        return logaddexp(self, other)

    def logaddexp2(self, other: Any):
        """``log2(2**self + 2**other)`` computed without overflow."""
        return logaddexp(self, other, base2=True)
