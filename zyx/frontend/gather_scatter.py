"""Gather and scatter (API.md "Advanced indexing, gather and scatter"): ``gather``, ``index_select``,
``take_along_dim``, ``masked_select``, ``nonzero`` and the ``scatter*`` family, each one indexed access
(``index_access``)."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from zyx import dtype as dtypes
from zyx.backend import errorflags
from zyx.errors import AutogradError, DTypeError, IndexOutOfRange, OpDTypeError, ShapeError
from zyx.frontend.advanced_index import getitem
from zyx.frontend.autograd import engine as autograd
from zyx.frontend.autograd.engine import check_not_view_of_leaf, needs_grad, no_grad
from zyx.frontend.base import TensorBase, check_writable
from zyx.frontend.creation import full_like, ones_like, tensor, zeros_like
from zyx.frontend.elementwise import broadcast_shapes, where
from zyx.frontend.index_access import Access, check_not_expanded, dim_access, int_index, read, write, write_inplace
from zyx.ir.view import normalize_dim

REDUCE_NAMES = {"sum": "add", "prod": "mul", "mean": "add", "amax": "max", "amin": "min"}

# ---------------------------------------------------------------- gather / scatter family


def gather(x: Any, dim: int, index: Any) -> Any:
    """``out[i][j][k] = x[index[i][j][k]][j][k]`` (for ``dim == 0``): values along ``dim`` picked by
    ``index`` (same rank as ``x``, no larger off ``dim``)."""
    if x.ndim == 0:
        return gather(x.reshape(1), 0, index.reshape(1)).reshape(index.shape)
    return read(dim_access(x, dim, index, "gather"))


def index_select(x: Any, dim: int, index: Any) -> Any:
    """The entries ``index`` (1-D or 0-D) of ``dim``."""
    int_index(index, "index_select")
    if index.ndim > 1:  # an IndexError in PyTorch
        raise IndexOutOfRange(f"index_select: index must be 1-D or 0-D, got {index.ndim} dims")
    if x.ndim == 0:
        if index.numel() != 1:
            raise IndexOutOfRange(f"index_select: a 0-d tensor takes exactly one index (0), got {index.numel()}")
        return index_select(x.reshape(1), 0, index).reshape(())  # 0-d, as PyTorch
    d = normalize_dim(dim, x.ndim)
    index = index.reshape(-1)
    shape = x.shape[:d] + (index.shape[0],) + x.shape[d + 1:]
    axes = tuple(~0 if a == d else a for a in range(x.ndim))
    return read(Access(x, shape, axes, [index], ((d,),), False))


def take_along_dim(x: Any, indices: Any, dim: int | None = None) -> Any:
    """``gather`` after broadcasting ``x`` and ``indices`` off ``dim`` (``dim=None``: both flattened)."""
    int_index(indices, "take_along_dim")
    if dim is None:
        return gather(x.reshape(-1), 0, indices.reshape(-1))
    if x.ndim != indices.ndim:
        raise ShapeError(f"take_along_dim: input and indices should have the same number of dimensions, "
                         f"got {x.ndim} and {indices.ndim}")
    if x.ndim == 0:
        return gather(x, 0, indices)
    d = normalize_dim(dim, x.ndim)
    xs, js = list(x.shape), list(indices.shape)
    xs[d] = js[d] = 1
    common = list(broadcast_shapes(xs, js))
    x = x.expand(*common[:d], x.shape[d], *common[d + 1:])
    indices = indices.expand(*common[:d], indices.shape[d], *common[d + 1:])
    return gather(x, d, indices)


def masked_select(x: Any, mask: Any) -> Any:
    """The elements of ``x`` where the bool ``mask`` (broadcast together) is True, as a 1-D tensor."""
    if not mask.dtype.is_bool:
        raise DTypeError(f"masked_select: expected a bool mask, got {mask.dtype.name}")
    shape = broadcast_shapes(x.shape, mask.shape)
    xb, mb = x.expand(*shape), mask.expand(*shape)
    if not shape:
        xb, mb = xb.reshape(1), mb.reshape(1)
    return getitem(xb, mb)


def nonzero(x: Any, as_tuple: bool = False) -> Any:
    """The coordinates of the non-zero elements, row-major: an ``(n, ndim)`` int64 tensor, or one 1-D
    tensor per dim with ``as_tuple`` (the values are read back: ``n`` decides the shape)."""
    arr = x.numpy()
    if as_tuple:
        if arr.ndim == 0:
            return (tensor(np.zeros(int(arr != 0), np.int64), device=x.device),)
        return tuple(tensor(c.astype(np.int64), device=x.device) for c in np.nonzero(arr != 0))
    found = np.argwhere(arr != 0).astype(np.int64)
    return tensor(found.reshape(found.shape[0], arr.ndim), device=x.device)


def _src_view(src: Any, index: Any) -> Any:
    """``src`` read at the points of ``index`` (PyTorch: src no smaller than index on every dim)."""
    if src.ndim != index.ndim:
        raise ShapeError(f"scatter: index has {index.ndim} dims but src has {src.ndim} (expected the same number)")
    for a, (i, s) in enumerate(zip(index.shape, src.shape)):
        if i > s:
            raise ShapeError(f"scatter: expected index {list(index.shape)} to be no larger than src "
                             f"{list(src.shape)} (dimension {a})")
    if tuple(src.shape) == tuple(index.shape):
        return src
    return src[tuple(slice(0, i) for i in index.shape)]


def _pad_to(g: Any, shape: tuple[int, ...]) -> Any:
    """``g`` zero-padded at the end of each dim to ``shape`` (a src larger than its index)."""
    if tuple(g.shape) == tuple(shape):
        return g
    pads: list[int] = []
    for d, s in zip(reversed(g.shape), reversed(shape)):
        pads += [0, s - d]
    return g.pad(pads)


def _wide_accumulate(dtype: Any, reduce: str) -> bool:
    """Whether a scatter of ``dtype`` combines in float32: a sum or product of 16-bit (or narrower)
    floats, which PyTorch's CPU scatter family accumulates in float32 and rounds once per element."""
    return reduce in ("add", "mul") and dtype.is_float and dtype.itemsize < 4


