"""Tensors of variable size: a bound ``zyx.Variable`` as a size or start (API.md "Tapes and variables").

``x[:t]``, ``x.narrow(d, s, n)``, ``x[a:b]``, ``expand``/``reshape`` to a bound variable, ``pad`` by
one and ``arange`` up to one give a ``VarTensor``: its Python shape holds the bound values (a
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
Not covered: autograd through variable sizes (an input that requires grad goes by value),
in-place writes into a variable size (they raise).
"""
from __future__ import annotations

import math
import weakref
from typing import Any

import numpy as np

from zyx import dtype as dtypes
from zyx.errors import ShapeError
from zyx.frontend.autograd import is_grad_enabled
from zyx.frontend.base import VARSIZE, tensor_class
from zyx.ir import variable
from zyx.ir.variable import BoundVariable, Variable, VariableArg
from zyx.ir.view import View, normalize_dim

BV = BoundVariable
# the concrete tensor class (this module is imported after it is defined: the ``zyx`` package
# imports ``frontend.tensor`` first, and frontend code imports this module inside functions)
Tensor: Any = tensor_class()


class _Lin:
    """``c * value + k`` (clamped to ``[0, hi]`` when ``hi`` is given), times ``m``: a variable
    argument's function."""

    __slots__ = ("c", "k", "hi", "m")

    def __init__(self, c: int, k: int = 0, hi: int | None = None, m: int = 1) -> None:
        self.c, self.k, self.hi, self.m = c, k, hi, m

    def __call__(self, v: int) -> int:
        x = self.c * v + self.k
        return (x if self.hi is None else min(max(x, 0), self.hi)) * self.m

    def __eq__(self, o: object) -> bool:
        return type(o) is _Lin and (o.c, o.k, o.hi, o.m) == (self.c, self.k, self.hi, self.m)

    def __hash__(self) -> int:
        return hash((self.c, self.k, self.hi, self.m))


