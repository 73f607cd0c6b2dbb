"""Reductions (API.md "Reductions") and matmul as a fused multiply-reduce.

A reduce records one lazy node (keepdim form; ``keepdim=False`` is a view on it).
Integer and bool sums/products accumulate in int64, 16/8-bit floats in float32 (the
result is rounded back to the input dtype, as PyTorch does). A long reduction with few outputs
runs in two stages (``ir.stages``: the heuristics decide per device when the kernel is built).
``ReduceMixin`` gives ``Tensor`` these functions as methods.
"""
from __future__ import annotations

import builtins
import math
from typing import Any

from zyx import dtype as dtypes
from zyx import graph, settings
from zyx.dtype import DType
from zyx.errors import DTypeError, ShapeError
from zyx.frontend.autograd.engine import is_grad_enabled, needs_grad, no_grad
from zyx.frontend.autograd.rules import record_matmul, record_reduce
from zyx.frontend.base import VARSIZE, TensorBase
from zyx.frontend.elementwise import binary, broadcast_shapes, from_node, unary, where
from zyx.ir.view import normalize_dim
from zyx.op import Op


def _dims(x: Any, dim: Any) -> tuple[int, ...]:
    if type(dim) is int:
        ndim = len(x._view.shape)
        if -ndim <= dim < ndim:  # fast path (normalize_dim handles the rest and its errors)
            return (dim % ndim,)
    if dim is None:
        return tuple(range(x.ndim))
    if isinstance(dim, (list, tuple)):
        dims = tuple(normalize_dim(d, x.ndim) for d in dim)
        if len(set(dims)) != len(dims):
            raise ShapeError(f"dim {tuple(dim)} names a dimension twice")
        return tuple(sorted(dims)) if dims else tuple(range(x.ndim))
    return (normalize_dim(dim, x.ndim),)


def _acc_dtype(op: str, d: DType) -> DType:
    if op in (Op.SUM, Op.PROD):
        if d.is_bool or d.is_int:
            return dtypes.int64
        if d.itemsize < 4:
            return dtypes.float32
    return d


def _finish(node: graph.LazyNode, x: Any, dims: tuple[int, ...], keepdim: bool):
    out = from_node(node)
    if not keepdim:
        out = out.reshape(tuple(d for i, d in enumerate(x.shape) if i not in dims))
    return out


def reduce(x: Any, op: str, dim: Any = None, keepdim: bool = False, acc: DType | None = None):
    """``op`` (sum/prod/max/min) over ``dim``; returns the accumulator dtype (callers cast)."""
    if x._ag is not None and is_grad_enabled():
        with no_grad():
            out = reduce(x, op, dim, keepdim, acc)
        if out is x:  # a 0-d input is its own reduction: a new tensor, else it reads as written in place
            out = from_node(graph.copy(graph.Src(x._data, x._view, x._dtype), (), x.device))
        record_reduce(op, x, _dims(x, dim) if x.ndim else (), keepdim, out)
        return out
    if dim is None and acc is None:
        full = _full(x, op, keepdim)
        if full is not None:
            return full
    dims = _dims(x, dim)
    acc = acc or _acc_dtype(op, x._dtype)
    shape = x._view.shape
    if not shape:
        return x.cast(acc)
    src = x.cast(acc)
    node = graph.reduce(op, graph.Src(src._data, src._view, acc), dims, acc, x.device)
    return _finish(node, x, dims, keepdim)


def _full(x: Any, op: str, keepdim: bool):
    """A full reduction (``x.sum()``) whose input needs no cast, as one reduce node straight from its view,
    no Tensor views around it: its Python runs before the first launch on every call, right after the
    previous kernel streamed the caches empty, where each step costs several times its warm price. None
    for the general path."""
    view = x._view
    if not view.shape or _acc_dtype(op, x._dtype) is not x._dtype:
        return None
    ones = (1,) * len(view.shape)
    node = graph.reduce(op, graph.Src(x._data, view, x._dtype), tuple(range(len(ones))), x._dtype, x._device, ones)
    return from_node(node, ones if keepdim else ())


