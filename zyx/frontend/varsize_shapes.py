"""The entry points of variable sizes (``frontend.varsize``): slices, ``narrow``, ``expand``,
``reshape``, ``pad`` and ``arange`` with a bound variable as a size or start (``VarEntryMixin``, the
methods of ``Tensor`` that take them before its movement methods do), and the movement methods of
``VarTensor`` (``VarMovementMixin``: permute, transpose, squeeze, ...). A case without a variable form
goes by value."""
from __future__ import annotations

import math
from typing import Any

from zyx.errors import ShapeError
from zyx.frontend.args import shape_arg
from zyx.frontend.base import GATHERED_VIEWS, TensorBase, concrete, tensor_class
from zyx.frontend.creation import arange as _arange
from zyx.frontend.elementwise import where
from zyx.frontend.varsize import (
    BOUND,
    BV,
    VDim,
    _add,
    _below,
    _dim_of,
    _EndExpr,
    _grad,
    _iota,
    _Lin,
    _lo_hi,
    _parts,
    _plain,
    _shifted_index,
    _too_big,
    make,
)
from zyx.frontend.view_index import infer_shape
from zyx.ir.variable import VariableArg
from zyx.ir.view import normalize_dim

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
        GATHERED_VIEWS.add(out._data)
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
    if vax[d] is None and type(start) not in BOUND and type(length) not in BOUND and not _grad(x):
        return make(tensor_class().narrow(phys, d, start, length), vax)  # a static narrow of a static axis
    if vax[d] is None and not _grad(x):
        s, n = VDim.of(start), VDim.of(length)
        if not s[0] and s[1] < 0:
            s = ((), s[1] + size, {})
        slo, shi = _lo_hi(s)
        nlo, nhi = _lo_hi(n)
        if slo >= 0 and nlo >= 0 and shi + nhi <= size:  # every bound value is in range: no check at replay
            if not n[0]:
                out = phys.index_select(d, _shifted_index(nhi, s, size, phys.device))
                GATHERED_VIEWS.add(out._data)
                return make(out, vax)
            st = start if type(start) in BOUND else s[1]
            return _slice_axis(x, d, st, _EndExpr(st, length))
    return tensor_class().narrow(concrete(x), dim, _plain(start), _plain(length))


def getitem(x: Any, index: Any) -> Any:
    """``x[index]`` for a basic index (slices, ints, None, ``...``) on a tensor that has variable
    axes or is sliced by bound variables."""
    if _grad(x):
        return tensor_class().__getitem__(concrete(x), _plain(index))
    items = list(index) if type(index) is tuple else [index]
    n_axes = sum(1 for i in items if i is not None and i is not Ellipsis)
    if sum(1 for i in items if i is Ellipsis) > 1 or n_axes > x.ndim:
        return tensor_class().__getitem__(concrete(x), _plain(index))
    if Ellipsis in items:
        k = items.index(Ellipsis)
        items[k:k + 1] = [slice(None)] * (x.ndim - n_axes)
    else:
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
            if it.step not in (None, 1) and (type(it.step) in BOUND or vax[axis] is not None):
                return tensor_class().__getitem__(concrete(x), _plain(index))
            if type(it.start) in BOUND or type(it.stop) in BOUND:
                if vax[axis] is not None or it.step not in (None, 1):
                    return tensor_class().__getitem__(concrete(x), _plain(index))
                later.append((out_axis, it.start, it.stop))
                static_items.append(slice(None))
            elif vax[axis] is not None and it != slice(None):
                return tensor_class().__getitem__(concrete(x), _plain(index))
            else:
                static_items.append(it)
            out_vax.append(vax[axis])
            out_axis += 1
        elif isinstance(it, int) and not isinstance(it, bool) and vax[axis] is None:
            static_items.append(it)
        else:
            return tensor_class().__getitem__(concrete(x), _plain(index))
        axis += 1
    out: Any = make(tensor_class().__getitem__(phys, tuple(static_items)), out_vax)
    for d, start, stop in later:
        got = _slice_axis(out, d, start, stop)
        if got is None:
            return tensor_class().__getitem__(concrete(x), _plain(index))
        out = got
    return out