def _taint(var: Variable) -> None:
    hook = variable.taint_hook
    if hook is not None:
        hook(var)


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
        """(terms, const, values) of an int, a bound variable or a ``narrow`` end."""
        if type(x) is _EndExpr:
            return _add(VDim.of(x.start), VDim.of(x.length))
        if type(x) is BV:
            return ((x.variable, 1),), 0, {x.variable: x.value}
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
        variable (no report), else its int value (a read: reported)."""
        if len(self.terms) == 1 and self.terms[0][1] == 1 and not self.const:
            var = self.terms[0][0]
            v = self.values[var]
            if 0 <= v <= self.phys:
                return BV(v, var)
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


# ------------------------------------------------------------------ the tensor

class VarTensor(Tensor):
    """A tensor with variable-size axes (see the module docstring): ``_data`` is computed at the
    static extents of ``_pview``; ``_vax[d]`` is the ``VDim`` of axis ``d`` (None: static)."""

    __slots__ = ("_pview", "_vax")

    @property  # type: ignore[override]
    def _view(self) -> View:
        """The view at the bound values (a read of them: reported, so a capture keys by the values)."""
        v = self._pview
        for d, vd in enumerate(self._vax):
            if vd is not None:
                for var, _ in vd.terms:
                    _taint(var)
                v = v.slice(d, 0, vd.value, 1)
        return v

    @_view.setter
    def _view(self, v: View) -> None:
        raise ShapeError("in-place writes into a tensor of variable size are not supported "
                         "(expected a tensor of static size; take .contiguous() of a static slice)")

    def requires_grad_(self, requires_grad: bool = True) -> VarTensor:
        if requires_grad:
            from zyx.errors import AutogradError

            raise AutogradError("a tensor of variable size cannot require grad (expected a static tensor: "
                                "slice a leaf that requires grad instead; that slice is taken by value)")
        return self

    def _assign(self, value: Tensor) -> None:
        raise ShapeError("in-place writes into a tensor of variable size are not supported "
                         "(expected a tensor of static size)")

    @property
    def shape(self) -> tuple:
        ps = self._pview.shape
        return tuple(ps[d] if vd is None else vd.public() for d, vd in enumerate(self._vax))

    @property
    def ndim(self) -> int:
        return len(self._vax)

    def dim(self) -> int:
        return len(self._vax)

    def __len__(self) -> int:
        if not self._vax:
            raise TypeError("len() of a 0-d tensor")
        return int(self.shape[0])

    def realize(self) -> VarTensor:
        """Run the pending work (at the static extents) and return this tensor."""
        from zyx import graph

        graph.realize(self._data)
        return self

    def numpy(self) -> Any:
        """A NumPy copy of the values at the bound sizes (read at the static extents, then cut on the
        host: one readback kernel serves every value)."""
        arr = Tensor.numpy(self.phys())
        cut = []
        for vd in self._vax:
            if vd is None:
                cut.append(slice(None))
            else:
                for var, _ in vd.terms:
                    _taint(var)
                cut.append(slice(0, vd.value))
        return np.ascontiguousarray(arr[tuple(cut)])

    def phys(self) -> Tensor:
        """The data at the static extents (a plain tensor; elements past a size are unspecified)."""
        return Tensor(self._data, self._pview, self._dtype, self._device)


VARSIZE.add(VarTensor)


def make(phys: Tensor, vax: list | tuple) -> Tensor:
    """``phys`` as a tensor with the variable axes ``vax`` (a plain tensor when there are none)."""
    if all(v is None for v in vax):
        return phys
    if phys._ag is not None:  # the entry points send tensors that record gradients by value
        raise ShapeError("internal: a variable-size result that records a gradient (expected the by-value path)")
    out = object.__new__(VarTensor)
    out._data = phys._data
    out._pview = phys._view
    out._vax = tuple(vax)
    out._dtype = phys._dtype
    out._device = phys._device
    out._ag = None
    return out


def _parts(x: Any) -> tuple[Any, tuple]:
    """(physical tensor, variable axes) of a tensor (static ones: all None)."""
    if type(x) is VarTensor:
        return x.phys(), x._vax
    return x, (None,) * x.ndim


def concrete(x: Any) -> Any:
    """``x`` at its bound values, as a plain tensor (a reported read); other values as they are."""
    if type(x) is VarTensor:
        return Tensor(x._data, x._view, x._dtype, x._device)
    return x


def _plain(a: Any) -> Any:
    """An argument with its bound variables read as ints (reported): for the by-value fallbacks."""
    if type(a) is BV:
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
    from zyx.frontend.creation import from_host

    key = (n, id(device))
    node = _IOTAS.get(key)
    if node is None or node.device is not device:
        t = from_host(np.arange(n, dtype=np.int64), dtypes.int64, device)  # not pinned: its readers are not
        _IOTAS[key] = t._data
    else:
        t = Tensor(node, View.contiguous((n,)), dtypes.int64, device)
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
    from zyx.frontend.elementwise import where

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


# ------------------------------------------------------------------ slicing

def _slice_axis(x: Any, d: int, start: Any, stop: Any) -> Any:
    """``x`` sliced ``[start:stop]`` on its static axis ``d`` (Python semantics; ints, None or bound
    variables), or None when the bounds cannot make a variable size (the caller falls back)."""
    phys, vax = _parts(x)
    size = phys.shape[d]
    s = VDim.of(0 if start is None else start)
    e = VDim.of(size if stop is None else stop)
    if not s[0] and s[1] < 0:
        s = ((), max(size + s[1], 0), {})
    if not e[0] and e[1] < 0:
        e = ((), max(size + e[1], 0), {})
    if not s[0]:
        s = ((), min(s[1], size), {})
    if not e[0]:
        e = ((), min(e[1], size), {})
    slo, shi = _lo_hi(s)
    elo, ehi = _lo_hi(e)
    if slo < 0 or elo < 0 or (s[0] and ehi > size):
        return None  # a negative variable bound counts from the end; a variable start with an end past it clamps
    n = _add(e, s, -1)
    phys_len = max(min(ehi, size) - slo, 0)
    vd = VDim(n[0], n[1], phys_len, n[2])
    if not s[0]:
        out = phys.narrow(d, s[1], phys_len)
    else:
        out = phys.index_select(d, _shifted_index(phys_len, s, size, phys.device))
    vax = list(vax)
    vax[d] = vd if vd.terms else None
    if vd.terms:
        return make(out, vax)
    return make(out.narrow(d, 0, vd.value), vax)


def narrow(x: Any, dim: int, start: Any, length: Any) -> Any:
    """``x.narrow(dim, start, length)`` with a bound variable start and/or length."""
    d = normalize_dim(dim, x.ndim)
    phys, vax = _parts(x)
    size = phys.shape[d]
    if vax[d] is None and type(start) is not BV and type(length) is not BV and not _grad(x):
        return make(Tensor.narrow(phys, d, start, length), vax)  # a static narrow of a static axis
    if vax[d] is None and not _grad(x):
        s, n = VDim.of(start), VDim.of(length)
        if not s[0] and s[1] < 0:
            s = ((), s[1] + size, {})
        slo, shi = _lo_hi(s)
        nlo, nhi = _lo_hi(n)
        if slo >= 0 and nlo >= 0 and shi + nhi <= size:  # every bound value is in range: no check at replay
            if not n[0]:
                out = phys.index_select(d, _shifted_index(nhi, s, size, phys.device))
                return make(out, vax)
            st = start if type(start) is BV else s[1]
            return _slice_axis(x, d, st, _EndExpr(st, length))
    return Tensor.narrow(concrete(x), dim, _plain(start), _plain(length))


class _EndExpr:
    """A slice end ``start + length`` (for ``narrow``): ``VDim.of`` reads its terms."""

    __slots__ = ("start", "length")

    def __init__(self, start: Any, length: Any) -> None:
        self.start, self.length = start, length


def getitem(x: Any, index: Any) -> Any:
    """``x[index]`` for a basic index (slices, ints, None, ``...``) on a tensor that has variable
    axes or is sliced by bound variables."""
    if _grad(x):
        return Tensor.__getitem__(concrete(x), _plain(index))
    items = list(index) if type(index) is tuple else [index]
    n_axes = sum(1 for i in items if i is not None and i is not Ellipsis)
    if sum(1 for i in items if i is Ellipsis) > 1 or n_axes > x.ndim:
        return Tensor.__getitem__(concrete(x), _plain(index))
    if Ellipsis in items:
        k = items.index(Ellipsis)
        items[k:k + 1] = [slice(None)] * (x.ndim - n_axes)
    items += [slice(None)] * (x.ndim - n_axes)
    phys, vax = _parts(x)
    static_items, later, out_vax = [], [], []
    axis, out_axis = 0, 0
    for it in items:
        if it is None:
            static_items.append(None)
            out_vax.append(None)
            out_axis += 1
            continue
        if type(it) is slice:
            if it.step not in (None, 1) and (type(it.step) is BV or vax[axis] is not None):
                return Tensor.__getitem__(concrete(x), _plain(index))
            if type(it.start) is BV or type(it.stop) is BV:
                if vax[axis] is not None or it.step not in (None, 1):
                    return Tensor.__getitem__(concrete(x), _plain(index))
                later.append((out_axis, it.start, it.stop))
                static_items.append(slice(None))
            elif vax[axis] is not None and it != slice(None):
                return Tensor.__getitem__(concrete(x), _plain(index))
            else:
                static_items.append(it)
            out_vax.append(vax[axis])
            out_axis += 1
        elif isinstance(it, int) and not isinstance(it, bool) and vax[axis] is None:
            static_items.append(it)
        else:
            return Tensor.__getitem__(concrete(x), _plain(index))
        axis += 1
    out: Any = make(Tensor.__getitem__(phys, tuple(static_items)), out_vax)
    for d, start, stop in later:
        got = _slice_axis(out, d, start, stop)
        if got is None:
            return Tensor.__getitem__(concrete(x), _plain(index))
        out = got
    return out


# ------------------------------------------------------------------ shape changes

def expand(x: Any, shape: tuple) -> Any:
    """``x.expand(*shape)`` where entries may be bound variables (a size-1 axis grows to a variable size)."""
    phys, vax = _parts(x)
    lead = len(shape) - phys.ndim
    if lead < 0 or _grad(x):
        return Tensor.expand(concrete(x), *_plain(shape))
    target, out_vax = [], []
    for i, want in enumerate(shape):
        j = i - lead
        have = phys.shape[j] if j >= 0 else 1
        cur = vax[j] if j >= 0 else None
        if type(want) is BV:
            vd = _dim_of(want, max(want.variable.max, 0))
            if cur is not None:
                if not cur.same(vd):
                    return Tensor.expand(concrete(x), *_plain(shape))
                target.append(have)
                out_vax.append(cur)
            elif have == 1 and want.variable.min >= 0 and not _too_big((vd.phys, *phys.shape), max(vd.value, 1) *
                                                                           phys.numel()):
                target.append(vd.phys)
                out_vax.append(vd)
            else:
                return Tensor.expand(concrete(x), *_plain(shape))
        elif cur is not None:
            if want != -1:
                return Tensor.expand(concrete(x), *_plain(shape))
            target.append(have)
            out_vax.append(cur)
        else:
            target.append(want)
            out_vax.append(None)
    return make(Tensor.expand(phys, *target), out_vax)


def reshape(x: Any, shape: tuple) -> Any:
    """``x.reshape(*shape)``: a tensor whose variable axis is its first keeps it first (the other
    sizes static, ``-1`` or the same bound variable in first place)."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    phys, vax = _parts(x)
    if any(v is not None for v in vax[1:]) or vax[0] is None or not shape or _grad(x):
        return Tensor.reshape(concrete(x), *_plain(shape))
    vd = vax[0]
    inner = math.prod(phys.shape[1:])
    rest = shape[1:]
    if any(type(s) is BV or not isinstance(s, int) or s < 0 for s in rest):
        return Tensor.reshape(concrete(x), *_plain(shape))
    k = math.prod(rest)
    first = shape[0]
    if type(first) is BV:
        if not vd.same(_dim_of(first, 0)) or k != inner:
            return Tensor.reshape(concrete(x), *_plain(shape))
        return make(phys.reshape(phys.shape[0], *rest), [vd] + [None] * len(rest))
    if first == -1 and k and inner % k == 0:
        m = inner // k
        return make(phys.reshape(phys.shape[0] * m, *rest), [vd.scaled(m)] + [None] * len(rest))
    return Tensor.reshape(concrete(x), *_plain(shape))


