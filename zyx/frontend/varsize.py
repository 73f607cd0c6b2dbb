"""Tensors of variable size: a bound ``zyx.Variable`` as a size or start (API.md "Tapes and variables").

``x[:t]``, ``x.narrow(d, s, n)``, ``x[a:b]``, ``expand``/``reshape`` to a bound variable, ``pad`` by
one and ``arange`` up to one (or to an affine ``BoundExpr`` of one: ``t + 1``, ``2 * t``, ``10 - t``) give a
``VarTensor``: its Python shape holds the bound values (a
``BoundVariable`` where a dim is exactly one variable), but its data is computed at a *static*
extent per variable axis (the largest the variable's bounds allow), so every kernel it runs is
specialized on static shapes only. The variable reaches kernels as a scalar argument
(``ir.variable.VariableArg``) where the value matters:

* a variable start is a gather by ``arange(n) + start`` (``index_select``);
* a reduce over a variable axis (sum, mean, max, softmax, the contraction of ``@``) first masks
  the elements past the bound value with the reduce's identity: ``where(arange(P) < t, x, id)``.

So one compile serves every value in the variable's range, and a ``zyx.jit`` plan replays with
new values (the masks and gathers take the variable as a run-time argument). Element ``i < size``
of a variable axis is physical element ``i``; elements past it are never part of a result. The
work is done at the static extent, whatever the value. ``VarTensor`` overrides the methods that
have a variable form; ``zyx.where``, ``softmax``/``log_softmax`` and ``matmul`` as functions hand
it over through ``frontend.base.VARSIZE``; a static tensor enters through ``narrow``, slicing,
``expand``/``reshape``, ``pad`` and ``arange`` when an argument is a ``BoundVariable``.

Any use this module does not cover (an op without a variable form, a read of the shape as an
int, an operand whose static size equals the bound value, ``contiguous()``/``clone()``, which code
follows with raw buffer access) reads the tensor at its bound values:
the read is reported as a taint (``ir.variable.taint_hook``), so a capture keys its plan by the
value and stays correct, it only compiles per value. So do a possibly-empty max/min/argmax (an
error by value, as PyTorch) and a variable whose range is far larger than its value (``_too_big``).
Ops without a variable form take their operands through ``frontend.base.concrete`` (the contract
ops, sorts, indexed accesses, ``clone``): their results are plain tensors whose shapes hold ints.
Not covered: autograd through variable sizes (an input that requires grad goes by value),
in-place writes into a variable size (they raise).

This module holds the variable sizes (``VDim``), ``make`` and the masks and gathers that take a
variable as a kernel argument; ``varsize_compute`` the compute ops (elementwise, masked reductions,
softmax, matmul) and their methods (``VarComputeMixin``); ``varsize_shapes`` the entry points (slices,
``narrow``, ``expand``, ``reshape``, ``pad``, ``arange``: ``VarEntryMixin``, ahead of the movement
methods in ``Tensor``) and the movement methods (``VarMovementMixin``); ``frontend.tensor`` composes the
``VarTensor`` class from them and ``Tensor``.
"""
from __future__ import annotations

import math
import weakref
from typing import Any

import numpy as np

from zyx import dtype as dtypes
from zyx.errors import ShapeError
from zyx.frontend.autograd.engine import is_grad_enabled
from zyx.frontend.base import VARSIZE, TensorBase, tensor_class, varsize_class
from zyx.frontend.creation import from_host
from zyx.frontend.elementwise import where
from zyx.ir import variable
from zyx.ir.variable import BOUND, BoundExpr, BoundVariable, Linear, Variable, VariableArg
from zyx.ir.view import View

BV = BoundVariable
Tensor = TensorBase  # annotations and isinstance checks; results are built by ``tensor_class()``


_Lin = Linear  # a variable argument's function


def _taint(var: Variable) -> None:
    hook = variable.taint_hook
    if hook is not None:
        hook(var)


class _EndExpr:
    """A slice end ``start + length`` (for ``narrow``): ``VDim.of`` reads its terms."""

    __slots__ = ("start", "length")

    def __init__(self, start: Any, length: Any) -> None:
        self.start, self.length = start, length