def _scatter_op(x: Any, dim: int, index: Any, src: Any, reduce: str, what: str) -> Any:
    """The out-of-place scatter of ``src`` (tensor or scalar) with ``reduce`` into a copy of ``x``."""
    if _wide_accumulate(x.dtype, reduce):
        if isinstance(src, TensorBase) and src.dtype is not x.dtype:
            raise OpDTypeError(f"{what}: expected self and src of the same dtype, got {x.dtype.name} and "
                               f"{src.dtype.name}")
        # a scalar is rounded to x's dtype first, as PyTorch converts it
        wide = src.cast(dtypes.float32) if isinstance(src, TensorBase) else float(np.asarray(src, x.dtype.numpy))
        return _scatter_op(x.cast(dtypes.float32), dim, index, wide, reduce, what).cast(x.dtype)
    if x.ndim == 0:
        src1 = src.reshape(1) if isinstance(src, TensorBase) else src
        return _scatter_op(x.reshape(1), 0, index.reshape(1), src1, reduce, what).reshape(())
    acc = dim_access(x, dim, index, what)
    if isinstance(src, TensorBase):
        if src.dtype is not x.dtype:
            raise OpDTypeError(f"{what}: expected self and src of the same dtype, got {x.dtype.name} and "
                             f"{src.dtype.name}")
        src = _src_view(src, index)
    return write(acc, src, reduce)


def _gather_grad(g: Any, dim: int, index: Any, src_shape: tuple[int, ...]) -> Any:
    if g.ndim == 0:
        return g.reshape(1).gather(0, index.reshape(1)).reshape(src_shape)
    return _pad_to(gather(g, dim, index), src_shape)