def pad(x: Any, pads: tuple, value: Any) -> Any:
    """Constant ``pad`` where amounts may be bound variables (non-negative) or ``x`` has variable axes."""
    from zyx.frontend.elementwise import where

    if len(pads) % 2 or len(pads) // 2 > x.ndim:
        raise ShapeError(f"pad: expected an even number of pad amounts for at most {x.ndim} dims, got {pads}")
    if _grad(x):
        return Tensor.pad(concrete(x), _plain(tuple(pads)), "constant", value)
    phys, vax = _parts(x)
    vax = list(vax)
    per_dim = [(0, 0)] * phys.ndim
    for i in range(len(pads) // 2):
        per_dim[phys.ndim - 1 - i] = (pads[2 * i], pads[2 * i + 1])
    for d, (lo, hi) in enumerate(per_dim):
        lo_e, hi_e = VDim.of(lo), VDim.of(hi)
        if _lo_hi(lo_e)[0] < 0 or _lo_hi(hi_e)[0] < 0:
            return Tensor.pad(concrete(x), _plain(tuple(pads)), "constant", value)
        if not lo_e[0] and not hi_e[0] and vax[d] is None:
            if lo_e[1] or hi_e[1]:
                widths = [0, 0] * (phys.ndim - 1 - d) + [lo_e[1], hi_e[1]]
                phys = Tensor.pad(phys, tuple(widths), "constant", value)
            continue
        cur = vax[d]
        size = phys.shape[d]
        n_in = ((cur.terms, cur.const, cur.values) if cur is not None else ((), size, {}))
        total = _add(_add(n_in, lo_e), hi_e)
        p_out = max(_lo_hi(total)[1], 0)
        rows = phys.numel() // max(size, 1)
        if _too_big((p_out * rows,), VDim(total[0], total[1], p_out, total[2]).value * rows):
            return Tensor.pad(concrete(x), _plain(tuple(pads)), "constant", value)
        # out[i] = x[i - lo] where 0 <= i - lo < n_in, else value
        neg_lo = ((tuple((v, -c) for v, c in lo_e[0])), -lo_e[1], lo_e[2])
        src = _shifted_index(p_out, neg_lo, size, phys.device)
        got = phys.index_select(d, src)
        pos = _iota(p_out, d, phys.ndim, phys.device).expand(got.shape)  # full shape: the test fuses
        start = VDim(lo_e[0], lo_e[1], p_out, lo_e[2])
        end = _add(lo_e, n_in)
        inside = (~_below(pos, start)) & _below(pos, VDim(end[0], end[1], p_out, end[2]))
        phys = where(inside, got, value)
        vax[d] = VDim(total[0], total[1], p_out, total[2]) if total[0] else None
        if vax[d] is None and total[1] != p_out:
            phys = phys.narrow(d, 0, total[1])
    return make(phys, vax)


def arange(start: Any, stop: Any, step: Any, dtype: Any, device: Any) -> Any:
    """``arange`` with a bound-variable start and/or stop (step 1)."""
    from zyx.frontend.creation import arange as _arange

    s, e = VDim.of(start), VDim.of(stop)
    n = _add(e, s, -1)
    lo, hi = _lo_hi(n)
    float_args = any(isinstance(a, float) for a in (start, stop, step))
    if step != 1 or float_args or lo < 0 or _too_big((hi,), VDim(n[0], n[1], hi, n[2]).value):
        return _arange(concrete_int(start), concrete_int(stop), step, dtype=dtype, device=device)
    base = _arange(hi, dtype=dtype, device=device)
    if s[0] or s[1]:
        base = base + s[1] if s[1] else base
        for var, c in s[0]:
            base = base + VariableArg(BV(s[2][var], var), _Lin(c))
        if dtype is not None:
            base = base.cast(dtype)
    return make(base, [VDim(n[0], n[1], hi, n[2])])


def concrete_int(x: Any) -> Any:
    return int(x) if type(x) is BV else x


# ------------------------------------------------------------------ elementwise

def _broadcast(parts: list[tuple[Tensor, tuple]]) -> tuple[list[Tensor], list] | None:
    """Physical operands aligned for a broadcasting op and the result's variable axes; None when a
    static size meets a variable one (the caller falls back to the bound values)."""
    nd = max((p.ndim for p, _ in parts), default=0)
    out_vax: list = [None] * nd
    phys_ext: list[int | None] = [None] * nd
    for p, vax in parts:
        off = nd - p.ndim
        for j, vd in enumerate(vax):
            if vd is None:
                continue
            i = off + j
            cur = out_vax[i]
            if cur is None:
                out_vax[i] = vd
                phys_ext[i] = vd.phys
            elif not cur.same(vd):
                return None
            elif vd.phys != phys_ext[i]:
                m = min(vd.phys, phys_ext[i])  # type: ignore[type-var]
                if max(vd.hi, cur.hi) > m:
                    return None
                phys_ext[i] = m
                out_vax[i] = cur.with_phys(m)
    tensors = []
    for p, vax in parts:
        off = nd - p.ndim
        for j in range(p.ndim):
            i = off + j
            if phys_ext[i] is None:
                continue
            if vax[j] is None and p.shape[j] != 1:
                return None
            if vax[j] is not None and p.shape[j] != phys_ext[i]:
                p = p.narrow(j, 0, phys_ext[i])
        tensors.append(p)
    return tensors, out_vax


def elementwise(fn: Any, *args: Any, **kw: Any) -> Any:
    """``fn(*args)`` (an elementwise op or method) over operands some of which have variable axes."""
    pos = [i for i, a in enumerate(args) if _tensor(a)]
    if any(args[i]._ag is not None for i in pos):
        return fn(*(concrete(a) for a in args), **kw)
    got = _broadcast([_parts(args[i]) for i in pos])
    if got is None:
        return fn(*(concrete(a) for a in args), **kw)
    tensors, out_vax = got
    new = list(args)
    for i, t in zip(pos, tensors):
        new[i] = t
    out = fn(*new, **kw)
    if out is NotImplemented:
        return out
    if not isinstance(out, Tensor) or out.ndim != len(out_vax):
        return fn(*(concrete(a) for a in args), **kw)
    return make(out, out_vax)


_BINARY = ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__", "__rtruediv__",
           "__floordiv__", "__rfloordiv__", "__mod__", "__rmod__", "__pow__", "__rpow__", "__lt__", "__le__",
           "__gt__", "__ge__", "__eq__", "__ne__", "__and__", "__rand__", "__or__", "__ror__", "__xor__",
           "__rxor__", "add", "sub", "mul", "div", "pow", "maximum", "minimum", "eq", "ne", "atan2", "hypot",
           "logical_and", "logical_or", "logical_xor", "copysign", "fmod", "remainder", "lerp", "where",
           "masked_fill")