def _tensor(x: Any, name: str) -> None:
    """The module functions (``zyx.sum``...) take a Tensor; anything else is a DTypeError."""
    if not isinstance(x, TensorBase):
        raise DTypeError(f"{name}(): expected a Tensor, got {type(x).__name__}")


def sum(x: Any, dim: Any = None, keepdim: bool = False, dtype: Any = None):  # noqa: A001 - PyTorch's name
    """Sum over ``dim`` (ints accumulate in int64; 16-bit floats in float32); a ``dtype`` casts the input
    first, as PyTorch."""
    _tensor(x, "sum")
    if dtype is not None:
        dtype = dtypes.to_dtype(dtype)
        x = x if x._dtype is dtype else x.cast(dtype)
        out = reduce(x, Op.SUM, dim, keepdim)
        return out if out._dtype is dtype else out.cast(dtype)
    out = reduce(x, Op.SUM, dim, keepdim)
    target = x._dtype if x._dtype.is_float else dtypes.int64
    return out if out._dtype is target else out.cast(target)


def prod(x: Any, dim: Any = None, keepdim: bool = False, dtype: Any = None):
    """Product over ``dim`` (ints give int64); a ``dtype`` casts the input first, as PyTorch."""
    _tensor(x, "prod")
    if dtype is not None:
        x = x.cast(dtypes.to_dtype(dtype))
    out = reduce(x, Op.PROD, dim, keepdim)
    target = x.dtype if x.dtype.is_float or dtype is not None else dtypes.int64
    return out.cast(target)


def mean(x: Any, dim: Any = None, keepdim: bool = False, dtype: Any = None):
    """Mean over ``dim`` (floating dtypes; a ``dtype`` casts the input first, as PyTorch)."""
    _tensor(x, "mean")
    if dtype is not None:
        x = x.cast(dtypes.to_dtype(dtype))
    if not x.dtype.is_float:
        raise DTypeError(f"mean(): expected a floating point tensor, got {x.dtype.name}")
    dims = _dims(x, dim)
    n = math.prod(x.shape[d] for d in dims) if x.ndim else 1
    s = reduce(x, Op.SUM, dim, keepdim)
    out = s / n if n else s * float("nan")
    return out.cast(x.dtype)


def max(x: Any, dim: Any = None, keepdim: bool = False):  # noqa: A001 - PyTorch's name
    _tensor(x, "max")
    _nonempty(x, dim, "max")
    return reduce(x, Op.MAX, dim, keepdim)


def min(x: Any, dim: Any = None, keepdim: bool = False):  # noqa: A001 - PyTorch's name
    _tensor(x, "min")
    _nonempty(x, dim, "min")
    return reduce(x, Op.MIN, dim, keepdim)


def _nonempty(x: Any, dim: Any, name: str) -> None:
    dims = _dims(x, dim)
    if x.ndim and builtins.any(x.shape[d] == 0 for d in dims):
        raise ShapeError(f"{name}(): cannot reduce over an empty dimension (shape {x.shape}, dim {dim}); "
                         "expected a non-empty reduction")


def _arg(x: Any, op: str, dim: Any, keepdim: bool):
    if x.dtype.is_bool:
        raise DTypeError(f"{op}(): does not support bool input (expected a numeric tensor; cast it first)")
    _nonempty(x, dim, op)
    if dim is None:
        flat = x.reshape(-1)
        node = graph.reduce(op, graph.Src(flat._data, flat._view, x.dtype), (0,), dtypes.int64, x.device)
        out = from_node(node)
        return out.reshape(()) if not keepdim else out.reshape((1,) * x.ndim)
    if x.ndim == 0:
        return from_node(graph.cast(graph.Src(None, None, dtypes.int64, 0), dtypes.int64, (), x.device))
    d = normalize_dim(dim, x.ndim)
    node = graph.reduce(op, graph.Src(x._data, x._view, x.dtype), (d,), dtypes.int64, x.device)
    return _finish(node, x, (d,), keepdim)