# ------------------------------------------------------------------ shape changes

def expand(x: Any, shape: tuple) -> Any:
    """``x.expand(*shape)`` where entries may be bound variables (a size-1 axis grows to a variable size)."""
    phys, vax = _parts(x)
    lead = len(shape) - phys.ndim
    if lead < 0 or _grad(x):
        return tensor_class().expand(concrete(x), *_plain(shape))
    target, out_vax = [], []
    for i, want in enumerate(shape):
        j = i - lead
        have = phys.shape[j] if j >= 0 else 1
        cur = vax[j] if j >= 0 else None
        if type(want) in BOUND:
            vd = _dim_of(want, max(want.max, 0))
            if cur is not None:
                if not cur.same(vd):
                    return tensor_class().expand(concrete(x), *_plain(shape))
                target.append(have)
                out_vax.append(cur)
            elif have == 1 and want.min >= 0 and not _too_big((vd.phys, *phys.shape), max(vd.value, 1) *
                                                                           phys.numel()):
                target.append(vd.phys)
                out_vax.append(vd)
            else:
                return tensor_class().expand(concrete(x), *_plain(shape))
        elif cur is not None:
            if want != -1:
                return tensor_class().expand(concrete(x), *_plain(shape))
            target.append(have)
            out_vax.append(cur)
        else:
            target.append(want)
            out_vax.append(None)
    return make(tensor_class().expand(phys, *target), out_vax)


