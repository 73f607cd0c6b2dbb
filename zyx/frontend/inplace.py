"""In-place arithmetic: ``x += y`` and PyTorch's ``x.add_(y)`` family write into ``x``'s storage.

Without the operators Python rebinds the name (``x = x + y``) and every other reference keeps the
old values: a module's parameter, the same tensor held elsewhere, a view taken before. A
hand-written update loop (``for p in model.parameters(): p -= lr * p.grad``) then silently changed
nothing. The write goes through indexed assignment (``x[...] = result``), so it behaves as one:
views see it, pending readers of ``x`` run first, and autograd's rules for in-place writes apply (a
leaf that requires grad is written only under ``no_grad``). As in PyTorch, an arithmetic result
must keep ``x``'s shape and must not need a cast to a lower kind (a float result into an integer
tensor, a non-bool result into a bool tensor): those raise instead of truncating. ``copy_`` and
``fill_`` convert to ``x``'s dtype like indexed assignment.
"""
from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

from zyx.dtype import DType
from zyx.errors import DTypeError, ShapeError
from zyx.frontend.autograd.engine import needs_grad
from zyx.frontend.base import TensorBase


def _kind(d: DType) -> int:
    """bool < integer < floating point: PyTorch writes a result in place only into the same or a higher kind."""
    return 0 if d.is_bool else 1 if d.is_int else 2


def inplace(x: Any, other: Any, fn: Callable[[Any, Any], Any], what: str) -> Any:
    """``fn(x, other)`` written into ``x``'s storage (``what`` names the call in errors); returns ``x``."""
    # a recorded op saves its operands for backward; the write below changes x, so it computes
    # from a copy of x's old values (as PyTorch's in-place ops save their original self)
    result = fn(x.clone() if needs_grad(x, other) else x, other)
    if tuple(result.shape) != tuple(x.shape):
        raise ShapeError(f"{what} writes in place: x has shape {tuple(x.shape)} but the result broadcasts to "
                         f"{tuple(result.shape)}; an in-place result must keep x's shape (the out-of-place op makes "
                         "a new tensor)")
    if _kind(result.dtype) > _kind(x.dtype):
        raise DTypeError(f"{what} writes in place: the result is {result.dtype.name}, which cannot be written into "
                         f"x's {x.dtype.name} (a float result into an integer tensor, or a non-bool result into a "
                         "bool tensor, as PyTorch refuses); the out-of-place op makes a new tensor")
    x[...] = result
    return x


class InplaceMixin(TensorBase):
    """``+= -= *= /= //= %= **= &= |= ^= <<= >>=`` and ``add_ sub_ mul_ div_ clamp_ zero_ fill_ copy_``
    in place (see the module docstring)."""

    __slots__ = ()

    def _iop(fn: Callable[[Any, Any], Any], symbol: str):  # class-body helper, deleted below
        def f(self, other):
            return inplace(self, other, fn, f"x {symbol}= y")
        f.__name__ = f"__i{fn.__name__.strip('_')}__"
        f.__doc__ = f"``x {symbol}= y`` in place, as PyTorch."
        return f

    __iadd__, __isub__, __imul__ = _iop(operator.add, "+"), _iop(operator.sub, "-"), _iop(operator.mul, "*")
    __itruediv__, __ifloordiv__ = _iop(operator.truediv, "/"), _iop(operator.floordiv, "//")
    __imod__, __ipow__ = _iop(operator.mod, "%"), _iop(operator.pow, "**")
    __iand__, __ior__, __ixor__ = _iop(operator.and_, "&"), _iop(operator.or_, "|"), _iop(operator.xor, "^")
    __ilshift__, __irshift__ = _iop(operator.lshift, "<<"), _iop(operator.rshift, ">>")
    del _iop

    def add_(self, other: Any, *, alpha: Any = 1) -> Any:
        """``x += alpha * other`` in place; returns ``x``."""
        return inplace(self, other, lambda a, b: a + (b if alpha == 1 else b * alpha), "add_")

    def sub_(self, other: Any, *, alpha: Any = 1) -> Any:
        """``x -= alpha * other`` in place; returns ``x``."""
        return inplace(self, other, lambda a, b: a - (b if alpha == 1 else b * alpha), "sub_")

    def mul_(self, other: Any) -> Any:
        """``x *= other`` in place; returns ``x``."""
        return inplace(self, other, operator.mul, "mul_")

    def div_(self, other: Any, *, rounding_mode: str | None = None) -> Any:
        """``x.div(other, rounding_mode=)`` written into ``x``; returns ``x``."""
        return inplace(self, other, lambda a, b: a.div(b, rounding_mode=rounding_mode), "div_")

    def clamp_(self, min: Any = None, max: Any = None) -> Any:  # noqa: A002 - PyTorch's names
        """``x.clamp(min, max)`` written into ``x``; returns ``x``."""
        return inplace(self, None, lambda a, _: a.clamp(min, max), "clamp_")

    clip_ = clamp_

    def zero_(self) -> Any:
        """Fill ``x`` with zeros in place; returns ``x``."""
        self[...] = 0
        return self

    def fill_(self, value: Any) -> Any:
        """Fill ``x`` with ``value`` (a number or a one-element tensor) in place; returns ``x``."""
        if isinstance(value, TensorBase) and value.numel() != 1:
            raise ShapeError(f"fill_ takes a number or a one-element tensor, got shape {tuple(value.shape)}")
        self[...] = value.reshape(()) if isinstance(value, TensorBase) else value
        return self

    def copy_(self, src: Any) -> Any:
        """Write ``src`` (broadcast to ``x``'s shape, converted to its dtype) into ``x``; returns ``x``."""
        self[...] = src
        return self