def argmax(x: Any, dim: Any = None, keepdim: bool = False):
    """int64 index of the first maximum (NaN counts as the maximum)."""
    _tensor(x, "argmax")
    return _arg(x, Op.ARGMAX, dim, keepdim)


def argmin(x: Any, dim: Any = None, keepdim: bool = False):
    """int64 index of the first minimum."""
    _tensor(x, "argmin")
    return _arg(x, Op.ARGMIN, dim, keepdim)


def var(x: Any, dim: Any = None, correction: int = 1, keepdim: bool = False, unbiased: Any = None):
    """Variance with Bessel's ``correction`` (computed in float32 for 16-bit inputs)."""
    _tensor(x, "var")
    if unbiased is not None:
        correction = 1 if unbiased else 0
    if not x.dtype.is_float:
        raise DTypeError(f"var(): expected a floating point tensor, got {x.dtype.name}")
    work = x if x.dtype.itemsize >= 4 else x.cast(dtypes.float32)
    dims = _dims(x, dim)
    n = math.prod(x.shape[d] for d in dims) if x.ndim else 1
    mu = mean(work, dim, keepdim=True)
    d = work - mu
    s = reduce(d * d, Op.SUM, dim, keepdim)
    # PyTorch divides by max(0, n - correction): a sum over too few elements gives inf (or nan for 0 / 0)
    out = s / float(n - correction if n - correction > 0 else 0)
    return out.cast(x.dtype)


def std(x: Any, dim: Any = None, correction: int = 1, keepdim: bool = False, unbiased: Any = None):
    _tensor(x, "std")
    return unary(Op.SQRT, var(x, dim, correction, keepdim, unbiased))


def var_mean(x: Any, dim: Any = None, correction: int = 1, keepdim: bool = False, unbiased: Any = None):
    """``(var, mean)`` over ``dim``, as ``torch.var_mean``."""
    return var(x, dim, correction, keepdim, unbiased), mean(x, dim, keepdim)


def std_mean(x: Any, dim: Any = None, correction: int = 1, keepdim: bool = False, unbiased: Any = None):
    """``(std, mean)`` over ``dim``, as ``torch.std_mean``."""
    return std(x, dim, correction, keepdim, unbiased), mean(x, dim, keepdim)


def logsumexp(x: Any, dim: Any = None, keepdim: bool = False):
    _tensor(x, "logsumexp")
    work = x if x.dtype.is_float and x.dtype.itemsize >= 4 else x.cast(dtypes.float32)
    m = reduce(work, Op.MAX, dim, keepdim=True).detach()  # the shift cancels: no gradient through the max
    m = where(unary(Op.ISINF, m), 0.0, m)
    s = reduce(unary(Op.EXP, work - m), Op.SUM, dim, keepdim=True)
    out = unary(Op.LOG, s) + m
    if not keepdim:
        dims = _dims(x, dim)
        out = out.reshape(tuple(d for i, d in enumerate(x.shape) if i not in dims))
    return out.cast(x.dtype) if x.dtype.is_float else out


def _logical(x: Any, op: str, dim: Any, keepdim: bool):
    """``any``/``all`` as PyTorch: bool results (uint8 for a uint8 input), and an empty ``dim`` list
    reduces nothing (unlike ``sum``, where it reduces every dim)."""
    b = x if x.dtype.is_bool else binary(Op.NE, x, 0)
    if isinstance(dim, (list, tuple)) and not dim:
        _dims(x, dim)
        out = b
    else:
        out = reduce(b, op, dim, keepdim)
    return out.cast(dtypes.uint8) if x.dtype is dtypes.uint8 else out