class VDim:
    """A variable size ``clamp(const + sum(c * v), 0, phys)`` over bound variables ``v``; ``phys``:
    the static extent its data is computed at."""

    __slots__ = ("terms", "const", "phys", "values")

    def __init__(self, terms: tuple[tuple[Variable, int], ...], const: int, phys: int,
                 values: dict[Variable, int]) -> None:
        self.terms = tuple(sorted(((v, c) for v, c in terms if c), key=lambda t: (t[0].name, id(t[0]))))
        self.const, self.phys, self.values = const, phys, values

    @staticmethod
    def of(x: Any) -> tuple[tuple[tuple[Variable, int], ...], int, dict]:
        """(terms, const, values) of an int, a bound variable, a ``BoundExpr`` or a ``narrow`` end."""
        if type(x) is _EndExpr:
            return _add(VDim.of(x.start), VDim.of(x.length))
        if type(x) in BOUND:  # a bound variable or an affine expression of one
            return ((x.variable, x.scale),), x.offset, {x.variable: x.bound.value}
        return (), int(x), {}

    @property
    def raw(self) -> int:
        return self.const + sum(c * self.values[v] for v, c in self.terms)

    @property
    def value(self) -> int:
        return min(max(self.raw, 0), self.phys)

    @property
    def lo(self) -> int:
        return self.const + sum(c * (v.min if c > 0 else v.max) for v, c in self.terms)

    @property
    def hi(self) -> int:
        return self.const + sum(c * (v.max if c > 0 else v.min) for v, c in self.terms)

    def same(self, o: VDim) -> bool:
        return self.terms == o.terms and self.const == o.const

    def with_phys(self, phys: int) -> VDim:
        return VDim(self.terms, self.const, phys, self.values)

    def scaled(self, m: int) -> VDim:
        return VDim(tuple((v, c * m) for v, c in self.terms), self.const * m, self.phys * m, self.values)

    def rebound(self, bindings: dict[Variable, int]) -> VDim:
        return VDim(self.terms, self.const, self.phys, {v: bindings.get(v, x) for v, x in self.values.items()})

    def public(self) -> Any:
        """The size as Python sees it: the bound variable itself where the size is exactly one
        variable, a ``BoundExpr`` where it is an affine expression of one (no report), else its int
        value (a read: reported)."""
        if len(self.terms) == 1:
            var, c = self.terms[0]
            if 0 <= self.raw <= self.phys:
                bound = BV(self.values[var], var)
                return bound if c == 1 and not self.const else BoundExpr(bound, c, self.const)
        for var, _ in self.terms:
            _taint(var)
        return self.value

    def args(self, sign: int = 1) -> list[VariableArg]:
        """One kernel argument per variable: ``sign * c * v``."""
        return [VariableArg(BV(self.values[v], v), _Lin(sign * c)) for v, c in self.terms]


def _dim_of(x: Any, phys: int) -> VDim:
    terms, const, values = VDim.of(x)
    return VDim(terms, const, phys, values)


def _add(a: tuple, b: tuple, sign: int = 1) -> tuple:
    """(terms, const, values) of ``a + sign * b``."""
    terms = dict(a[0])
    for v, c in b[0]:
        terms[v] = terms.get(v, 0) + sign * c
    return tuple(terms.items()), a[1] + sign * b[1], {**a[2], **b[2]}


def _lo_hi(e: tuple) -> tuple[int, int]:
    d = VDim(e[0], e[1], 0, e[2])
    return d.lo, d.hi


def make(phys: Tensor, vax: list | tuple) -> Tensor:
    """``phys`` as a tensor with the variable axes ``vax`` (a plain tensor when there are none)."""
    if all(v is None for v in vax):
        return phys
    if phys._ag is not None:  # the entry points send tensors that record gradients by value
        raise ShapeError("internal: a variable-size result that records a gradient (expected the by-value path)")
    out = object.__new__(varsize_class())
    out._data = phys._data
    out._pview = phys._view
    out._vax = tuple(vax)
    out._dtype = phys._dtype
    out._device = phys._device
    out._ag = None
    return out