def reshape(x: Any, shape: tuple) -> Any:
    """``x.reshape(*shape)`` for a tensor with one variable axis: the static axes before it regroup among
    themselves, the variable axis keeps its place, merged with or split from the static axes after it
    (its size in ``shape`` the matching bound expression, or ``-1``); anything else goes by value."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    phys, vax = _parts(x)
    axes = [i for i, v in enumerate(vax) if v is not None]
    if not axes or not shape or _grad(x):
        return tensor_class().reshape(concrete(x), *_plain(shape))
    if len(axes) > 1:
        return _regroup_leading(x, phys, vax, axes[0], shape)
    i, vd = axes[0], vax[axes[0]]
    at = [j for j, s in enumerate(shape) if type(s) in BOUND or (type(s) is int and s == -1)]  # no value read
    static = [s for j, s in enumerate(shape) if j not in at]
    if len(at) != 1 or any(not isinstance(s, int) or type(s) in BOUND or s < 0 for s in static):
        return tensor_class().reshape(concrete(x), *_plain(shape))
    j = at[0]
    before, rest = shape[:j], shape[j + 1:]
    if math.prod(before) != math.prod(phys.shape[:i]):
        return tensor_class().reshape(concrete(x), *_plain(shape))
    inner, k = math.prod(phys.shape[i + 1:]), math.prod(rest)
    if type(shape[j]) is int:  # -1
        out = vd.scaled(inner // k) if k and inner % k == 0 else None
    else:
        out = _regrouped(vd, _dim_of(shape[j], 0), phys.shape[i], inner, k)
    if out is None:
        return tensor_class().reshape(concrete(x), *_plain(shape))
    return make(phys.reshape(*before, out.phys, *rest), [None] * len(before) + [out] + [None] * len(rest))


def _regroup_leading(x: Any, phys: Any, vax: tuple, i: int, shape: tuple) -> Any:
    """A reshape of a tensor with several variable axes that regroups only the static axes before the
    first of them (``(8, t, t) <-> (2, 4, t, t)``); anything else goes by value."""
    tail = len(vax) - i
    before, after = shape[:len(shape) - tail], shape[len(shape) - tail:]
    same_tail = len(shape) >= tail and all(
        (vd.same(_dim_of(s, 0)) if type(s) in BOUND else False) if vd is not None
        else (type(s) is int and s == phys.shape[i + k])
        for k, (vd, s) in enumerate(zip(vax[i:], after)))
    if not same_tail or any(type(s) is not int or s < 0 for s in before) or \
            math.prod(before) != math.prod(phys.shape[:i]):
        return tensor_class().reshape(concrete(x), *_plain(shape))
    return make(phys.reshape(*before, *phys.shape[i:]), [None] * len(before) + list(vax[i:]))


def _regrouped(vd: VDim, target: VDim, phys0: int, inner: int, k: int) -> VDim | None:
    """The first axis ``vd`` (physical extent ``phys0``, ``inner`` static elements after it) regrouped so
    that ``k`` static elements follow it, when that makes it ``target``: merged with the axes after it
    (``inner = m * k``: rows of ``m``) or split (``k = f * inner``: every ``f`` rows one); else None."""
    if k and inner % k == 0:
        out = vd.scaled(inner // k)
    elif inner and k % inner == 0 and phys0 % (k // inner) == 0:
        f = k // inner
        if vd.const % f or any(c % f for _, c in vd.terms):
            return None
        out = VDim(tuple((v, c // f) for v, c in vd.terms), vd.const // f, phys0 // f, vd.values)
    else:
        return None
    return out if out.same(target) else None


def pad(x: Any, pads: tuple, value: Any) -> Any:
    """Constant ``pad`` where amounts may be bound variables (non-negative) or ``x`` has variable axes."""
    if len(pads) % 2 or len(pads) // 2 > x.ndim:
        raise ShapeError(f"pad: expected an even number of pad amounts for at most {x.ndim} dims, got {pads}")
    if _grad(x):
        return tensor_class().pad(concrete(x), _plain(tuple(pads)), "constant", value)
    phys, vax = _parts(x)
    vax = list(vax)
    per_dim = [(0, 0)] * phys.ndim
    for i in range(len(pads) // 2):
        per_dim[phys.ndim - 1 - i] = (pads[2 * i], pads[2 * i + 1])
    for d, (lo, hi) in enumerate(per_dim):
        lo_e, hi_e = VDim.of(lo), VDim.of(hi)
        if _lo_hi(lo_e)[0] < 0 or _lo_hi(hi_e)[0] < 0:
            return tensor_class().pad(concrete(x), _plain(tuple(pads)), "constant", value)
        if not lo_e[0] and not hi_e[0] and vax[d] is None:
            if lo_e[1] or hi_e[1]:
                widths = [0, 0] * (phys.ndim - 1 - d) + [lo_e[1], hi_e[1]]
                phys = tensor_class().pad(phys, tuple(widths), "constant", value)
            continue
        cur = vax[d]
        size = phys.shape[d]
        n_in = ((cur.terms, cur.const, cur.values) if cur is not None else ((), size, {}))
        total = _add(_add(n_in, lo_e), hi_e)
        p_out = max(_lo_hi(total)[1], 0)
        rows = phys.numel() // max(size, 1)
        if _too_big((p_out * rows,), VDim(total[0], total[1], p_out, total[2]).value * rows):
            return tensor_class().pad(concrete(x), _plain(tuple(pads)), "constant", value)
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
    return int(x) if type(x) in BOUND else x


# ------------------------------------------------------------------ the methods of VarTensor

def _permute(x: Any, *dims: Any) -> Any:
    order = tuple(dims[0]) if len(dims) == 1 and isinstance(dims[0], (tuple, list)) else dims
    phys = x.phys().permute(*order)
    return make(phys, [x._vax[normalize_dim(d, x.ndim)] for d in order])


def _transpose(x: Any, d0: int, d1: int) -> Any:
    a, b = normalize_dim(d0, x.ndim), normalize_dim(d1, x.ndim)
    order = list(range(x.ndim))
    order[a], order[b] = order[b], order[a]
    return _permute(x, *order)


def _shape_args(shape: tuple) -> tuple:
    return tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape


class VarMovementMixin(TensorBase):
    """The movement methods of a tensor of variable size: its variable axes move with its physical ones."""

    __slots__ = ()

    def permute(self, *dims: Any) -> Any:
        return _permute(self, *dims)

    def transpose(self, dim0: int, dim1: int) -> Any:
        return _transpose(self, dim0, dim1)

    swapaxes = swapdims = transpose

    @property
    def T(self) -> Any:  # PyTorch's name
        return _permute(self, *reversed(range(self.ndim)))

    @property
    def mT(self) -> Any:  # PyTorch's name
        return _transpose(self, -1, -2)

    def unsqueeze(self, dim: int) -> Any:
        d = normalize_dim(dim, self.ndim + 1)
        vax = list(self._vax)
        vax.insert(d, None)
        return make(self.phys().unsqueeze(d), vax)

    def squeeze(self, dim: Any = None) -> Any:
        dims = range(self.ndim) if dim is None else ((dim,) if isinstance(dim, int) else dim)
        dims = tuple(normalize_dim(d, self.ndim) for d in dims)
        drop = tuple(d for d in dims if self._vax[d] is None and self._pview.shape[d] == 1)
        if dim is not None and any(self._vax[d] is not None for d in dims):
            return tensor_class().squeeze(concrete(self), dim)  # a variable size that may be 1: by value
        return make(self.phys().squeeze(drop), [v for d, v in enumerate(self._vax) if d not in drop])

    def narrow(self, dim: int, start: Any, length: Any) -> Any:
        return narrow(self, dim, start, length)

    def expand(self, *shape: Any) -> Any:
        return expand(self, _shape_args(shape))

    broadcast_to = expand

    def reshape(self, *shape: Any) -> Any:
        return reshape(self, shape)

    view = reshape

    def pad(self, pads: Any, mode: Any = "constant", value: Any = None) -> Any:
        if mode == "constant" and not isinstance(mode, float):
            return pad(self, tuple(pads), 0 if value is None else value)
        return tensor_class().pad(concrete(self), _plain(pads), mode, value)

    def __getitem__(self, index: Any) -> Any:
        return getitem(self, index)


# ------------------------------------------------------------------ the entry points of Tensor

def _bound_in(shape: tuple) -> bool:
    """Whether a shape argument holds a bound ``zyx.Variable`` (a plain loop: every reshape asks)."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    for s in shape:
        if type(s) in BOUND:
            return True
    return False