def any(x: Any, dim: Any = None, keepdim: bool = False):  # noqa: A001 - PyTorch's name
    """True where any element over ``dim`` is nonzero."""
    _tensor(x, "any")
    return _logical(x, Op.MAX, dim, keepdim)


def all(x: Any, dim: Any = None, keepdim: bool = False):  # noqa: A001 - PyTorch's name
    """True where every element over ``dim`` is nonzero."""
    _tensor(x, "all")
    return _logical(x, Op.MIN, dim, keepdim)


# ------------------------------------------------------------------ linear algebra

#: Products of at least this many multiply-adds (batch * n * k * m) copy a transposed operand
#: row-major first (below it the extra launch costs more than the gathers it saves).
TRANSPOSED_MIN = 1 << 25
#: A transposed right operand is copied from this many multiply-adds on, when both sides of the output have
#: ``RIGHT_COPY_SIDE`` or more (a row tile and a vector of columns): the register tile would gather a vector
#: of columns per reduce step from as many rows, for every row tile; with fewer columns or rows the kernel
#: takes dot products along the contiguous reduce instead (``opt.heuristics._dot_form``). A product with
#: fewer rows than that is never copied, however large: the copy reads and writes the whole operand while the
#: dot products read it once (a decode step's ``x @ W.T``).
RIGHT_COPY_MIN, RIGHT_COPY_SIDE = 1 << 21, 16
#: ...except a transposed left operand of a product with this many columns (conv2d's weight gradient
#: ``x.T @ g``): the register tile spans the columns and reads the view's rows contiguously, and the copy
#: costs more than it saves; with fewer columns (a matrix-vector-like product) the copy still pays
#: (bench/RESULTS.md "Tall-skinny matmuls")
LEFT_IN_PLACE_COLUMNS = (32, 64)
#: On a CPU, the copy of a transposed right operand whose rows would lie a multiple of ``PAD_PERIOD`` bytes apart
#: writes them ``PAD_BYTES`` further apart: rows a power of two bytes apart fall into the same few cache sets,
#: and the column panel a register tile walks down evicts itself (bench/bench_matmul_models.py's 1024-column
#: layers run ~1.2x faster padded).
PAD_PERIOD, PAD_BYTES = 2048, 64
#: ...and a right operand read in place with its rows a multiple of ``PAD_PERIOD`` bytes apart is copied so, for a
#: product of this many rows or more (the copy costs about as much as a product of 200 rows gains)
PAD_COPY_ROWS = 1024


def _pads(b: Any, row_bytes: int) -> bool:
    """Whether a right operand with rows ``row_bytes`` apart is better read from a padded copy."""
    return (row_bytes % PAD_PERIOD == 0 and PAD_BYTES % b.dtype.itemsize == 0
            and settings.heuristics_kind(b.device) == "cpu")