_UNARY = ("__neg__", "__abs__", "__invert__", "__pos__", "abs", "neg", "exp", "exp2", "expm1", "log", "log2",
          "log10", "log1p", "sqrt", "rsqrt", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh",
          "asinh", "acosh", "atanh", "sigmoid", "relu", "gelu", "silu", "erf", "reciprocal", "square", "floor",
          "ceil", "round", "trunc", "sign", "isnan", "isinf", "isfinite", "logical_not", "clamp", "clip",
          "nan_to_num", "cast", "type", "to", "detach", "float", "half", "double", "int", "long", "bool")


def _wrap(name: str) -> Any:
    base = getattr(Tensor, name)

    def method(self: Any, *args: Any, **kw: Any) -> Any:
        return elementwise(base, self, *args, **kw)

    method.__name__ = name
    method.__doc__ = base.__doc__
    return method


for _n in _BINARY + _UNARY:
    if hasattr(Tensor, _n) and callable(getattr(Tensor, _n)):
        setattr(VarTensor, _n, _wrap(_n))


def where(cond: Any, a: Any, b: Any) -> Any:
    """``zyx.where`` over operands with variable axes."""
    from zyx.frontend.elementwise import where as _where

    return elementwise(_where, cond, a, b)


# ------------------------------------------------------------------ reductions