def _bound_slice(index: Any) -> bool:
    """Whether a basic index slices by a bound ``zyx.Variable``."""
    if type(index) is slice:
        return type(index.start) in BOUND or type(index.stop) in BOUND
    return type(index) is tuple and any(type(i) is slice and (type(i.start) in BOUND or type(i.stop) in BOUND)
                                        for i in index)


class VarEntryMixin(TensorBase):
    """Where a static tensor meets a bound ``zyx.Variable`` as a size or start: ``reshape``/``expand`` to
    one, ``narrow`` and slices by one, ``pad`` by one give a tensor of variable size (one kernel for the
    variable's range); every other call goes on to the movement methods (next in ``Tensor``'s bases)."""

    __slots__ = ()

    def reshape(self, *shape: Any) -> Any:
        if _bound_in(shape):
            try:
                infer_shape(shape_arg(shape, variables=True), self.numel(), self.shape)
            except ShapeError:
                return reshape(self, shape)
        return super().reshape(*shape)  # type: ignore[misc]

    def expand(self, *shape: Any) -> Any:
        if _bound_in(shape):
            try:
                shape_arg(shape, variables=True)
            except ShapeError:
                return expand(self, _shape_args(shape))
        return super().expand(*shape)  # type: ignore[misc]

    def narrow(self, dim: int, start: Any, length: Any) -> Any:
        if type(start) in BOUND or type(length) in BOUND:
            return narrow(self, dim, start, length)
        return super().narrow(dim, start, length)  # type: ignore[misc]

    def __getitem__(self, index: Any) -> Any:
        if _bound_slice(index):
            return getitem(self, index)
        return super().__getitem__(index)  # type: ignore[misc]

    def _variable_pad(self, pads: tuple, value: Any) -> Any:
        """Constant ``pad`` by amounts holding a bound variable (``movement.pad`` hands them here)."""
        return pad(self, pads, value)

    @staticmethod
    def _variable_arange(start: Any, stop: Any, step: Any, dtype: Any, device: Any) -> Any:
        """``arange`` to a bound variable (``creation.arange`` hands it here)."""
        return arange(start, stop, step, dtype, device)