def _right_copy(b: Any) -> Any:
    """``b`` copied row-major, its rows padded where ``PAD_PERIOD`` says."""
    if not _pads(b, b.shape[-1] * b.dtype.itemsize):
        return b.contiguous()
    return b._contiguous_rows(b.shape[-1] + PAD_BYTES // b.dtype.itemsize)


def matmul(a: Any, b: Any):
    """Batched, broadcasting matrix product: one fused multiply-reduce kernel."""
    if type(a) in VARSIZE or type(b) in VARSIZE:  # a variable size (frontend.varsize): its masked form
        return (a if type(a) in VARSIZE else b)._variable_matmul(a, b)
    if not isinstance(a, TensorBase) or not isinstance(b, TensorBase):
        raise DTypeError("matmul expects two tensors")
    if a.ndim == 0 or b.ndim == 0:
        raise ShapeError(f"matmul: both arguments need at least 1 dimension, got shapes {a.shape} and {b.shape}")
    if needs_grad(a, b):
        with no_grad():
            out = matmul(a, b)
        record_matmul(a, b, out)
        return out
    va, vb = a.ndim == 1, b.ndim == 1
    if va:
        a = a.unsqueeze(0)
    if vb:
        b = b.unsqueeze(1)
    if a.shape[-1] != b.shape[-2]:
        raise ShapeError(f"matmul: shapes {a.shape} and {b.shape} cannot be multiplied "
                         f"({a.shape[-1]} != {b.shape[-2]})")
    dt = dtypes.result_type(a, b)
    batch = broadcast_shapes(a.shape[:-2], b.shape[:-2])
    n, k, m = a.shape[-2], a.shape[-1], b.shape[-1]
    # An operand stored transposed (F.linear's ``weight.T``: unit stride along k for the right
    # one, along n for the left one) makes the fused multiply-reduce gather, several times slower
    # than row-major operands; one tiled-transpose copy, cheap next to the product, makes it row-major.
    macs = math.prod(batch) * n * k * m
    if k > 1 and m > 1 and n >= RIGHT_COPY_SIDE and b.stride()[-2] == 1 and b.stride()[-1] != 1 and (
            macs >= TRANSPOSED_MIN or (macs >= RIGHT_COPY_MIN and m >= RIGHT_COPY_SIDE)):
        b = _right_copy(b)
    elif (n >= PAD_COPY_ROWS and macs >= TRANSPOSED_MIN and k > 1 and m > 1 and b.stride()[-1] == 1
          and _pads(b, b.stride()[-2] * b.dtype.itemsize)):
        b = _right_copy(b)
    if macs >= TRANSPOSED_MIN and k > 1:
        narrow = LEFT_IN_PLACE_COLUMNS[0] <= m <= LEFT_IN_PLACE_COLUMNS[1]
        if n > 1 and not narrow and a.stride()[-2] == 1 and a.stride()[-1] != 1:
            a = a.contiguous()
    acc = _acc_dtype(Op.SUM, dt)
    # 16/8-bit floats: the products are exact in the float32 accumulator and are not rounded
    # to the dtype one by one (as PyTorch: one rounding, of the sum)
    mul_dt = acc if dt.is_float and acc is not dt else dt
    aa = a.cast(mul_dt)
    bb = b.cast(mul_dt)
    # the operands broadcast to (*batch, n, m, k) as views, built on the View itself: no gradient is recorded
    # here (see above), and the Tensor methods' argument checks cost more than the product's recording
    nb, full = len(batch), (*batch, n, m, k)
    av = aa._with_view(aa._view.expand((*batch, n, k)).unsqueeze(nb + 1).expand(full))
    bview = bb._view.expand((*batch, k, m))
    bv = bb._with_view(bview.permute((*range(nb), nb + 1, nb)).unsqueeze(nb).expand(full))
    prod_ = binary(Op.MUL, av, bv)
    out = reduce(prod_, Op.SUM, prod_.ndim - 1, keepdim=False, acc=acc) if k else \
        from_node(graph.cast(graph.Src(None, None, acc, 0), acc, (), a.device)).expand(*batch, n, m)
    out = out.cast(dt)
    if va:
        out = out.squeeze(-2)
    if vb:
        out = out.squeeze(-1)
    return out


class ReduceMixin(TensorBase):
    """Reductions and matmul as methods (the module functions, ``self`` first)."""

    __slots__ = ()

    sum, prod, mean, var, std, logsumexp = sum, prod, mean, var, std, logsumexp
    max, min, amax, amin, argmax, argmin = max, min, max, min, argmax, argmin
    any, all, matmul = any, all, matmul

    def __matmul__(self, other: Any) -> Any:
        return matmul(self, other) if isinstance(other, TensorBase) else NotImplemented

    def __rmatmul__(self, other: Any) -> Any:
        return matmul(other, self) if isinstance(other, TensorBase) else NotImplemented
