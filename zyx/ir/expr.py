"""Kernel IR expressions: what one output element of a kernel computes.

A kernel's body is a tree of immutable expression nodes over the kernel's index
variables (``o0..`` for output coordinates, ``r0..`` for reduce coordinates):
``Const``, ``Param`` (a scalar kernel argument), ``Load`` (a buffer element at a symbolic index, guarded by a validity
condition for pads; a gather's index also uses values loaded from other buffers),
``Cast``, ``Alu`` (an op of ``zyx.op.ALU``: unary, binary or ternary) and
``Reduce`` (an op of ``zyx.op.REDUCE`` accumulated over every reduce coordinate).
Equality and hashing are structural, so a kernel is its own cache key.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from zyx import dtype as dtypes
from zyx.dtype import DType
from zyx.ir import symbolic as sym
from zyx.op import Op


@dataclass(frozen=True)
class Expr:
    """Base class; every expression has a result ``dtype`` field."""


@dataclass(frozen=True)
class Const(Expr):
    value: Any
    dtype: DType

    # -0.0 == 0.0 and nan != nan in Python, but they are different literals: compare floats by repr
    def _key(self) -> tuple:
        v = self.value
        return (repr(v) if isinstance(v, float) else v, self.dtype)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Const) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())


PARAM = "zyx_p"  # the kernel argument of ``Param`` slot i is named ``zyx_p<i>``


@dataclass(frozen=True)
class Param(Expr):
    """Scalar kernel argument ``slot``: a Python number the graph used, passed at launch, so that a
    new value (a learning rate, a loop variable) reuses the compiled kernel. An integer slot may
    instead be read inside load indices, as the symbolic variable ``param_var`` (a buffer offset)."""

    slot: int
    dtype: DType


def param_var(slot: int, lo: int, hi: int) -> sym.Node:
    """Integer argument ``slot`` as a symbolic index variable over ``[lo, hi]``: named as the kernel
    argument, so an index using it renders as a read of the argument."""
    return sym.var(f"{PARAM}{slot}", lo, hi)


def param_value(value: Any, d: DType) -> Any:
    """The host value of a ``Param`` of dtype ``d``: a NumPy scalar of the OpenCL type it is passed as
    (double for float64, float for every narrower float; an integer wrapped into ``d``'s range, as
    a literal of that type would be)."""
    if d.kind == "float":
        return np.float64(value) if d.itemsize == 8 else np.float32(value)
    bits = 8 * d.itemsize
    v = int(value) % (1 << bits)
    if d.kind == "int" and v >= 1 << (bits - 1):
        v -= 1 << bits
    return d.numpy.type(v)


@dataclass(frozen=True)
class Load(Expr):
    """``bufs[buf][index]`` when ``valid`` holds, else ``other``.

    A gather: ``gather`` holds ``(name, value, size)`` triples; ``index`` may use the variable
    ``name`` (``sym.var(name, 0, size - 1)``), which stands for the integer expression ``value``
    (e.g. a load of an index buffer) computed per element. A value outside ``[0, size)`` never
    reads out of bounds: the kernel uses 0 instead and raises the device error flag
    (``IndexOutOfRange`` at readback).
    """

    buf: int
    dtype: DType
    index: sym.Node
    valid: sym.Node = sym.ONE
    other: Any = 0
    gather: tuple[tuple[str, Expr, int], ...] = ()


@dataclass(frozen=True)
class Cond(Expr):
    """A symbolic index condition as a bool value (e.g. "inside the unpadded region")."""

    valid: sym.Node
    dtype: DType = dtypes.bool_


@dataclass(frozen=True)
class Cast(Expr):
    src: Expr
    dtype: DType


@dataclass(frozen=True)
class Alu(Expr):
    op: Op
    srcs: tuple[Expr, ...]
    dtype: DType


@dataclass(frozen=True)
class Reduce(Expr):
    """``op`` over all reduce coordinates of ``src``; ``dtype`` is the accumulator's.

    argmax/argmin give the int64 row-major position (over the reduce coordinates) of
    the first extreme; NaN counts as the largest value, as in PyTorch.
    """

    op: Op
    src: Expr
    dtype: DType


def reduce_identity(op: Op, d: DType) -> Any:
    """The neutral start value of a reduce of ``op`` with accumulator dtype ``d``."""
    if op == Op.SUM:
        return 0
    if op == Op.PROD:
        return 1
    if op in (Op.MAX, Op.ARGMAX):
        return float("-inf") if d.is_float else (0 if d.is_bool else int(_int_min(d)))
    if op in (Op.MIN, Op.ARGMIN):
        return float("inf") if d.is_float else (1 if d.is_bool else int(_int_max(d)))
    raise ValueError(f"unknown reduce op {op!r}")


def _int_min(d: DType) -> int:
    return np.iinfo(d.numpy).min


def _int_max(d: DType) -> int:
    return np.iinfo(d.numpy).max
