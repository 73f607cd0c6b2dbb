"""Symbolic integers of plans: ``Variable(name, min, max)`` and its bound values.

A ``Variable`` is a named integer known only to lie in ``[min, max]`` (as the index algebra
sees it: ``node()`` is a ``symbolic.var`` with those bounds). ``bind(value)`` checks the range
and gives a ``BoundVariable``: an ``int`` of that value that remembers its variable. Where zyx
takes it as a run-time value (an elementwise operand, ``write_slice_rotating``'s position) it
becomes a scalar kernel argument, so one compiled kernel and one plan serve every value.

Any other use from Python code (arithmetic, ``int()``, a size, a comparison) reads the value
itself: that use is reported to ``taint_hook`` (the open capture then keys its plan by the
value as well), so a replay can never silently reuse a value a plan was built around.
"""
from __future__ import annotations

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
        v = int.__int__(value)
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
        return base(self, *args)

    method.__name__ = name
    return method


class BoundVariable(int):
    """A ``Variable`` bound to a value: an ``int`` that remembers its variable (``variable``)
    and whose value zyx passes to kernels as an argument (see the module docstring)."""

    variable: Variable

    def __new__(cls, value: int, variable: Variable) -> BoundVariable:
        self = super().__new__(cls, value)
        self.variable = variable
        return self

    @property
    def value(self) -> int:
        """The bound value as a plain int (no taint: for zyx's own argument passing)."""
        return int.__int__(self)

    def __repr__(self) -> str:
        return f"{self.variable.name}={int.__repr__(self)}"

    __str__ = __repr__

    def __hash__(self) -> int:
        return int.__hash__(self)

    def __reduce__(self) -> tuple:
        return (BoundVariable, (int.__int__(self), self.variable))


for _name in ("__int__", "__index__", "__float__", "__bool__", "__add__", "__radd__", "__sub__", "__rsub__",
              "__mul__", "__rmul__", "__floordiv__", "__rfloordiv__", "__mod__", "__rmod__", "__truediv__",
              "__rtruediv__", "__pow__", "__rpow__", "__neg__", "__pos__", "__abs__", "__lshift__", "__rshift__",
              "__and__", "__or__", "__xor__", "__invert__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__",
              "__ge__", "__divmod__", "__rdivmod__", "__format__", "__round__", "__trunc__", "__floor__",
              "__ceil__"):
    setattr(BoundVariable, _name, _tainting(_name))


class VariableArg(int):
    """An integer kernel argument computed from a bound variable's value by ``fn`` (e.g. a ring
    position modulo the ring's length): a plan recomputes it from the value bound at replay."""

    variable: Variable
    fn: Callable[[int], int]

    def __new__(cls, bound: BoundVariable, fn: Callable[[int], int]) -> VariableArg:
        self = super().__new__(cls, fn(bound.value))
        self.variable = bound.variable
        self.fn = fn
        return self

    def at(self, value: int) -> int:
        """The argument for the variable bound to ``value``."""
        return self.fn(value)