def _fill(op: str, dt: Any) -> Any:
    """The identity of reduce ``op`` in ``dt`` (a Python value of ``dt``'s kind: the dtype stays)."""
    if op in ("sum", "mean"):
        return False if dt.is_bool else 0
    if op in ("prod", "all"):
        return True if dt.is_bool else 1
    if op == "any":
        return False
    big = op in ("min", "amin", "argmin")
    if dt.is_bool:
        return big
    if dt.is_float:
        return math.inf if big else -math.inf
    info = np.iinfo(dt.numpy)
    return int(info.max if big else info.min)


def _reduce_dims(x: Any, dim: Any) -> tuple[int, ...]:
    if dim is None:
        return tuple(range(x.ndim))
    if isinstance(dim, (tuple, list)):
        return tuple(sorted({normalize_dim(d, x.ndim) for d in dim}))
    return (normalize_dim(dim, x.ndim),)


def reduction(name: str, x: Any, dim: Any = None, keepdim: bool = False, **kw: Any) -> Any:
    """``x.<name>(dim, keepdim)`` (sum, mean, prod, max, min, amax, amin, argmax, argmin, any, all,
    logsumexp) with the elements past each variable size masked by the reduce's identity."""
    base = getattr(Tensor, name)
    if x._ag is not None or x.ndim == 0:
        return base(concrete(x), dim, keepdim, **kw)
    phys, vax = _parts(x)
    dims = _reduce_dims(x, dim)
    var_dims = [d for d in dims if vax[d] is not None]
    if name in ("max", "min", "amax", "amin", "argmax", "argmin") and any(vax[d].lo <= 0 for d in var_dims):
        return base(concrete(x), dim, keepdim, **kw)  # possibly empty: PyTorch raises, by value
    if name in ("argmax", "argmin") and dim is None and var_dims:
        return base(concrete(x), dim, keepdim, **kw)  # a flat index counts the bound sizes
    if name == "mean" and not phys.dtype.is_float:
        return base(concrete(x), dim, keepdim, **kw)  # its error
    work = phys
    fill = _fill("max" if name == "logsumexp" else name, phys.dtype)  # logsumexp: exp(-inf) adds 0
    for d in var_dims:
        work = mask(work, d, vax[d], fill)
    if name == "mean":
        wide = dtypes.float32 if phys.dtype.itemsize < 4 else phys.dtype  # one rounding, as PyTorch
        out = Tensor.sum(work, dim, keepdim, dtype=wide)
        static = math.prod(phys.shape[d] for d in dims if vax[d] is None)
        if len(var_dims) == 1 and len(vax[var_dims[0]].terms) == 1:  # one division by the count, as PyTorch
            vd = vax[var_dims[0]]
            var, c = vd.terms[0]
            out = out / VariableArg(BV(vd.values[var], var), _Lin(c, vd.const, vd.phys, static))
        else:
            for d in var_dims:
                out = out / _count(phys, d, vax[d])
            out = out / static if static != 1 else out
        out = out.cast(phys.dtype)
    else:
        out = base(work, dim, keepdim, **kw)
    out_vax = [None if d in dims else v for d, v in enumerate(vax)] if keepdim else \
        [v for d, v in enumerate(vax) if d not in dims]
    if not isinstance(out, Tensor) or out.ndim != len(out_vax):
        return base(concrete(x), dim, keepdim, **kw)
    return make(out, out_vax)