def scatter(x: Any, dim: int, index: Any, src: Any = None, value: Any = None, reduce: str | None = None) -> Any:
    """A copy of ``x`` with ``src[i][j]`` (or the scalar ``value``) written at ``[index[i][j]][j]``
    (``dim == 0``); duplicates: one of the written values wins. ``reduce``: ``"add"`` or
    ``"multiply"`` combine instead (PyTorch's older form)."""
    if src is None:
        src = value
    if src is None:
        raise ShapeError("scatter: expected src or value")
    op = {None: "assign", "add": "add", "multiply": "mul"}.get(reduce)
    if op is None:
        raise ShapeError(f"scatter: reduce must be 'add' or 'multiply', got {reduce!r}")
    is_t = isinstance(src, TensorBase)
    if not needs_grad(x, src if is_t else None):
        return _scatter_op(x, dim, index, src, op, "scatter")
    if op == "mul":  # the same values as scatter_reduce's "prod" with self included, and its gradient
        if not is_t:
            src = full_like(index, src, dtype=x.dtype)
        return scatter_reduce(x, dim, index, src, "prod", True)
    with no_grad():
        out = _scatter_op(x, dim, index, src, op, "scatter")
    idx = index.detach()
    src_shape = tuple(src.shape) if is_t else None

    def fn(g: Any) -> tuple:
        gx = g if op == "add" else g.scatter(dim, idx, 0.0)
        gs = _gather_grad(g, dim, idx, src_shape) if is_t else None
        return gx, gs

    return autograd.record("scatter", out, [x, src if is_t else None], fn)


def scatter_add(x: Any, dim: int, index: Any, src: Any) -> Any:
    """A copy of ``x`` with ``src[i][j]`` added at ``[index[i][j]][j]`` (``dim == 0``), every duplicate
    index adding."""
    return scatter_reduce(x, dim, index, src, "sum", True)


def scatter_inplace(x: Any, dim: int, index: Any, src: Any, op: str, what: str) -> Any:
    """``scatter_``/``scatter_add_``: the write of ``scatter``/``scatter_add`` into ``x``'s own storage
    (every index checked first: a bad one writes nothing); returns ``x``."""
    check_writable(x, what)
    is_t = isinstance(src, TensorBase)
    if needs_grad(x, src if is_t else None):
        if x._ag is not None and x._ag.grad_fn is None:
            raise AutogradError(f"a leaf tensor that requires grad is written in place ({what}); write under "
                                "zyx.no_grad(), or into a clone")
        check_not_view_of_leaf(x)
        with no_grad():
            scatter_inplace(x, dim, index, src, op, what)
        idx, src_shape = index.detach(), tuple(src.shape) if is_t else None

        def fn(g: Any) -> tuple:
            gx = g if op == "add" else g.scatter(dim, idx, 0.0)
            return gx, (_gather_grad(g, dim, idx, src_shape) if is_t else None)

        return autograd.record(what, x, [x, src if is_t else None], fn)
    if _wide_accumulate(x.dtype, op):
        # float32 accumulation (PyTorch's), computed aside and its index errors raised (one sync)
        # before anything is written into x
        check_not_expanded(x, what)
        out = _scatter_op(x, dim, index, src, op, what).realize()
        errorflags.check(x.device)
        x[...] = out
        return x
    if x.ndim == 0:
        flat = x.reshape(1)
        scatter_inplace(flat, 0, index.reshape(1), src.reshape(1) if is_t else src, op, what)
        return x
    acc = dim_access(x, dim, index, what)
    if is_t:
        if src.dtype is not x.dtype:
            raise OpDTypeError(f"{what}: expected self and src of the same dtype, got {x.dtype.name} and "
                             f"{src.dtype.name}")
        src = _src_view(src, index)
    write_inplace(acc, src, op, what)
    return x


def _identity(op: str, dtype: Any) -> Any:
    """The neutral element of ``op`` in ``dtype`` (written before an ``include_self=False`` reduce)."""
    if op == "add":
        return 0
    if op == "mul":
        return 1
    if dtype.is_bool:
        return op == "min"
    if dtype.is_float:
        return -math.inf if op == "max" else math.inf
    info = np.iinfo(dtype.numpy)
    return int(info.min) if op == "max" else int(info.max)


def _counts(x: Any, dim: int, index: Any, src: Any, include_self: bool, dtype: Any) -> Any:
    """How many values each element of a mean reduces (itself when ``include_self``), at least 1."""
    start = ones_like(x, dtype=dtype) if include_self else zeros_like(x, dtype=dtype)
    n = _scatter_op(start, dim, index, ones_like(_src_view(src, index), dtype=dtype), "add", "scatter_reduce")
    return n if include_self else where(n == 0, 1, n)


