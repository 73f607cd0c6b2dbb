"""Sorting and selection (API.md "Sorting and selection") and ``SortingMixin``.

``sort``, ``argsort``, ``topk``, ``kthvalue``, ``median``, ``unique``, ``searchsorted`` and
``bucketize``. Every op moves its dim last and makes it dense (a view plus the contiguize
kernel when needed), runs one of the kernels of ``zyx.kernels.sorting`` as a lazy
``EXTERN`` graph node (its input may be pending work; its outputs are pending tensors) and
moves the dim back with a view. An op with two outputs is two nodes: the indices node
runs the kernel, which also writes the values; the values node reads the indices node
(so it runs it first) and takes the values buffer it left behind. Only ``unique`` reads
values back (its output size; along a dim also the slices' order), as PyTorch does.

Order: PyTorch's. NaN is the largest value (first when descending), -0.0 equals +0.0, and
equal values keep their input order (every sort here is stable, so ``stable=False`` gives
the stable order too). Gradients of the selected values are PyTorch's: a scatter of the
gradient to the selected positions (``median()`` of a whole tensor spreads it evenly over
the elements equal to the median, as PyTorch does).
"""
from __future__ import annotations

import copy
import math
from typing import Any, Callable, NamedTuple

import numpy as np

from zyx import dtype as dtypes
from zyx.backend import transfer
from zyx.backend.device import Device
from zyx.backend.pool import Buffer
from zyx.dtype import DType
from zyx.errors import DTypeError, IndexOutOfRange, ShapeError
from zyx.frontend.autograd.engine import needs_grad, no_grad, record
from zyx.frontend.base import TensorBase, concrete, extern_tensor, tensor_class
from zyx.frontend.creation import full, zeros
from zyx.frontend.elementwise import where
from zyx.ir.view import View, normalize_dim
from zyx.kernels import sorting as kernels

Tensor = TensorBase  # annotations and isinstance checks: any tensor of the concrete class


class ValuesIndices(NamedTuple):
    """The ``(values, indices)`` pair of sort, topk, kthvalue and median with a dim (indices int64)."""

    values: Any
    indices: Any


# ---------------------------------------------------------------- graph nodes


def _single(name: str, shape: tuple[int, ...], dtype: DType, device: Device, inputs: list[Any],
            launcher: Callable[..., None]) -> Any:
    """A pending tensor that ``launcher(out, *input buffers)`` fills when realized."""
    nbytes = math.prod(shape) * dtype.itemsize

    def run(buffers: list[Buffer]) -> Buffer:
        out = device.pool.allocate(nbytes)
        launcher(out, *buffers)
        return out

    return extern_tensor(name, run, inputs, dtype, shape, device)


def _pair(name: str, shape: tuple[int, ...], dtype: DType, device: Device, inputs: list[Any],
          launcher: Callable[..., None]) -> tuple[Any, Any]:
    """Pending (values, int64 indices) that one ``launcher(values, indices, *input buffers)`` fills."""
    count = math.prod(shape)
    left: dict[str, Buffer] = {}  # the values buffer, from the indices node's run to the values node's

    def run_indices(buffers: list[Buffer]) -> Buffer:
        values = device.pool.allocate(count * dtype.itemsize)
        indices = device.pool.allocate(count * 8)
        launcher(values, indices, *buffers)
        left["values"] = values
        return indices

    def run_values(buffers: list[Buffer]) -> Buffer:
        return left.pop("values")

    indices = extern_tensor(name, run_indices, inputs, dtypes.int64, shape, device)
    return extern_tensor(f"{name}_values", run_values, [indices], dtype, shape, device), indices


# ---------------------------------------------------------------- layout


def _tensor(x: Any, op: str, field: str = "input") -> Any:
    """``x`` checked to be a tensor; a tensor of variable size at its bound values (no sort has a variable form)."""
    if not isinstance(x, Tensor):
        raise DTypeError(f"{op}(): {field} must be a zyx.Tensor, got {type(x).__name__}")
    return concrete(x)