def _count(phys: Tensor, d: int, vd: VDim) -> Tensor:
    """The number of elements of axis ``d`` below ``vd``, as a float32 0-d tensor."""
    keep = _below(_iota(phys.shape[d], 0, 1, phys.device), vd)
    return keep.cast(dtypes.float32).sum()


def softmax(name: str, x: Any, dim: int = -1) -> Any:
    """``softmax``/``log_softmax`` along ``dim``; a variable axis is masked with -inf first."""
    base = getattr(Tensor, name)
    if x._ag is not None or x.ndim == 0:
        return base(concrete(x), dim)
    phys, vax = _parts(x)
    d = normalize_dim(dim, x.ndim)
    work = phys
    if vax[d] is not None:
        if not phys.dtype.is_float:
            work = phys.cast(dtypes.float32)
        work = mask(work, d, vax[d], -math.inf)
    out = base(work, d)
    return make(out, vax)


def matmul(a: Any, b: Any) -> Any:
    """``a @ b`` where either has variable axes; a variable contraction length masks both operands
    with 0 along it (the attention case ``softmax(q @ k[:t].T) @ v[:t]``)."""
    from zyx.frontend.reduce import matmul as _mm

    if not (_tensor(a) and _tensor(b)) or a._ag is not None or b._ag is not None or a.ndim == 0 or b.ndim == 0:
        return _mm(concrete(a), concrete(b))
    pa, va = _parts(a)
    pb, vb = _parts(b)
    va, vb = list(va), list(vb)
    ua, ub = pa.ndim == 1, pb.ndim == 1
    if ua:
        pa, va = pa.unsqueeze(0), [None] + va
    if ub:
        pb, vb = pb.unsqueeze(1), vb + [None]
    ka, kb = va[-1], vb[-2]
    if (ka is None) != (kb is None) or (ka is not None and not ka.same(kb)):
        return _mm(concrete(a), concrete(b))
    product = None
    if ka is not None:
        m = min(ka.phys, kb.phys)
        if ka.phys != kb.phys and max(ka.hi, kb.hi) > m:
            return _mm(concrete(a), concrete(b))
        pa, pb = pa.narrow(-1, 0, m), pb.narrow(-2, 0, m)
        if pa.dtype is pb.dtype and pa.dtype in (dtypes.float32, dtypes.float64):
            product = _masked_product(pa, pb, ka.with_phys(m))
        else:
            pa = mask(pa, pa.ndim - 1, ka.with_phys(m), 0)
            pb = mask(pb, pb.ndim - 2, kb.with_phys(m), 0)
    # the batch dims broadcast like an elementwise op
    ba = (pa.shape[:-2], tuple(va[:-2]))
    bb = (pb.shape[:-2], tuple(vb[:-2]))
    got = _broadcast([(_Shape(ba[0]), ba[1]), (_Shape(bb[0]), bb[1])])
    if got is None:
        return _mm(concrete(a), concrete(b))
    batch_vax = got[1]
    if any(v is not None for v in batch_vax):
        return _mm(concrete(a), concrete(b))  # variable batch dims: by value
    out = _mm(pa, pb) if product is None else product
    out_vax = list(batch_vax) + [va[-2], vb[-1]]
    if ua:
        out_vax.pop(-2)
        out = out.squeeze(-2)
    if ub:
        out_vax.pop(-1)
        out = out.squeeze(-1)
    return make(out, out_vax)


