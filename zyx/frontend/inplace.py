"""In-place arithmetic operators: ``x += y`` writes ``x + y`` into ``x``'s storage, as PyTorch does.

Without them Python rebinds the name (``x = x + y``) and every other reference keeps the old
values: a module's parameter, the same tensor held elsewhere, a view taken before. A hand-written
update loop (``for p in model.parameters(): p -= lr * p.grad``) then silently changed nothing.
The write goes through indexed assignment (``x[...] = result``), so it behaves as one: views see
it, pending readers of ``x`` run first, and autograd's rules for in-place writes apply (a leaf that
requires grad is written only under ``no_grad``). As in PyTorch, the result must keep ``x``'s shape
and must not need a cast to a lower kind (a float result into an integer tensor, a non-bool result
into a bool tensor): those raise instead of truncating.
"""
from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

from zyx.dtype import DType
from zyx.errors import DTypeError, ShapeError
from zyx.frontend.autograd import needs_grad
from zyx.frontend.base import TensorBase


def _kind(d: DType) -> int:
    """bool < integer < floating point: PyTorch writes a result in place only into the same or a higher kind."""
    return 0 if d.is_bool else 1 if d.is_int else 2


def inplace(x: Any, other: Any, fn: Callable[[Any, Any], Any], symbol: str) -> Any:
    """``x {symbol}= other``: ``fn(x, other)`` written into ``x``'s storage; returns ``x``."""
    # a recorded op saves its operands for backward; the write below changes x, so it computes
    # from a copy of x's old values (as PyTorch's in-place ops save their original self)
    result = fn(x.clone() if needs_grad(x, other) else x, other)
    if tuple(result.shape) != tuple(x.shape):
        raise ShapeError(f"x {symbol}= y writes in place: x has shape {tuple(x.shape)} but x {symbol} y broadcasts to "
                         f"{tuple(result.shape)}; the result must keep x's shape (x = x {symbol} y makes a new tensor)")
    if _kind(result.dtype) > _kind(x.dtype):
        raise DTypeError(f"x {symbol}= y writes in place: x {symbol} y is {result.dtype.name}, which cannot be written "
                         f"into x's {x.dtype.name} (a float result into an integer tensor, or a non-bool result into a "
                         f"bool tensor, as PyTorch refuses); x = x {symbol} y makes a new tensor")
    x[...] = result
    return x


class InplaceMixin(TensorBase):
    """``+= -= *= /= //= %= **= &= |= ^= <<= >>=`` in place (see the module docstring)."""

    __slots__ = ()

    def _iop(fn: Callable[[Any, Any], Any], symbol: str):  # class-body helper, deleted below
        def f(self, other):
            return inplace(self, other, fn, symbol)
        f.__name__ = f"__i{fn.__name__.strip('_')}__"
        f.__doc__ = f"``x {symbol}= y`` in place, as PyTorch."
        return f

    __iadd__, __isub__, __imul__ = _iop(operator.add, "+"), _iop(operator.sub, "-"), _iop(operator.mul, "*")
    __itruediv__, __ifloordiv__ = _iop(operator.truediv, "/"), _iop(operator.floordiv, "//")
    __imod__, __ipow__ = _iop(operator.mod, "%"), _iop(operator.pow, "**")
    __iand__, __ior__, __ixor__ = _iop(operator.and_, "&"), _iop(operator.or_, "|"), _iop(operator.xor, "^")
    __ilshift__, __irshift__ = _iop(operator.lshift, "<<"), _iop(operator.rshift, ">>")
    del _iop
