"""Symbolic integers of plans: ``Variable(name, min, max)`` and its bound values.

A ``Variable`` is a named integer known only to lie in ``[min, max]`` (as the index algebra
sees it: ``node()`` is a ``symbolic.var`` with those bounds). ``bind(value)`` checks the range
and gives a ``BoundVariable``: that value, remembering its variable. Where zyx takes it as a
run-time value (an elementwise operand, ``write_slice_rotating``'s position) it
becomes a scalar kernel argument, so one compiled kernel and one plan serve every value.

Affine arithmetic with Python ints (``t + 1``, ``1 + t``, ``t - 1``, ``2 * t``, ``-t``) stays symbolic:
a ``BoundExpr`` ``scale * t + offset`` with its own range, taken wherever a bound variable is (a
size or start, an elementwise operand: a kernel argument a plan recomputes from ``t``'s value).
Any other use from Python code (other arithmetic, ``int()``, a comparison, a size where zyx has
no variable form) reads the value itself: that use is reported to ``taint_hook`` (the open
capture then keys its plan by the value as well), so a replay can never silently reuse a value a
plan was built around.
"""
from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from typing import Any

from zyx.errors import ShapeError
from zyx.ir import symbolic as sym

#: Called with a ``Variable`` whose bound value Python code read (set by the capture machinery).
taint_hook: Callable[[Variable], None] | None = None


class Variable:
    """A symbolic integer in ``[min, max]`` (API.md "Tapes and variables")."""

    __slots__ = ("name", "min", "max")

    def __init__(self, name: str, min: int, max: int) -> None:  # noqa: A002 - API.md names them min, max
        if not isinstance(name, str) or not name:
            raise TypeError(f"Variable: the name must be a non-empty str, got {name!r}")
        for what, v in (("min", min), ("max", max)):
            if isinstance(v, bool) or not isinstance(v, int):
                raise TypeError(f"Variable {name!r}: {what} must be an int, got {v!r}")
        if min > max:
            raise ShapeError(f"Variable {name!r}: min = {min} > max = {max} (expected min <= max)")
        self.name, self.min, self.max = name, int(min), int(max)

    def bind(self, value: int) -> BoundVariable:
        """This variable at ``value`` (an int in ``[min, max]``, else ``ShapeError``)."""
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"Variable {self.name!r}.bind: expected an int, got {value!r}")
        v = int(value)
        if not self.min <= v <= self.max:
            raise ShapeError(f"Variable {self.name!r} bound to {v}, outside its range "
                             f"[{self.min}, {self.max}] (expected {self.min} <= value <= {self.max})")
        return BoundVariable(v, self)

    def node(self) -> sym.Node:
        """The variable in the index algebra (its bounds feed simplification)."""
        return sym.var(self.name, self.min, self.max)

    def __repr__(self) -> str:
        return f"Variable({self.name!r}, {self.min}, {self.max})"


def _operator(name: str) -> Callable | None:
    plain = "__" + name[3:] if name.startswith("__r") and name not in ("__round__", "__rshift__") else name
    if plain == "__divmod__":
        return divmod
    return getattr(operator, plain, None)


def _tainting(name: str) -> Callable:
    base = getattr(int, name)
    op = _operator(name)  # for an operand ``int`` does not take (a float: ``t + 0.5``)

    def method(self: BoundVariable | BoundExpr, *args: Any) -> Any:
        hook = taint_hook
        if hook is not None:
            hook(self.variable)
        if args and type(args[0]) in BOUND:  # two bound values: both read
            if hook is not None:
                hook(args[0].variable)
            args = (args[0]._value, *args[1:])
        out = base(self._value, *args)
        if out is NotImplemented and len(args) == 1:  # another kind of operand (a float): its own operator
            if op is not None:
                return op(args[0], self._value) if name.startswith("__r") else op(self._value, args[0])
        return out

    method.__name__ = name
    return method


def _affine(bound: BoundVariable, scale: int, offset: int) -> BoundVariable | BoundExpr | int:
    if scale == 0:
        return offset  # does not depend on the value: nothing is read
    if scale == 1 and offset == 0:
        return bound
    return BoundExpr(bound, scale, offset)