class _Rows:
    """``x`` with ``dim`` moved last and made dense: ``(rows, n)`` rows, and the way back."""

    def __init__(self, x: Any, dim: int, op: str) -> None:
        self.rank = x.ndim
        self.dim = normalize_dim(dim, x.ndim)
        nd = max(x.ndim, 1)
        self.perm = tuple(i for i in range(nd) if i != self.dim) + (self.dim,)
        self.inverse = tuple(sorted(range(nd), key=lambda i: self.perm[i]))
        with no_grad():  # the kernels' input; the ops record their own gradient on the outputs
            moved = (x.reshape(1) if x.ndim == 0 else x).permute(*self.perm)
            self.dense = moved.contiguous()
        self.n = moved.shape[-1]
        if self.n >= 2**32 - 1:
            raise ShapeError(f"{op}(): dim {dim} has {self.n} elements; expected fewer than 2**32 - 1")
        self.rows = math.prod(moved.shape[:-1])
        self.lead = moved.shape[:-1]

    def layout(self) -> _Rows:
        """A copy without the dense input (what a backward closure keeps: the input need not live on)."""
        out = copy.copy(self)
        out.dense = None
        return out

    def back(self, t: Any) -> Any:
        """A last-dim-layout result (``lead + (k,)``) in the input's layout."""
        out = t.permute(*self.inverse)
        return out.reshape(()) if self.rank == 0 else out

    def to_rows(self, g: Any) -> Any:
        """A tensor in the input's layout (the dim of any size) as dense ``lead + (k,)``."""
        base = g.reshape(1) if self.rank == 0 else g
        return base.permute(*self.perm).contiguous()


