"""Symbolic integers of plans: ``Variable(name, min, max)`` and its bound values.

A ``Variable`` is a named integer known only to lie in ``[min, max]`` (as the index algebra
sees it: ``node()`` is a ``symbolic.var`` with those bounds). ``bind(value)`` checks the range
and gives a ``BoundVariable``: that value, remembering its variable. Where zyx takes it as a
run-time value (an elementwise operand, ``write_slice_rotating``'s position) it
becomes a scalar kernel argument, so one compiled kernel and one plan serve every value.

Any other use from Python code (arithmetic, ``int()``, a size, a comparison) reads the value
itself: that use is reported to ``taint_hook`` (the open capture then keys its plan by the
value as well), so a replay can never silently reuse a value a plan was built around.
"""
from __future__ import annotations

import functools
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


def _tainting(name: str) -> Callable:
    base = getattr(int, name)

    def method(self: BoundVariable, *args: Any) -> Any:
        hook = taint_hook
        if hook is not None:
            hook(self.variable)
        if args and type(args[0]) is BoundVariable:  # two bound variables: their values (both read)
            if hook is not None:
                hook(args[0].variable)
            args = (args[0]._value, *args[1:])
        return base(self._value, *args)

    method.__name__ = name
    return method


class BoundVariable:
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


for _name in ("__int__", "__index__", "__float__", "__bool__", "__add__", "__radd__", "__sub__", "__rsub__",
              "__mul__", "__rmul__", "__floordiv__", "__rfloordiv__", "__mod__", "__rmod__", "__truediv__",
              "__rtruediv__", "__pow__", "__rpow__", "__neg__", "__pos__", "__abs__", "__lshift__", "__rshift__",
              "__and__", "__or__", "__xor__", "__invert__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__",
              "__ge__", "__divmod__", "__rdivmod__", "__format__", "__round__", "__trunc__", "__floor__",
              "__ceil__"):
    setattr(BoundVariable, _name, _tainting(_name))


def _identity(value: int) -> int:
    return value


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
