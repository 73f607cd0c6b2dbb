"""The compute ops of variable sizes (``frontend.varsize``): elementwise ops and ``where`` over
variable axes, reductions masked by the reduce's identity past the bound, ``softmax``/``log_softmax``
and ``@``/``matmul`` with a variable contraction; the bound reaches each kernel as an argument. A case
without a variable form goes by value. ``VarElementwiseMixin`` and ``VarComputeMixin`` are their
methods of ``VarTensor``."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from zyx import dtype as dtypes
from zyx.frontend.base import TensorBase, concrete, tensor_class
from zyx.frontend.elementwise import where as _where
from zyx.frontend.reduce import matmul as _mm
from zyx.frontend.varsize import (
    BV,
    Tensor,
    VDim,
    _below,
    _iota,
    _Lin,
    _parts,
    _tensor,
    make,
    mask,
)
from zyx.ir.variable import VariableArg
from zyx.ir.view import normalize_dim

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
    def method(self: Any, *args: Any, **kw: Any) -> Any:
        return elementwise(getattr(tensor_class(), name), self, *args, **kw)

    method.__name__ = name
    return method


#: the elementwise methods of ``VarTensor``: each runs ``Tensor``'s own on the physical operands. Built
#: from the name lists (``__hash__`` kept: a class defining ``__eq__`` would otherwise lose it).
VarElementwiseMixin = type("VarElementwiseMixin", (TensorBase,), {
    "__slots__": (), "__hash__": object.__hash__, "__module__": __name__,
    "__doc__": "The elementwise methods of a tensor of variable size (``elementwise``).",
    **{n: _wrap(n) for n in _BINARY + _UNARY}})


def where(cond: Any, a: Any, b: Any) -> Any:
    """``zyx.where`` over operands with variable axes."""
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
    base = getattr(tensor_class(), name)
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
        out = tensor_class().sum(work, dim, keepdim, dtype=wide)
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
    base = getattr(tensor_class(), name)
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
    prod = pa.unsqueeze(-2) * pb.transpose(-1, -2).unsqueeze(-3)  # (..., n, m, k)
    keep = _below(_iota(prod.shape[-1], prod.ndim - 1, prod.ndim, prod.device).expand(prod.shape), vd)
    return _where(keep, prod, 0.0).sum(-1)


class _Shape:
    """A stand-in with a shape for ``_broadcast`` (batch dims only)."""

    def __init__(self, shape: tuple) -> None:
        self.shape = shape
        self.ndim = len(shape)

    def narrow(self, j: int, start: int, n: int) -> _Shape:
        return _Shape(self.shape[:j] + (n,) + self.shape[j + 1:])


# ------------------------------------------------------------------ the methods of VarTensor

class VarComputeMixin(TensorBase):
    """The reductions, softmax and matmul of a tensor of variable size (masked past each bound); the
    staticmethods are the variable forms that ``zyx.where`` and ``zyx.matmul`` hand such operands to."""

    __slots__ = ()

    def sum(self, dim: Any = None, keepdim: bool = False, **kw: Any) -> Any:
        return reduction("sum", self, dim, keepdim, **kw)

    def mean(self, dim: Any = None, keepdim: bool = False, **kw: Any) -> Any:
        return reduction("mean", self, dim, keepdim, **kw)

    def prod(self, dim: Any = None, keepdim: bool = False, **kw: Any) -> Any:
        return reduction("prod", self, dim, keepdim, **kw)

    def max(self, dim: Any = None, keepdim: bool = False, **kw: Any) -> Any:
        return reduction("max", self, dim, keepdim, **kw)

    def min(self, dim: Any = None, keepdim: bool = False, **kw: Any) -> Any:
        return reduction("min", self, dim, keepdim, **kw)

    def amax(self, dim: Any = None, keepdim: bool = False, **kw: Any) -> Any:
        return reduction("amax", self, dim, keepdim, **kw)

    def amin(self, dim: Any = None, keepdim: bool = False, **kw: Any) -> Any:
        return reduction("amin", self, dim, keepdim, **kw)

    def argmax(self, dim: Any = None, keepdim: bool = False, **kw: Any) -> Any:
        return reduction("argmax", self, dim, keepdim, **kw)

    def argmin(self, dim: Any = None, keepdim: bool = False, **kw: Any) -> Any:
        return reduction("argmin", self, dim, keepdim, **kw)

    def any(self, dim: Any = None, keepdim: bool = False, **kw: Any) -> Any:
        return reduction("any", self, dim, keepdim, **kw)

    def all(self, dim: Any = None, keepdim: bool = False, **kw: Any) -> Any:
        return reduction("all", self, dim, keepdim, **kw)

    def logsumexp(self, dim: Any = None, keepdim: bool = False, **kw: Any) -> Any:
        return reduction("logsumexp", self, dim, keepdim, **kw)

    def softmax(self, dim: int = -1) -> Any:
        return softmax("softmax", self, dim)

    def log_softmax(self, dim: int = -1) -> Any:
        return softmax("log_softmax", self, dim)

    def matmul(self, other: Any) -> Any:
        return matmul(self, other)

    def __matmul__(self, other: Any) -> Any:
        return matmul(self, other)

    def __rmatmul__(self, other: Any) -> Any:
        return matmul(other, self)

    @staticmethod
    def _variable_where(cond: Any, a: Any, b: Any) -> Any:
        return where(cond, a, b)

    @staticmethod
    def _variable_matmul(a: Any, b: Any) -> Any:
        return matmul(a, b)