def _check_int(value: Any, op: str, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        try:
            return int(value.__index__())
        except (AttributeError, TypeError):
            raise DTypeError(f"{op}(): {what} must be an int, got {value!r}") from None
    return value


# ---------------------------------------------------------------- row gathers and scatters


def _gather_last(src: Any, idx: Any) -> Any:
    """``out[..., q] = src[..., idx[..., q]]`` (src and idx of equal leading shape); differentiable in src."""
    src_d, idx_d = src.contiguous(), idx.contiguous()
    n, k = src_d.shape[-1], idx_d.shape[-1]
    rows, dt, dev = math.prod(idx_d.shape[:-1]), src.dtype, src.device
    out = _single("gather_rows", idx_d.shape, dt, dev, [src_d, idx_d], lambda o, s, i: kernels.gather_rows(
        dev, o, s, i, dt, rows, n, k))
    if needs_grad(src):
        return record("gather_rows", out, [src], lambda g: (_scatter_last(g, idx_d, n),))
    return out


def _scatter_last(g: Any, idx: Any, n: int) -> Any:
    """Zeros of ``g.shape[:-1] + (n,)`` with ``out[..., idx[..., q]] = g[..., q]`` (distinct positions per row)."""
    g_d, idx_d = g.contiguous(), idx.contiguous()
    k = g_d.shape[-1]
    rows, dt, dev = math.prod(g_d.shape[:-1]), g.dtype, g.device
    shape = (*g_d.shape[:-1], n)
    out = _single("scatter_rows", shape, dt, dev, [g_d, idx_d], lambda o, s, i: kernels.scatter_rows(
        dev, o, s, i, dt, rows, n, k))
    if needs_grad(g):
        return record("scatter_rows", out, [g], lambda gg: (_gather_last(gg, idx_d),))
    return out


def _record_selection(name: str, values: Any, x: Any, lay: _Rows, idx_rows: Any,
                      expand: Callable[[Any], Any] = lambda g: g) -> Any:
    """Record on ``values`` (selected from ``x``) PyTorch's gradient: ``expand(g)`` in the input's layout
    (the dim of size k), scattered back to the positions ``idx_rows`` (``lead + (k,)``)."""
    if not needs_grad(x):
        return values
    lay = lay.layout()

    def backward(g: Any) -> tuple:
        rows = _scatter_last(lay.to_rows(expand(g)), idx_rows, lay.n)
        return (lay.back(rows),)

    return record(name, values, [x], backward)


# ---------------------------------------------------------------- sort / argsort / topk


def _sorted_rows(lay: _Rows, dtype: DType, device: Device, descending: bool) -> tuple[Any, Any]:
    shape, rows, n = (*lay.lead, lay.n), lay.rows, lay.n
    if rows * n == 0:
        return zeros(*shape, dtype=dtype, device=device), zeros(*shape, dtype=dtypes.int64, device=device)
    return _pair("sort", shape, dtype, device, [lay.dense], lambda v, i, s: kernels.sort_rows(
        device, v, i, s, dtype, rows, n, descending))


def sort(x: Any, dim: int = -1, descending: bool = False, stable: bool = False) -> ValuesIndices:
    """``(values, indices)`` of ``x`` sorted along ``dim`` (stable: equal values keep their order; NaN largest)."""
    x = _tensor(x, "sort")
    lay = _Rows(x, dim, "sort")
    with no_grad():
        values, indices = _sorted_rows(lay, x.dtype, x.device, descending)
    out = _record_selection("sort", lay.back(values), x, lay, indices)
    return ValuesIndices(out, lay.back(indices))


def argsort(x: Any, dim: int = -1, descending: bool = False, stable: bool = False) -> Any:
    """The int64 positions that sort ``x`` along ``dim`` (see ``sort``)."""
    x = _tensor(x, "argsort")
    lay = _Rows(x, dim, "argsort")
    return lay.back(_sorted_rows(lay, x.dtype, x.device, descending)[1])


def msort(x: Any) -> Any:
    """``sort(x, dim=0).values``."""
    return sort(x, 0).values


def _select_rows(lay: _Rows, dtype: DType, device: Device, k: int, largest: bool) -> tuple[Any, Any]:
    """The first ``k`` of each row in (descending if ``largest``) sorted order, as dense ``lead + (k,)``."""
    shape, rows, n = (*lay.lead, k), lay.rows, lay.n
    if rows * k == 0:
        return zeros(*shape, dtype=dtype, device=device), zeros(*shape, dtype=dtypes.int64, device=device)
    if k > kernels.TOPK_MAX:
        values, indices = _sorted_rows(lay, dtype, device, largest)
        return values[..., :k].contiguous(), indices[..., :k].contiguous()
    return _pair("topk", shape, dtype, device, [lay.dense], lambda v, i, s: kernels.topk_rows(
        device, v, i, s, dtype, rows, n, k, largest))


def topk(x: Any, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> ValuesIndices:  # noqa: A002
    """The ``k`` largest (or smallest) values along ``dim`` and their int64 positions, in order (ties: the
    first position first; NaN largest). Small ``k`` selects without sorting the rows."""
    x = _tensor(x, "topk")
    k = _check_int(k, "topk", "k")
    lay = _Rows(x, dim, "topk")
    if not 0 <= k <= lay.n:
        raise IndexOutOfRange(f"topk(): k = {k} is out of range for dim {dim} of size {lay.n} "
                              f"(shape {x.shape}); expected 0 <= k <= {lay.n}")
    if lay.rank == 0:
        k = 1  # a 0-d input gives itself back for k = 0 too, as PyTorch
    with no_grad():
        values, indices = _select_rows(lay, x.dtype, x.device, k, largest)
    out = _record_selection("topk", lay.back(values), x, lay, indices)
    return ValuesIndices(out, lay.back(indices))


def _pick(lay: _Rows, values: Any, indices: Any, x: Any, pos: Any, keepdim: bool, name: str) -> ValuesIndices:
    """Entry ``pos`` (an int, or an int64 tensor of shape ``lead + (1,)``) of each dense sorted row of
    ``values``/``indices``, in the input's layout, with the selection gradient recorded on the values."""
    if isinstance(pos, int):
        v, i = values[..., pos:pos + 1].contiguous(), indices[..., pos:pos + 1].contiguous()
    else:
        v, i = _gather_last(values, pos), _gather_last(indices, pos)
    v_out, i_out = lay.back(v), lay.back(i)
    d, rank = lay.dim, lay.rank
    if not keepdim and rank:
        v_out, i_out = v_out.squeeze(d), i_out.squeeze(d)

    def expand(g: Any) -> Any:
        return g if keepdim or not rank else g.unsqueeze(d)

    return ValuesIndices(_record_selection(name, v_out, x, lay, i, expand), i_out)


def kthvalue(x: Any, k: int, dim: int = -1, keepdim: bool = False) -> ValuesIndices:
    """The ``k``-th smallest value (1-based) along ``dim`` and its int64 position (NaN largest)."""
    x = _tensor(x, "kthvalue")
    k = _check_int(k, "kthvalue", "k")
    lay = _Rows(x, dim, "kthvalue")
    if not 1 <= k <= lay.n:
        raise IndexOutOfRange(f"kthvalue(): k = {k} is out of range for dim {dim} of size {lay.n} "
                              f"(shape {x.shape}); expected 1 <= k <= {lay.n}")
    with no_grad():
        values, indices = _select_rows(lay, x.dtype, x.device, k, False)
    return _pick(lay, values, indices, x, k - 1, keepdim, "kthvalue")


def median(x: Any, dim: int | None = None, keepdim: bool = False) -> Any:
    """The lower median (NaN if the values hold one, as PyTorch): a tensor for ``dim=None``, else
    ``(values, indices)`` along ``dim`` (the index of a NaN median is that of the first NaN)."""
    x = _tensor(x, "median")
    if dim is None:
        return _median_all(x)
    lay = _Rows(x, dim, "median")
    if lay.n == 0:
        raise IndexOutOfRange(f"median(): dim {dim} of shape {x.shape} is empty; expected a non-empty dim")
    with no_grad():
        values, indices = _sorted_rows(lay, x.dtype, x.device, False)
        pos: Any = (lay.n - 1) // 2
        if x.dtype.is_float:
            # a NaN median sits where the first NaN sorted to: after the non-NaN values
            nans = values.isnan().cast(dtypes.int64).sum(-1, keepdim=True)
            pos = where(nans > 0, lay.n - nans, pos).cast(dtypes.int64)
    return _pick(lay, values, indices, x, pos, keepdim, "median")


def _median_all(x: Any) -> Any:
    if x.numel() == 0:
        if not x.dtype.is_float:
            raise IndexOutOfRange(f"median(): the input of shape {x.shape} is empty; expected at least one "
                                  "element (a float input gives NaN)")
        return full((), float("nan"), dtype=x.dtype, device=x.device)
    with no_grad():
        flat = x.reshape(-1)
        value = median(flat, 0).values
    if not needs_grad(x):
        return value

    def backward(g: Any) -> tuple:
        # PyTorch's evenly_distribute_backward: every element equal to the median (NaN: every NaN) shares g
        mask = (x == value).logical_or(x.isnan().logical_and(value.isnan()))
        m = mask.cast(g.dtype)
        return (m * (g / m.sum()),)

    return record("median", value, [x], backward)


# ---------------------------------------------------------------- unique


def unique(x: Any, sorted: bool = True, return_inverse: bool = False, return_counts: bool = False,  # noqa: A002
           dim: int | None = None) -> Any:
    """The distinct values of ``x`` in ascending order (each NaN distinct, as PyTorch), with the int64
    index of each input element's value (``return_inverse``, input shape) and each value's count.
    With ``dim``: the distinct slices along ``dim`` in lexicographic order, one inverse entry per
    slice. Reads the number of distinct values back (the output size), as PyTorch does."""
    x = _tensor(x, "unique")
    if dim is not None:
        outs = list(_unique_dim(x, dim))
        return tuple(outs[:1] + outs[1:2] * bool(return_inverse) + outs[2:] * bool(return_counts)) \
            if return_inverse or return_counts else outs[0]
    dev, dt = x.device, x.dtype
    flat = x.reshape(-1)
    n = flat.numel()
    if n == 0:
        outs = [zeros(0, dtype=dt, device=dev)]
        inverse, counts = zeros(*x.shape, dtype=dtypes.int64, device=dev), zeros(0, dtype=dtypes.int64, device=dev)
    else:
        with no_grad():
            values, indices = sort(flat.detach())
        vbuf, ibuf = values._realized(), indices._realized()
        pool = dev.pool
        uvals, cbuf = pool.allocate(n * dt.itemsize), pool.allocate(n * 8)
        inv, total = pool.allocate(n * 8), pool.allocate(8)
        kernels.unique_groups(dev, uvals, cbuf, inv, total, vbuf, ibuf, dt, n)
        cls = tensor_class()
        groups = int(cls(total, View.contiguous((1,)), dtypes.int64, dev).item())
        outs = [cls(uvals, View.contiguous((n,)), dt, dev)[:groups]]
        inverse = cls(inv, View.contiguous((n,)), dtypes.int64, dev).reshape(x.shape)
        counts = cls(cbuf, View.contiguous((n,)), dtypes.int64, dev)[:groups]
    if return_inverse:
        outs.append(inverse)
    if return_counts:
        outs.append(counts)
    return outs[0] if len(outs) == 1 else tuple(outs)


def _unique_dim(x: Any, dim: int) -> tuple[Any, Any, Any]:
    """``unique(x, dim=dim)``: the distinct slices along ``dim`` in lexicographic order (rows with a NaN
    are each distinct), the inverse (one per slice) and the counts. The slices are ordered on the
    device by prefix doubling: each element position becomes the dense rank of its value among the
    slices (one batched sort of all positions), then neighbouring positions are paired into one
    rank (``a * m + b``, re-ranked by one batched sort) until one rank orders the slices, so a slice
    of ``r`` elements takes ``log2(r)`` sorts; the run boundaries and the slice order are read back to
    build the outputs, whose size depends on them."""
    if x.ndim == 0:
        raise IndexOutOfRange(f"unique(): dim = {dim} given for a 0-d tensor; expected dim=None")
    d = normalize_dim(dim, x.ndim)
    dev = x.device
    moved = x.detach().permute(d, *(i for i in range(x.ndim) if i != d))
    m, rest = x.shape[d], moved.shape[1:]
    r = math.prod(rest)
    if m and not r:
        raise ShapeError(f"unique(): shape {x.shape} has an empty dim other than dim {d}; expected the slices "
                         "along dim to hold elements")
    if m == 0:
        empty = zeros(0, dtype=dtypes.int64, device=dev)
        return x.detach().clone(), empty, empty
    with no_grad():
        cols = moved.reshape(m, r).permute(1, 0).contiguous()  # column c: element c of every slice
        ranks = _dense_ranks(cols)
        while ranks.shape[0] > 1:
            if ranks.shape[0] % 2:  # a constant last position orders nothing
                ranks = ranks.pad((0, 0, 0, 1))
            pairs = ranks.reshape(-1, 2, m)
            ranks = _dense_ranks(pairs[:, 0] * m + pairs[:, 1])
        perm = argsort(ranks)
        ordered = _gather_last(cols, perm.expand(r, m))
        differs = (ordered[:, 1:] != ordered[:, :-1]).any(0) if m > 1 else zeros(0, dtype=dtypes.bool_, device=dev)
        flags, where_from = differs.numpy(), perm.numpy()[0]
        starts = np.concatenate([[0], 1 + np.flatnonzero(flags)]).astype(np.int64)
        groups = np.concatenate([[0], np.cumsum(flags)]).astype(np.int64)
        inverse = np.empty(m, np.int64)
        inverse[where_from] = groups
        counts = np.diff(np.append(starts, m)).astype(np.int64)
        first = _gather_last(ordered, _host_int64(starts, dev).reshape(1, -1).expand(r, len(starts)))
        values = first.permute(1, 0).reshape(len(starts), *rest)
        back = tuple(sorted(range(x.ndim), key=lambda i: (d, *(j for j in range(x.ndim) if j != d))[i]))
        return values.permute(*back).contiguous(), _host_int64(inverse, dev), _host_int64(counts, dev)


def _dense_ranks(rows: Any) -> Any:
    """For each element of the 2-D ``rows``, the int64 number of distinct smaller values in its row (NaN
    the largest and equal to NaN): one batched sort, a run-start flag and a running sum, scattered
    back to the input positions."""
    r, m = rows.shape
    values, order = _sorted_rows(_Rows(rows, -1, "unique"), rows.dtype, rows.device, False)
    if m == 1:
        return zeros(r, 1, dtype=dtypes.int64, device=rows.device)
    a, b = values[:, 1:], values[:, :-1]
    starts = a != b
    if rows.dtype.is_float:
        starts = starts.logical_and(a.isnan().logical_and(b.isnan()).logical_not())
    sorted_ranks = starts.cast(dtypes.int64).cumsum(-1).pad((1, 0))
    return _scatter_last(sorted_ranks, order, m)


def _host_int64(values: np.ndarray, device: Device) -> Any:
    """An int64 tensor on ``device`` (not pinned, like every computed result) holding ``values``."""
    values = np.ascontiguousarray(values, dtype=np.int64)
    return tensor_class()(transfer.upload(device, values), View.contiguous(values.shape), dtypes.int64, device)


# ---------------------------------------------------------------- searchsorted / bucketize


def searchsorted(sorted_sequence: Any, input: Any, *, out_int32: bool = False, right: bool = False,  # noqa: A002
                 side: str | None = None, sorter: Any = None) -> Any:
    """For each value of ``input``, the position in the innermost dim of ``sorted_sequence`` where it would
    be inserted to keep it sorted (``right``/``side='right'``: after equal values). A 1-D sequence serves
    every value; else its leading dims must equal ``input``'s."""
    seq = _tensor(sorted_sequence, "searchsorted", "sorted_sequence")
    if side is not None:
        if side not in ("left", "right"):
            raise ShapeError(f"searchsorted(): side = {side!r}; expected 'left' or 'right'")
        if right and side == "left":
            raise ShapeError("searchsorted(): side='left' and right=True contradict each other; pass one")
        right = side == "right"
    if not isinstance(input, Tensor):
        input = full((), input, device=seq.device)  # noqa: A001 - PyTorch's name
    if seq.ndim == 0:
        raise ShapeError("searchsorted(): sorted_sequence is 0-d; expected at least one dim")
    batched = seq.ndim > 1
    if batched and (input.ndim != seq.ndim or input.shape[:-1] != seq.shape[:-1]):
        raise ShapeError(f"searchsorted(): sorted_sequence of shape {seq.shape} and input of shape {input.shape}: "
                         "expected a 1-D sequence or one whose leading dims equal the input's")
    common = dtypes.promote_types(seq.dtype, input.dtype)
    if common.is_bool:
        raise DTypeError("searchsorted(): bool tensors have no order to search; expected numbers")
    seq_d, vals_d = seq.cast(common).contiguous(), input.cast(common).contiguous()
    inputs = [seq_d, vals_d]
    if sorter is not None:
        sorter = _tensor(sorter, "searchsorted", "sorter")
        if sorter.shape != seq.shape or sorter.dtype is not dtypes.int64:
            raise ShapeError(f"searchsorted(): sorter of shape {sorter.shape} ({sorter.dtype.name}); expected "
                             f"int64 of the sequence's shape {seq.shape}")
        inputs.append(sorter.contiguous())
    m, count = seq.shape[-1], vals_d.numel()
    per = input.shape[-1] if input.ndim else 1
    dev = seq.device
    out_dt = dtypes.int32 if out_int32 else dtypes.int64

    def launch(out: Buffer, s: Buffer, v: Buffer, *srt: Buffer) -> None:
        kernels.searchsorted(dev, out, s, srt[0] if srt else None, v, common, count, per, m, batched, right,
                             out_int32)

    if count == 0:
        return zeros(*input.shape, dtype=out_dt, device=dev)
    return _single("searchsorted", input.shape, out_dt, dev, inputs, launch)


def bucketize(input: Any, boundaries: Any, *, out_int32: bool = False, right: bool = False) -> Any:  # noqa: A002
    """The bucket of each value of ``input`` among the sorted 1-D ``boundaries`` (``searchsorted``)."""
    b = _tensor(boundaries, "bucketize", "boundaries")
    if b.ndim != 1:
        raise ShapeError(f"bucketize(): boundaries of shape {b.shape}; expected a 1-D tensor")
    return searchsorted(b, input, out_int32=out_int32, right=right)


class SortingMixin(TensorBase):
    """Sorting and selection as methods."""

    __slots__ = ()

    def sort(self, dim: int = -1, descending: bool = False, stable: bool = False) -> ValuesIndices:
        """``(values, indices)`` sorted along ``dim`` (stable; NaN largest)."""
        return sort(self, dim, descending, stable)

    def argsort(self, dim: int = -1, descending: bool = False, stable: bool = False) -> Any:
        """The int64 positions that sort this tensor along ``dim``."""
        return argsort(self, dim, descending, stable)

    def msort(self) -> Any:
        """Sorted along dim 0."""
        return msort(self)

    def topk(self, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> ValuesIndices:  # noqa: A002
        """The ``k`` largest (or smallest) values along ``dim`` and their positions."""
        return topk(self, k, dim, largest, sorted)

    def kthvalue(self, k: int, dim: int = -1, keepdim: bool = False) -> ValuesIndices:
        """The ``k``-th smallest value along ``dim`` and its position."""
        return kthvalue(self, k, dim, keepdim)

    def median(self, dim: int | None = None, keepdim: bool = False) -> Any:
        """The lower median (of all values, or ``(values, indices)`` along ``dim``)."""
        return median(self, dim, keepdim)

    def unique(self, sorted: bool = True, return_inverse: bool = False, return_counts: bool = False,  # noqa: A002
               dim: int | None = None) -> Any:
        """The distinct values (and optionally the inverse indices and counts)."""
        return unique(self, sorted, return_inverse, return_counts, dim)