def _affine_op(name: str) -> Callable:
    """``+``, ``-``, ``*`` (and reflected) with a Python int: a ``BoundExpr``; any other operand: a read."""
    read = _tainting(name)

    def method(self: BoundVariable | BoundExpr, *args: Any) -> Any:
        if not args:  # unary
            if name == "__neg__":
                return _affine(self.bound, -self.scale, -self.offset)
            return self  # __pos__
        o = args[0]
        if type(o) is not int:
            return read(self, *args)
        if name in ("__add__", "__radd__"):
            return _affine(self.bound, self.scale, self.offset + o)
        if name == "__sub__":
            return _affine(self.bound, self.scale, self.offset - o)
        if name == "__rsub__":
            return _affine(self.bound, -self.scale, o - self.offset)
        return _affine(self.bound, self.scale * o, self.offset * o)  # __mul__, __rmul__

    method.__name__ = name
    return method


class _BoundValue:
    """The operators of a bound value (``BoundVariable``, ``BoundExpr``): ``+``, ``-``, ``*`` (and reflected)
    with a Python int give a ``BoundExpr``; every other use reads the value and reports the variable."""

    __slots__ = ()

    __int__ = _tainting("__int__")
    __index__ = _tainting("__index__")
    __float__ = _tainting("__float__")
    __bool__ = _tainting("__bool__")
    __add__ = _affine_op("__add__")
    __radd__ = _affine_op("__radd__")
    __sub__ = _affine_op("__sub__")
    __rsub__ = _affine_op("__rsub__")
    __mul__ = _affine_op("__mul__")
    __rmul__ = _affine_op("__rmul__")
    __floordiv__ = _tainting("__floordiv__")
    __rfloordiv__ = _tainting("__rfloordiv__")
    __mod__ = _tainting("__mod__")
    __rmod__ = _tainting("__rmod__")
    __truediv__ = _tainting("__truediv__")
    __rtruediv__ = _tainting("__rtruediv__")
    __pow__ = _tainting("__pow__")
    __rpow__ = _tainting("__rpow__")
    __neg__ = _affine_op("__neg__")
    __pos__ = _affine_op("__pos__")
    __abs__ = _tainting("__abs__")
    __lshift__ = _tainting("__lshift__")
    __rshift__ = _tainting("__rshift__")
    __and__ = _tainting("__and__")
    __or__ = _tainting("__or__")
    __xor__ = _tainting("__xor__")
    __invert__ = _tainting("__invert__")
    __eq__ = _tainting("__eq__")
    __ne__ = _tainting("__ne__")
    __lt__ = _tainting("__lt__")
    __le__ = _tainting("__le__")
    __gt__ = _tainting("__gt__")
    __ge__ = _tainting("__ge__")
    __divmod__ = _tainting("__divmod__")
    __rdivmod__ = _tainting("__rdivmod__")
    __format__ = _tainting("__format__")
    __round__ = _tainting("__round__")
    __trunc__ = _tainting("__trunc__")
    __floor__ = _tainting("__floor__")
    __ceil__ = _tainting("__ceil__")


class BoundVariable(_BoundValue):
    """A ``Variable`` bound to a value (see the module docstring). Not an ``int`` on purpose:
    C code reads an int subclass's value without calling any method, so a use as a size could
    not be seen; every read of this one goes through a method (``__index__``, ``__int__``,
    the operators), which reports it."""

    __slots__ = ("variable", "_value")

    def __init__(self, value: int, variable: Variable) -> None:
        self.variable = variable
        self._value = value

    @property
    def value(self) -> int:
        """The bound value (no report: for zyx's own argument passing)."""
        return self._value

    def __repr__(self) -> str:
        return f"{self.variable.name}={self._value}"

    __str__ = __repr__

    def __hash__(self) -> int:
        return hash((self.variable, self._value))

    @property
    def bound(self) -> BoundVariable:
        """The bound variable this value is a function of (itself)."""
        return self

    @property
    def scale(self) -> int:
        return 1

    @property
    def offset(self) -> int:
        return 0

    @property
    def min(self) -> int:
        """The smallest value the variable's range allows."""
        return self.variable.min

    @property
    def max(self) -> int:
        """The largest value the variable's range allows."""
        return self.variable.max

    def arg(self) -> VariableArg:
        """The value as a run-time kernel argument (a plan recomputes it at replay)."""
        return VariableArg(self)


