"""Python numbers passed to a jitted function, as arguments of its plan (API.md "Tapes and variables").

While ``zyx.jit`` captures a call, each ``float`` or ``int`` argument (bools stay structural, as do
numbers inside lists, dicts and other objects) reaches the function as a ``TracedScalar``: the
number, remembering which argument it is. A replay of the plan then takes the new call's number:
a new learning rate replays the plan instead of capturing the function again.

Soundness: the plan may only ignore a number's value where the capture saw every use of it.
``TracedScalar`` is therefore not a ``float``/``int`` subclass: C code reads a subclass's value
without calling any method (``math.sqrt``, NumPy, ``struct``), and a number baked into the plan
that way would silently replay stale. Every read of a ``TracedScalar`` goes through one of its
methods, each of which sorts the use into one of two kinds:

* traced: ``+ - * / // %``, unary ``- + abs`` and ``**`` where its result type cannot depend on
  the value, with Python numbers or other traced scalars of the same call, give another
  ``TracedScalar`` (an expression the replay evaluates on the host); an operand of a zyx
  elementwise op (``x * lr``, ``zyx.where(c, x, lr)``) becomes a scalar kernel argument of the
  op's dtype, computed at replay with PyTorch's rules for Python numbers (a float with a float16
  tensor stays float16 and is rounded where PyTorch rounds it);
* read: anything else (``if lr > 0``, ``float(lr)``, ``math.sqrt(lr)``, ``int(n)``, a size, an
  axis, ``range(n)``, ``f"{lr}"``, ``hash``, ``isinstance(lr, float)``): the method returns the
  plain value and *taints* the number, so the plan is keyed by its exact value (sign of zero
  included), as ``BoundVariable`` does; a new value captures again.

What the function sees: ``isinstance(lr, float)`` is True (``__class__`` answers ``float`` or
``int``, and that read taints, so code that branches on the type is keyed by the value and never
replays wrongly; Python asks ``__class__`` for every ``isinstance`` test that the real type fails,
so ``isinstance(lr, zyx.Tensor)`` keys the plan by the value too: zyx's own operand paths test
``type(x)`` first). ``type(lr)`` is ``TracedScalar``: code that tests ``type(x) is float`` takes
its other branch during the capture and every replay (the one visible difference; pass such a
number inside a list to keep it a plain value). Attributes of the number (``lr.is_integer()``)
read it. A traced scalar the function returns comes back as a plain number of the new call.

Outside its capture a ``TracedScalar`` is its capture-time number: Python state the function
stored it in (an optimizer's ``group['lr']``) keeps that value between calls, like the other
Python side effects a replay does not redo. A replay sets its scalars' new values for the time of
its launches only, so the Python hooks it runs (an optimizer's step recomputing its numbers from
``group['lr']``) see them. A traced scalar of another capture read inside a capture counts as a
Python value the plan holds, guarded by a check (``capture.note_check``).
"""
from __future__ import annotations

import functools
import math
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from zyx.frontend import capture
from zyx.ir import expr

__all__ = ["TracedScalar", "FloatArg", "IntArg", "ScalarCapture", "begin", "end", "peek", "operand", "kernel_arg",
           "exact"]

_current: ScalarCapture | None = None  # the capture whose scalars trace (one at a time, as journals)


class ScalarCapture:
    """The traced scalars of one captured call: their values (``cell``: the capture's, or a replay's
    during that replay), which were read by Python code, and the kernel arguments made from them."""

    __slots__ = ("cell", "captured", "tainted", "exprs", "out", "raising")

    def __init__(self, values: list) -> None:
        self.cell = list(values)
        self.captured = tuple(values)
        self.tainted: set[int] = set()  # argument positions whose value Python code read
        # per kernel argument: its value from the cell, and what makes that the launch argument
        self.exprs: list[tuple[Callable[[list], Any], Callable[[Any], Any]]] = []
        self.out: list[Any] = []  # the kernel arguments of the running replay (see ``set_values``)
        # host arithmetic of the call that may raise for some values (a division, a float of a huge int):
        # a replay evaluates it as the call would, even where nothing launched uses the result
        self.raising: list[Callable[[list], Any]] = []

    def set_values(self, values: list) -> None:
        """Take a replay's numbers: the cell and every kernel argument computed from them (before any
        launch, so an error in the host arithmetic, e.g. a division by zero, launches nothing)."""
        cell = self.cell
        cell[:] = values
        try:
            for f in self.raising:
                f(cell)
            self.out[:] = [make(f(cell)) for f, make in self.exprs]
        except BaseException:
            cell[:] = self.captured
            raise

    def restore(self) -> None:
        """Back to the capture's numbers (what Python state holding the scalars sees between calls)."""
        self.cell[:] = self.captured


