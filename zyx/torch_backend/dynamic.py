"""Dimensions dynamo marks dynamic, as zyx Variables.

A graph compiled with dynamic shapes (``torch.compile(dynamic=True)``, ``torch._dynamo.mark_dynamic``, or
dynamo's automatic dynamic after a size changed) names some sizes by symbols (``s0``): size placeholders
(``SymInt``) and symbolic dims of tensor placeholders. Each symbol becomes a ``zyx.Variable`` whose range is
a power-of-two bucket above the values seen, so the kernels compiled for one size serve every size in the
bucket (the size reaches them as a run-time argument); a larger size opens the next bucket and compiles once
more. A tensor input with a symbolic dim is uploaded into a buffer of the bucket's size and narrowed to the
bound variable, so the graph's ops see a variable-size tensor; ops without a variable-size form take the
value, as they do in native zyx code.
"""
from __future__ import annotations

import functools
import operator
from dataclasses import dataclass
from typing import Any

from zyx.frontend.tape import Variable

_MIN_BUCKET = 16  # small sizes share one bucket: a few padded rows cost less than a compile


def _bucket(value: int) -> int:
    """The smallest power of two >= ``value`` (at least ``_MIN_BUCKET``)."""
    return max(_MIN_BUCKET, 1 << max(value - 1, 0).bit_length())


def _expr(value: Any) -> Any:
    """The sympy expression of a ``SymInt`` from a node's meta (None for anything else)."""
    import torch

    return value.node.expr if isinstance(value, torch.SymInt) else None


def symbol_of(value: Any) -> str | None:
    """The symbol's name when ``value`` (a ``SymInt`` from a node's meta) is a plain symbol, else None
    (a concrete int, or an expression such as ``2*s0`` whose value follows from its symbols)."""
    expr = _expr(value)
    return str(expr) if getattr(expr, "is_Symbol", False) else None


def evaluate(expr: Any, bound: dict[str, Any]) -> Any:
    """A size expression (sympy, as dynamo writes them: sums, products, integer powers, floor division,
    modulo) over bound variables, as a bound expression; None when it holds anything else."""
    if expr.is_Integer:
        return int(expr)
    if expr.is_Symbol:
        return bound.get(str(expr))
    args = [evaluate(a, bound) for a in expr.args]
    if any(a is None for a in args):
        return None
    name = expr.func.__name__
    if name == "Add":
        return functools.reduce(operator.add, args)
    if name == "Mul":
        return functools.reduce(operator.mul, args)
    if name == "Pow" and isinstance(args[1], int) and args[1] >= 0:
        return functools.reduce(operator.mul, [args[0]] * args[1], 1)
    if name in ("FloorDiv", "CleanDiv"):
        return args[0] // args[1]
    if name in ("Mod", "PythonMod"):
        return args[0] % args[1]
    return None


@dataclass(frozen=True)
class SymbolicInput:
    """Where a placeholder's symbols sit: the placeholder's own value (``axis is None``) or an axis of its
    tensor. A size placeholder may hold an expression of symbols (``expr``, ``symbol`` its text), which a
    call evaluates over the bound variables."""

    position: int
    axis: int | None
    symbol: str
    expr: Any = None


def symbolic_inputs(placeholders: list[Any]) -> list[SymbolicInput]:
    """The symbolic sizes among FX placeholders, from the fake values dynamo put in their meta."""
    found: list[SymbolicInput] = []
    for i, node in enumerate(placeholders):
        val = node.meta.get("val")
        name = symbol_of(val)
        if name is not None:
            found.append(SymbolicInput(i, None, name))
        elif _expr(val) is not None and _expr(val).free_symbols:
            found.append(SymbolicInput(i, None, str(_expr(val)), _expr(val)))
        for axis, size in enumerate(getattr(val, "shape", ())):
            name = symbol_of(size)
            if name is not None:
                found.append(SymbolicInput(i, axis, name))
    return found


#: symbol name -> its Variable, shared by the graphs of one model: a forward graph and its backward graph
#: name a size by the same symbol, and their variable-size tensors must carry the same Variable to meet
VARIABLES: dict[str, Variable] = {}


class DynamicDims:
    """Where one graph's symbols sit and their bindings for a call."""

    def __init__(self, inputs: list[SymbolicInput]) -> None:
        self.inputs = inputs

    def __bool__(self) -> bool:
        return bool(self.inputs)

    def bind(self, args: tuple) -> dict[str, Any]:
        """Each symbol's bound variable for this call's arguments (a bigger value opens a bigger bucket)."""
        values: dict[str, int] = {}
        for s in self.inputs:
            if s.expr is not None:
                continue
            arg = args[s.position]
            value = int(arg) if s.axis is None else int(arg.shape[s.axis])
            if values.setdefault(s.symbol, value) != value:
                raise ValueError(f"the zyx backend got {s.symbol} = {values[s.symbol]} and {value} in one call "
                                 "(dynamo's guards promise one value per symbol)")
        bound: dict[str, Any] = {}
        for name, value in values.items():
            var = VARIABLES.get(name)
            if var is None or value > var.max:
                var = VARIABLES[name] = Variable(f"torch_{name}", 0, _bucket(value))
            bound[name] = var.bind(value)
        for s in self.inputs:
            if s.expr is not None:
                found = evaluate(s.expr, bound)
                # an expression of symbols this graph does not see goes by value
                bound[s.symbol] = int(args[s.position]) if found is None else found
        return bound

    def upload(self, t: Any, position: int, bound: dict[str, Any], to_zyx: Any) -> Any:
        """The zyx form of the torch tensor argument at ``position``: padded to its variables' buckets and
        narrowed to their bound values (a plain upload when no axis of it is symbolic)."""
        axes = [(s.axis, bound[s.symbol]) for s in self.inputs if s.position == position and s.axis is not None]
        if not axes:
            return to_zyx(t)
        phys_shape = list(t.shape)
        for axis, b in axes:
            phys_shape[axis] = b.variable.max
        padded = t.new_zeros(phys_shape)
        padded[tuple(slice(0, n) for n in t.shape)] = t
        z = to_zyx(padded.detach())
        for axis, b in axes:
            z = z.narrow(axis, 0, b)
        return z