def _scatter_reduce_values(x: Any, dim: int, index: Any, src: Any, reduce: str, include_self: bool) -> Any:
    op = REDUCE_NAMES[reduce]
    base = x if include_self else _scatter_op(x, dim, index, _identity(op, x.dtype), "assign", "scatter_reduce")
    out = _scatter_op(base, dim, index, src, op, "scatter_reduce")
    if reduce != "mean":
        return out
    if x.dtype.is_float:
        return out / _counts(x, dim, index, src, include_self, x.dtype)
    n = _counts(x, dim, index, src, include_self, dtypes.int64)
    return (out.cast(dtypes.int64) // n).cast(x.dtype)  # PyTorch floors an integer mean


def _prod_grads(g: Any, xs: Any, dim: int, idx: Any, ss: Any, res: Any, include_self: bool) -> tuple[Any, Any]:
    """PyTorch's scatter_reduce "prod" gradients (self, and src at ``idx``'s shape): each value's
    gradient is the product of the others that met at its element, computed without dividing by a
    zero: a zero self is masked to 1 and the product redone; a src zero alone at its element gets
    the product of the rest, two or more zeros at one element give every src there 0."""
    sv = _src_view(ss, idx)
    masked_self = xs.masked_fill(xs == 0, 1)
    grad_self = g * _scatter_reduce_values(masked_self, dim, idx, sv, "prod", include_self) / masked_self
    src_zero = sv == 0
    zeros_at = _scatter_op(zeros_like(xs), dim, idx, src_zero.cast(xs.dtype), "add", "scatter_reduce")
    single = src_zero & (gather(zeros_at, dim, idx) == 1)
    masked_src_result = _scatter_reduce_values(xs, dim, idx, sv.masked_fill(single, 1), "prod", include_self)
    grad_src = where(single, gather(g * masked_src_result, dim, idx),
                     gather(g * res, dim, idx) / sv.masked_fill(src_zero, 1))
    return grad_self, grad_src


def scatter_reduce(x: Any, dim: int, index: Any, src: Any, reduce: str, include_self: bool = True) -> Any:
    """A copy of ``x`` with ``src`` reduced into it at ``index`` along ``dim``: ``"sum"``, ``"prod"``,
    ``"mean"``, ``"amax"``, ``"amin"`` (``include_self=False``: the old values of the elements written
    take no part)."""
    if reduce not in REDUCE_NAMES:
        raise ShapeError(f"scatter_reduce: reduce must be one of {sorted(REDUCE_NAMES)}, got {reduce!r}")
    if not isinstance(src, TensorBase):
        raise DTypeError(f"scatter_reduce: src must be a tensor, got {type(src).__name__}")
    if src.dtype is not x.dtype:
        raise OpDTypeError(f"scatter_reduce: expected self and src of the same dtype, got {x.dtype.name} and "
                         f"{src.dtype.name}")
    if not needs_grad(x, src):
        return _scatter_reduce_values(x, dim, index, src, reduce, include_self)
    with no_grad():
        out = _scatter_reduce_values(x, dim, index, src, reduce, include_self)
    idx, src_shape = index.detach(), tuple(src.shape)
    xs, ss, res = x.detach(), src.detach(), out.detach()

    def fn(g: Any) -> tuple:
        # PyTorch's rules (scatter_reduce_backward); include_self=False: no gradient to the old
        # values of the elements written
        if reduce == "sum":
            gx, gs = g, _gather_grad(g, dim, idx, src_shape)
        elif reduce == "mean":
            n = _counts(xs, dim, idx, ss, include_self, g.dtype)
            gx, gs = g / n, _gather_grad(g / n, dim, idx, src_shape)
        elif reduce == "prod":
            gx, gs = _prod_grads(g, xs, dim, idx, ss, res, include_self)
            gs = _pad_to(gs, src_shape)
        else:  # amax / amin: shared evenly by every element equal to the result
            self_hit = (xs == res).cast(g.dtype)
            src_hit = (_src_view(ss, idx) == gather(res, dim, idx)).cast(g.dtype)
            share = g / scatter_add(self_hit, dim, idx, src_hit)
            gx, gs = self_hit * share, _pad_to(src_hit * gather(share, dim, idx), src_shape)
        if not include_self:
            gx = gx.scatter(dim, idx, 0.0)
        return gx, gs

    return autograd.record("scatter_reduce", out, [x, src], fn)