def begin(values: list) -> tuple[ScalarCapture, list[TracedScalar]]:
    """Start tracing the numbers ``values`` of a call being captured: one ``TracedScalar`` each."""
    global _current
    cap = ScalarCapture(values)
    _current = cap
    return cap, [TracedScalar(cap, operator.itemgetter(i), frozenset((i,)), type(v)) for i, v in enumerate(values)]


def end(cap: ScalarCapture) -> None:
    """The capture ended: its scalars are plain numbers from now on."""
    global _current
    if _current is cap:
        _current = None


def _tracing(cap: ScalarCapture) -> bool:
    """Whether ``cap``'s scalars trace now: it is the open capture, on the calling thread."""
    return cap is _current and capture.active() is not None


def exact(v: Any) -> Any:
    """A comparison key of a number that tells ``0.0`` from ``-0.0`` (NaN never equals itself)."""
    return (v, math.copysign(1.0, v)) if type(v) is float else v


def _now(ts: TracedScalar) -> Any:
    return exact(ts._fn(ts._cap.cell))


_NUMBERS = frozenset((int, float, bool))


def _make(name: str, op: Callable, reverse: bool) -> Callable:
    def method(self: TracedScalar, other: Any) -> Any:
        return self._binary(other, op, reverse)

    method.__name__ = name
    return method


def _reading(name: str) -> Callable:
    def method(self: TracedScalar, *args: Any) -> Any:
        if args and getattr(type(args[0]), "__zyx_tensor__", False):
            return NotImplemented  # ``lr < x``: the tensor's reflected operator takes the number as an operand
        v = self._read()
        fn = getattr(v, name, None)
        if fn is None:  # e.g. ``<<`` of a float: Python's own TypeError
            return NotImplemented
        return fn(*(a._read() if type(a) is TracedScalar else a for a in args))

    method.__name__ = name
    return method


