"""softmax and log_softmax (``zyx.nn.functional`` re-exports them) and ``SoftmaxMixin``.

Composed from lazy elementwise ops and reductions, so over the last dim each is one row kernel.
"""
from __future__ import annotations

import warnings
from typing import Any

from zyx import dtype as dtypes
from zyx.frontend import reduce as R
from zyx.frontend.base import VARSIZE, TensorBase
from zyx.frontend.elementwise import unary
from zyx.ir.view import normalize_dim
from zyx.op import Op


def float_work(x: Any):
    """Compute 16-bit floats in float32 (returns the working tensor and the dtype to give back)."""
    if x.dtype.is_float and x.dtype.itemsize >= 4:
        return x, x.dtype
    if not x.dtype.is_float:
        return x.cast(dtypes.float32), dtypes.float32
    return x.cast(dtypes.float32), x.dtype


def _as_dtype(x: Any, dtype: Any):
    """PyTorch's ``dtype=`` argument of the softmax family: the input is cast to it first."""
    return x if dtype is None else x.cast(dtypes.to_dtype(dtype))


def implicit_dim(name: str, ndim: int, stacklevel: int = 3) -> int:
    """PyTorch's deprecated choice when the softmax family gets no ``dim``: 0 for 0-, 1- and 3-D inputs,
    else 1, with its UserWarning (``stacklevel`` points the warning at the caller's line)."""
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X "
                  "as an argument.", stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(x: Any, dim: int | None = None, dtype: Any = None, *, _stacklevel: int = 3):
    """``exp(x - max) * (1 / sum(exp(x - max)))`` along ``dim`` (one reciprocal per row, as PyTorch does);
    ``dtype`` casts the input first. Without ``dim``, PyTorch's deprecated implicit choice (``implicit_dim``)."""
    if dim is None:
        dim = implicit_dim("softmax", x.ndim, _stacklevel)
    x = _as_dtype(x, dtype)
    if type(x) in VARSIZE:  # a variable size (frontend.varsize): its masked form
        return x.softmax(dim)
    w, out_dt = float_work(x)
    if w.ndim == 0:
        normalize_dim(dim, 0)
        return (w - w + 1.0).cast(out_dt)
    d = normalize_dim(dim, w.ndim)
    m = R.reduce(w, Op.MAX, d, keepdim=True).detach()  # the shift cancels: no gradient through the max
    e = unary(Op.EXP, w - m)
    s = R.reduce(e, Op.SUM, d, keepdim=True)
    out = e * unary(Op.RECIPROCAL, s)
    return out.cast(out_dt)


def log_softmax(x: Any, dim: int | None = None, dtype: Any = None, *, _stacklevel: int = 3):
    """``x - max - log(sum(exp(x - max)))`` along ``dim``; ``dtype`` casts the input first. Without ``dim``,
    PyTorch's deprecated implicit choice (``implicit_dim``)."""
    if dim is None:
        dim = implicit_dim("log_softmax", x.ndim, _stacklevel)
    x = _as_dtype(x, dtype)
    if type(x) in VARSIZE:
        return x.log_softmax(dim)
    w, out_dt = float_work(x)
    if w.ndim == 0:
        normalize_dim(dim, 0)
        return (w - w).cast(out_dt)
    d = normalize_dim(dim, w.ndim)
    m = R.reduce(w, Op.MAX, d, keepdim=True).detach()  # the shift cancels: no gradient through the max
    z = w - m
    s = R.reduce(unary(Op.EXP, z), Op.SUM, d, keepdim=True)
    out = z - unary(Op.LOG, s)
    return out.cast(out_dt)


def softmin(x: Any, dim: int | None = None, dtype: Any = None, *, _stacklevel: int = 3):
    """``softmax(-x)`` along ``dim``, as ``torch.nn.functional.softmin`` (without ``dim``, PyTorch's deprecated
    implicit choice)."""
    if dim is None:
        dim = implicit_dim("softmin", x.ndim, _stacklevel)
    return softmax(-_as_dtype(x, dtype), dim)


class SoftmaxMixin(TensorBase):
    """The nn-style methods of ``Tensor``: ``x.softmax(dim)``, ``x.log_softmax(dim)``."""

    __slots__ = ()

    def softmax(self, dim: int = -1, dtype: Any = None) -> Any:
        return softmax(self, dim, dtype)

    def log_softmax(self, dim: int = -1, dtype: Any = None) -> Any:
        return log_softmax(self, dim, dtype)