def _parts(x: Any) -> tuple[Any, tuple]:
    """(physical tensor, variable axes) of a tensor (static ones: all None)."""
    if type(x) in VARSIZE:
        return x.phys(), x._vax
    return x, (None,) * x.ndim


def _plain(a: Any) -> Any:
    """An argument with its bound variables read as ints (reported): for the by-value fallbacks."""
    if type(a) in BOUND:
        return int(a)
    if type(a) is slice:
        return slice(_plain(a.start), _plain(a.stop), _plain(a.step))
    if type(a) in (tuple, list):
        return type(a)(_plain(x) for x in a)
    return a


#: a variable size is computed at its largest extent only while that costs at most this many times
#: the elements of the bound size (or this many elements): a variable with a huge ``max`` (a step
#: counter) used as a size goes by value instead of allocating for its whole range
WASTE, SMALL = 16, 1 << 20


def _too_big(phys_shape: tuple, logical: int) -> bool:
    n = math.prod(phys_shape)
    return n > SMALL and n > WASTE * max(logical, 1)


def _grad(x: Any) -> bool:
    """Whether ops on ``x`` record gradients (such uses go by value: no variable-size gradients)."""
    return x._ag is not None and is_grad_enabled()


def _tensor(x: Any) -> bool:
    return isinstance(x, Tensor)


# ------------------------------------------------------------------ masks and gathers

# (n, id(device)) -> the realized node of arange(n), while anything still reads it: the masks of one
# graph share one upload, and nothing stays allocated once every tensor using it is gone
_IOTAS: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


def _iota(n: int, axis: int, ndim: int, device: Any) -> Tensor:
    """``arange(n)`` along ``axis`` of a rank-``ndim`` shape of ones."""
    key = (n, id(device))
    node = _IOTAS.get(key)
    if node is None or node.device is not device:
        t = from_host(np.arange(n, dtype=np.int64), dtypes.int64, device)  # not pinned: its readers are not
        _IOTAS[key] = t._data
    else:
        t = tensor_class()(node, View.contiguous((n,)), dtypes.int64, device)
    return t.reshape(tuple(n if i == axis else 1 for i in range(ndim)))


def _below(iota: Tensor, vd: VDim) -> Tensor:
    """``iota < vd`` elementwise (the variables are kernel arguments)."""
    if len(vd.terms) == 1:
        var, c = vd.terms[0]
        if c == 1:
            return iota < VariableArg(BV(vd.values[var], var), _Lin(1, vd.const, vd.phys))
    if not vd.terms:
        return iota < vd.const
    lhs = iota - vd.const if vd.const else iota
    for a in vd.args(-1)[1:]:
        lhs = lhs + a
    var, c = vd.terms[0]
    return lhs < VariableArg(BV(vd.values[var], var), _Lin(c))


def mask(x: Tensor, axis: int, vd: VDim, fill: Any) -> Tensor:
    """``x`` (physical) with the elements of ``axis`` at or past ``vd`` replaced by ``fill``."""
    # compared at the full shape: a comparison broadcast after it would be stored, not fused
    keep = _below(_iota(x.shape[axis], axis, x.ndim, x.device).expand(x.shape), vd)
    return where(keep, x, fill)


def _shifted_index(n: int, start: tuple, size: int, device: Any) -> Tensor:
    """``arange(n) + start`` clamped to ``[0, size)`` (``start``: terms, const, values)."""
    idx = _iota(n, 0, 1, device)
    if start[1]:
        idx = idx + start[1]
    for var, c in start[0]:
        idx = idx + VariableArg(BV(start[2][var], var), _Lin(c))
    lo, hi = _lo_hi(start)
    if lo < 0 or hi + n > size:
        idx = idx.clamp(0, max(size - 1, 0))
    return idx



def bind_spec(x: Any) -> tuple:
    """What a plan keeps to rebuild ``x`` at replay (``rebuild``): its static view and variable axes."""
    return (x._pview, x._vax)


def rebuild(data: Any, spec: tuple, dtype: Any, device: Any, bindings: dict) -> Tensor:
    """A result of a replayed plan with the variable axes bound to the call's values."""
    view, vax = spec
    return make(tensor_class()(data, view, dtype, device), [None if v is None else v.rebound(bindings) for v in vax])