def _masked_product(pa: Tensor, pb: Tensor, vd: VDim) -> Tensor:
    """``pa @ pb`` (physical, float32/64) with the products past the contraction length ``vd`` zeroed
    inside the multiply-reduce: one fused kernel, as ``matmul``'s own, with the bound as an argument
    (masking each operand instead would store a masked copy of a broadcast operand first)."""
    from zyx.frontend.elementwise import where

    prod = pa.unsqueeze(-2) * pb.transpose(-1, -2).unsqueeze(-3)  # (..., n, m, k)
    keep = _below(_iota(prod.shape[-1], prod.ndim - 1, prod.ndim, prod.device).expand(prod.shape), vd)
    return where(keep, prod, 0.0).sum(-1)


class _Shape:
    """A stand-in with a shape for ``_broadcast`` (batch dims only)."""

    def __init__(self, shape: tuple) -> None:
        self.shape = shape
        self.ndim = len(shape)

    def narrow(self, j: int, start: int, n: int) -> _Shape:
        return _Shape(self.shape[:j] + (n,) + self.shape[j + 1:])


# ------------------------------------------------------------------ the methods of VarTensor

def _movement(name: str) -> Any:
    def method(self: VarTensor, *args: Any, **kw: Any) -> Any:
        return _MOVES[name](self, *args, **kw)
    method.__name__ = name
    return method