class BoundExpr(_BoundValue):
    """``scale * t + offset`` of a bound variable ``t`` (``t + 1``, ``2 * t``, ``t - 1``; ``scale != 0``):
    a size or start with the derived range ``[min, max]``, or an elementwise operand (a kernel
    argument). Like ``BoundVariable``, not an ``int``: every other read reports ``t``."""

    __slots__ = ("bound", "scale", "offset", "_value")

    def __init__(self, bound: BoundVariable, scale: int, offset: int) -> None:
        self.bound, self.scale, self.offset = bound, scale, offset
        self._value = scale * bound.value + offset

    @property
    def variable(self) -> Variable:
        return self.bound.variable

    @property
    def value(self) -> int:
        """The value at the bound one (no report: for zyx's own argument passing)."""
        return self._value

    @property
    def min(self) -> int:
        """The smallest value the variable's range allows."""
        v = self.variable
        return self.scale * (v.min if self.scale > 0 else v.max) + self.offset

    @property
    def max(self) -> int:
        """The largest value the variable's range allows."""
        v = self.variable
        return self.scale * (v.max if self.scale > 0 else v.min) + self.offset

    def arg(self) -> VariableArg:
        """The value as a run-time kernel argument (a plan recomputes it from the variable's value)."""
        return VariableArg(self.bound, Linear(self.scale, self.offset))

    def __repr__(self) -> str:
        name = self.variable.name
        term = name if self.scale == 1 else f"-{name}" if self.scale == -1 else f"{self.scale}*{name}"
        off = f" + {self.offset}" if self.offset > 0 else f" - {-self.offset}" if self.offset < 0 else ""
        return f"({term}{off})={self._value}"

    __str__ = __repr__

    def __hash__(self) -> int:
        return hash((self.variable, self._value))


#: the types of bound values zyx takes as a variable size, start or kernel argument
BOUND = (BoundVariable, BoundExpr)


def _identity(value: int) -> int:
    return value


class Linear:
    """``c * value + k`` (clamped to ``[0, hi]`` when ``hi`` is given), times ``m``: a variable
    argument's function (equal by its coefficients, so equal arguments compare equal)."""

    __slots__ = ("c", "k", "hi", "m")

    def __init__(self, c: int, k: int = 0, hi: int | None = None, m: int = 1) -> None:
        self.c, self.k, self.hi, self.m = c, k, hi, m

    def __call__(self, v: int) -> int:
        x = self.c * v + self.k
        return (x if self.hi is None else min(max(x, 0), self.hi)) * self.m

    def __eq__(self, o: object) -> bool:
        return type(o) is Linear and (o.c, o.k, o.hi, o.m) == (self.c, self.k, self.hi, self.m)

    def __hash__(self) -> int:
        return hash((self.c, self.k, self.hi, self.m))


class VariableArg(int):
    """A run-time kernel argument inside zyx: the int ``fn(value)`` of a bound variable (e.g. a
    ring position modulo the ring's length), which a plan recomputes from the value bound at
    replay. Internal: it travels through zyx's own int-taking code (validation, launchers)."""

    variable: Variable
    fn: Callable[[int], int]

    def __new__(cls, bound: BoundVariable, fn: Callable[[int], int] = _identity) -> VariableArg:
        self = super().__new__(cls, fn(bound.value))
        self.variable = bound.variable
        self.fn = fn
        return self

    def at(self, value: int) -> int:
        """The argument for the variable bound to ``value``."""
        return self.fn(value)

    def then(self, g: Callable[[int], int]) -> VariableArg:
        """The argument ``g(this argument)``."""
        out = int.__new__(VariableArg, g(int(self)))
        out.variable = self.variable
        out.fn = functools.partial(_chain, self.fn, g)
        return out


def _chain(f: Callable[[int], int], g: Callable[[int], int], value: int) -> int:
    return g(f(value))