class TracedScalar:
    """A traced Python number (see the module docstring)."""

    __slots__ = ("_cap", "_fn", "_deps", "_kind")

    def __init__(self, cap: ScalarCapture, fn: Callable[[list], Any], deps: frozenset[int], kind: type) -> None:
        self._cap = cap
        self._fn = fn  # its value from the capture's cell
        self._deps = deps  # the argument positions it depends on
        self._kind = kind  # float or int: the Python type of every value it takes

    def _read(self) -> Any:
        """The value, for a use the capture cannot trace: the plan is keyed by it."""
        cap = self._cap
        v = self._fn(cap.cell)
        if capture.active() is not None:
            if cap is _current:
                cap.tainted |= self._deps
            else:  # a number of another capture held by Python state: the plan holds it while it stays
                capture.note_check(functools.partial(_now, self), exact(v))
        return v

    @property  # type: ignore[misc]
    def __class__(self) -> type:  # isinstance(x, float) holds; the answer reads the value
        self._read()
        return self._kind

    def __repr__(self) -> str:
        return repr(self._read())

    def __str__(self) -> str:
        return str(self._read())

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") and not name.startswith("__") or not hasattr(self._kind, name):
            raise AttributeError(f"{self._kind.__name__!r} object has no attribute {name!r}")
        return getattr(self._read(), name)

    def __reduce__(self) -> Any:  # pickles (and copies) as the plain number
        v = self._read()
        return type(v), (v,)

    def __copy__(self) -> TracedScalar:
        return self

    def __deepcopy__(self, memo: Any) -> TracedScalar:
        return self

    def __index__(self) -> int:
        if self._kind is not int:
            raise TypeError(f"'{self._kind.__name__}' object cannot be interpreted as an integer")
        return self._read()

    # -- traced arithmetic ------------------------------------------------------
    def _binary(self, other: Any, op: Callable[[Any, Any], Any], reverse: bool) -> Any:
        t = type(other)
        if getattr(t, "__zyx_tensor__", False):
            return NotImplemented  # the tensor's reflected operator makes it a kernel argument
        cap = self._cap
        if t is TracedScalar and other._cap is not cap:
            other, t = other._read(), None
        if not _tracing(cap) or (t not in _NUMBERS and t is not TracedScalar):
            a, b = self._read(), other._read() if t is TracedScalar else other
            return op(b, a) if reverse else op(a, b)
        if t is TracedScalar:
            fo, ko, deps = other._fn, other._kind, self._deps | other._deps
        else:
            fo, ko, deps = functools.partial(_const, other), (int if t is bool else t), self._deps
        fs, ks = self._fn, self._kind
        kl, kr = (ko, ks) if reverse else (ks, ko)
        kind = _result_kind(op, kl, kr, None if t is TracedScalar else other, reverse)
        if kind is None:  # the result's type may depend on the value: read both
            a, b = self._read(), other._read() if t is TracedScalar else other
            return op(b, a) if reverse else op(a, b)
        fl, fr = (fo, fs) if reverse else (fs, fo)
        out = TracedScalar(cap, functools.partial(_apply2, op, fl, fr), deps, kind)
        out._fn(cap.cell)  # raises now what the function would raise (a division by zero)
        if op in _RAISING or kl is not kr:
            cap.raising.append(out._fn)
        return out

    def _unary(self, op: Callable[[Any], Any]) -> Any:
        if not _tracing(self._cap):
            return op(self._read())
        return TracedScalar(self._cap, functools.partial(_apply1, op, self._fn), self._deps, self._kind)

    def __neg__(self) -> Any:
        return self._unary(operator.neg)

    def __pos__(self) -> Any:
        return self._unary(operator.pos)

    def __abs__(self) -> Any:
        return self._unary(operator.abs)

    # -- traced arithmetic: another TracedScalar (``_binary``) ----------------------
    __add__ = _make("__add__", operator.add, False)
    __radd__ = _make("__radd__", operator.add, True)
    __sub__ = _make("__sub__", operator.sub, False)
    __rsub__ = _make("__rsub__", operator.sub, True)
    __mul__ = _make("__mul__", operator.mul, False)
    __rmul__ = _make("__rmul__", operator.mul, True)
    __truediv__ = _make("__truediv__", operator.truediv, False)
    __rtruediv__ = _make("__rtruediv__", operator.truediv, True)
    __floordiv__ = _make("__floordiv__", operator.floordiv, False)
    __rfloordiv__ = _make("__rfloordiv__", operator.floordiv, True)
    __mod__ = _make("__mod__", operator.mod, False)
    __rmod__ = _make("__rmod__", operator.mod, True)
    __pow__ = _make("__pow__", operator.pow, False)
    __rpow__ = _make("__rpow__", operator.pow, True)

    # -- every other use reads the value (``__bool__`` of 0.5 included) ----------------
    __bool__ = _reading("__bool__")
    __hash__ = _reading("__hash__")
    __format__ = _reading("__format__")
    __round__ = _reading("__round__")
    __trunc__ = _reading("__trunc__")
    __floor__ = _reading("__floor__")
    __ceil__ = _reading("__ceil__")
    __eq__ = _reading("__eq__")
    __ne__ = _reading("__ne__")
    __lt__ = _reading("__lt__")
    __le__ = _reading("__le__")
    __gt__ = _reading("__gt__")
    __ge__ = _reading("__ge__")
    __divmod__ = _reading("__divmod__")
    __rdivmod__ = _reading("__rdivmod__")
    __lshift__ = _reading("__lshift__")
    __rlshift__ = _reading("__rlshift__")
    __rshift__ = _reading("__rshift__")
    __rrshift__ = _reading("__rrshift__")
    __and__ = _reading("__and__")
    __rand__ = _reading("__rand__")
    __or__ = _reading("__or__")
    __ror__ = _reading("__ror__")
    __xor__ = _reading("__xor__")
    __rxor__ = _reading("__rxor__")
    __invert__ = _reading("__invert__")

    def __int__(self) -> int:
        return int(self._read())

    def __float__(self) -> float:  # int has no __float__ of its own name
        return float(self._read())

    def __complex__(self) -> complex:
        return complex(self._read())