def _permute(x: VarTensor, *dims: Any) -> Any:
    order = tuple(dims[0]) if len(dims) == 1 and isinstance(dims[0], (tuple, list)) else dims
    phys = x.phys().permute(*order)
    return make(phys, [x._vax[normalize_dim(d, x.ndim)] for d in order])


def _transpose(x: VarTensor, d0: int, d1: int) -> Any:
    a, b = normalize_dim(d0, x.ndim), normalize_dim(d1, x.ndim)
    order = list(range(x.ndim))
    order[a], order[b] = order[b], order[a]
    return _permute(x, *order)


def _unsqueeze(x: VarTensor, dim: int) -> Any:
    d = normalize_dim(dim, x.ndim + 1)
    vax = list(x._vax)
    vax.insert(d, None)
    return make(x.phys().unsqueeze(d), vax)


def _squeeze(x: VarTensor, dim: Any = None) -> Any:
    dims = range(x.ndim) if dim is None else ((dim,) if isinstance(dim, int) else dim)
    dims = tuple(normalize_dim(d, x.ndim) for d in dims)
    drop = tuple(d for d in dims if x._vax[d] is None and x._pview.shape[d] == 1)
    if dim is not None and any(x._vax[d] is not None for d in dims):
        return Tensor.squeeze(concrete(x), dim)  # a variable size that may be 1: by value
    return make(x.phys().squeeze(drop), [v for d, v in enumerate(x._vax) if d not in drop])


_MOVES = {
    "permute": _permute, "transpose": _transpose, "swapaxes": _transpose, "swapdims": _transpose,
    "unsqueeze": _unsqueeze, "squeeze": _squeeze,
    "narrow": lambda x, dim, start, length: narrow(x, dim, start, length),
    "expand": lambda x, *shape: expand(x, tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list))
                                       else shape),
    "broadcast_to": lambda x, *shape: _MOVES["expand"](x, *shape),
    "reshape": lambda x, *shape: reshape(x, shape), "view": lambda x, *shape: reshape(x, shape),
    "pad": lambda x, pads, mode="constant", value=None: (
        pad(x, tuple(pads), 0 if value is None else value) if mode == "constant" and not isinstance(mode, float)
        else Tensor.pad(concrete(x), _plain(pads), mode, value)),
    "__getitem__": getitem,
    "matmul": matmul, "__matmul__": matmul, "__rmatmul__": lambda x, o: matmul(o, x),
}
for _n in _MOVES:
    setattr(VarTensor, _n, _movement(_n))
VarTensor.T = property(lambda self: _permute(self, *reversed(range(self.ndim))))  # type: ignore[assignment]
VarTensor.mT = property(lambda self: _transpose(self, -1, -2))  # type: ignore[assignment]

for _n in ("sum", "mean", "prod", "max", "min", "amax", "amin", "argmax", "argmin", "any", "all", "logsumexp"):
    def _red(self: VarTensor, dim: Any = None, keepdim: bool = False, _name: str = _n, **kw: Any) -> Any:
        return reduction(_name, self, dim, keepdim, **kw)
    _red.__name__ = _n
    setattr(VarTensor, _n, _red)
for _n in ("softmax", "log_softmax"):
    def _sm(self: VarTensor, dim: int = -1, _name: str = _n) -> Any:
        return softmax(_name, self, dim)
    _sm.__name__ = _n
    setattr(VarTensor, _n, _sm)


def bind_spec(x: VarTensor) -> tuple:
    """What a plan keeps to rebuild ``x`` at replay (``rebuild``): its static view and variable axes."""
    return (x._pview, x._vax)


def rebuild(data: Any, spec: tuple, dtype: Any, device: Any, bindings: dict) -> Tensor:
    """A result of a replayed plan with the variable axes bound to the call's values."""
    view, vax = spec
    return make(Tensor(data, view, dtype, device), [None if v is None else v.rebound(bindings) for v in vax])