_RAISING = frozenset((operator.truediv, operator.floordiv, operator.mod, operator.pow))


def _const(v: Any, cell: list) -> Any:
    return v


def _apply1(op: Callable, f: Callable, cell: list) -> Any:
    return op(f(cell))


def _apply2(op: Callable, f: Callable, g: Callable, cell: list) -> Any:
    return op(f(cell), g(cell))


def _result_kind(op: Callable, kl: type, kr: type, const: Any, const_left: bool) -> type | None:
    """The Python type of ``left op right`` for operands of types ``kl``/``kr`` when it does not depend
    on their values (``const``: the untraced operand's value, if any), else None."""
    if op is operator.truediv:
        return float
    if op is not operator.pow:
        return float if float in (kl, kr) else int
    # ** : int ** negative int is a float, a negative float ** a non-integer is complex
    exponent_known = const is not None and not const_left
    base_known = const is not None and const_left
    if kr is int:
        if kl is float:
            return float
        return int if exponent_known and const >= 0 else None
    if base_known and const > 0:
        return float
    return None


def peek(x: Any) -> Any:
    """``x``'s value without a read: for zyx code that registers how a replay recomputes it
    (``journal.note_host_param``); any other number as it is."""
    return x._fn(x._cap.cell) if type(x) is TracedScalar else x


class _ReplayArg:
    """What ``FloatArg`` and ``IntArg`` share: the capture (``_cap``) and the getter (``_getter``) that
    ``kernel_arg`` gives them."""

    _cap: ScalarCapture | None
    _getter: Callable[[], Any]

    @property
    def replay_getter(self) -> Callable[[], Any] | None:
        """The replay's value of this argument when its capture is the open one (else None: a constant)."""
        cap = self._cap
        return self._getter if cap is not None and cap is _current else None


class FloatArg(_ReplayArg, float):
    """A traced scalar as a float kernel argument inside zyx (a graph constant's value): a capture
    makes the launch argument a host parameter that the replay computes (``journal.note_param``)."""

    def __reduce__(self) -> Any:
        return float, (float(self),)


class IntArg(_ReplayArg, int):
    """The integer kind of ``FloatArg``."""

    def __reduce__(self) -> Any:
        return int, (int(self),)


def operand(x: Any) -> Any:
    """A traced scalar met as the operand of a zyx op: itself while its capture traces, else its value."""
    if type(x) is TracedScalar and not _tracing(x._cap):
        return x._read()
    return x


def convert(ts: TracedScalar, fn: Callable[[Any], Any]) -> TracedScalar:
    """``fn(ts)`` traced (``fn`` maps a number to a number of the same Python type for every value:
    zyx's conversion of a Python operand to a dtype)."""
    cap = ts._cap
    f = functools.partial(_apply1, fn, ts._fn)
    v = f(cap.cell)
    return TracedScalar(cap, f, ts._deps, type(v))


def kernel_arg(ts: TracedScalar, dtype: Any) -> FloatArg | IntArg:
    """The value of ``ts`` (already converted to ``dtype``'s kind) as a scalar kernel argument of dtype
    ``dtype`` that a replay recomputes."""
    cap = ts._cap
    v = ts._fn(cap.cell)
    out: Any = FloatArg(v) if type(v) is float else IntArg(v)
    k = len(cap.exprs)
    if dtype.kind == "float":  # expr.param_value's types, looked up once
        make: Callable[[Any], Any] = np.float64 if dtype.itemsize == 8 else np.float32
    else:
        make = functools.partial(expr.param_value, d=dtype)
    cap.exprs.append((ts._fn, make))
    out._cap = cap
    out._getter = functools.partial(operator.getitem, cap.out, k)
    return out
