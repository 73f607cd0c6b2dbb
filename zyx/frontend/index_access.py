"""The indexed access under advanced indexing, gather and scatter: ``Access``, its read and its writes.

Every op here is one *indexed access*: an iteration shape ``S`` whose points map to elements of a
table (the tensor read, or written) through, per table axis, either an iteration axis or an integer
index tensor read at the point (``Access``; the ``axes`` convention of ``graph.GatherSpec``).

* Reads (``x[idx]``, ``gather``, ``index_select``, ``take_along_dim``, ``masked_select``) are a
  ``GATHER`` graph node: an indexed load that fuses with the elementwise work on both sides (the
  index computation and the consumer), bounds-checked on the device.
* Writes (``x[idx] = v``, ``index_put_``, ``scatter*``, the gathers' gradients) are the scatter
  kernels of ``kernels.scatter``: out of place as an ``EXTERN`` node writing into a copy of
  ``self``; in place into the destination's storage, after a check launch so that a bad index
  writes nothing.

An index out of range raises ``IndexOutOfRange`` (a ``ShapeError`` and an ``IndexError``) at the
latest when values are next read. Basic indexing (ints, slices, None, ``...``) keeps its view path
(``MovementMixin.__getitem__``); bool masks are turned into index tensors on the host (their
result has a data-dependent size).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from zyx import graph
from zyx.backend.launch import runtime_lock
from zyx.backend.pool import Buffer
from zyx.errors import DTypeError, IndexDTypeError, IndexOutOfRange, OpDTypeError, ShapeError
from zyx.frontend.args import device_of
from zyx.frontend.autograd import engine as autograd
from zyx.frontend.autograd.engine import is_grad_enabled, needs_grad, record
from zyx.frontend.base import TensorBase, concrete, extern_tensor, raise_unread_errors
from zyx.frontend.creation import _fill_value, zeros
from zyx.frontend.elementwise import broadcast_shapes, from_node
from zyx.ir.view import View, normalize_dim
from zyx.kernels import scatter as kernels
from zyx.kernels.copy import copy_bytes

_deterministic = False


def use_deterministic_algorithms(mode: bool) -> None:
    """Make every scatter (scatter_add, index_put accumulate, the gathers' gradients, plain writes
    with duplicate indices) deterministic: the points are combined in index order (PyTorch's CPU
    order, so its bits) by work items owning parts of the destination, instead of atomics. Slower
    (``kernels.scatter``)."""
    global _deterministic
    _deterministic = bool(mode)


def are_deterministic_algorithms_enabled() -> bool:
    """Whether ``use_deterministic_algorithms(True)`` is in effect."""
    return _deterministic


def _method() -> str:
    return "deterministic" if _deterministic else "auto"


# ---------------------------------------------------------------- the indexed access


@dataclass
class Access:
    """Points of ``shape`` mapped to elements of ``table`` (a tensor or view): table axis ``a`` takes
    iteration coordinate ``axes[a]`` (``>= 0``) or the value of ``indices[~axes[a]]`` read at the
    iteration axes ``reads[j]`` (the index tensor has one axis per entry); ``wrap``: negative indices
    count from the end (``x[idx]``), else they are out of range (gather, scatter)."""

    table: Any
    shape: tuple[int, ...]
    axes: tuple[int, ...]
    indices: list[Any]
    reads: tuple[tuple[int, ...], ...]
    wrap: bool

    def __post_init__(self) -> None:
        # no indexed access has a variable form: tensors of variable size (the table, an index) are
        # read at their bound values, and the kernels get the sizes as ints
        self.table = concrete(self.table)
        self.indices = [concrete(t) for t in self.indices]
        self.shape = tuple(int(d) for d in self.shape)

    def spec(self) -> graph.GatherSpec:
        return graph.GatherSpec(self.axes, self.reads, (self.wrap,) * len(self.indices))

    def check_nonempty_axes(self) -> None:
        """A point reading a table axis of size 0 is out of range whatever its index."""
        if math.prod(self.shape) == 0:
            return
        for a, k in enumerate(self.axes):
            if k < 0 and self.table.shape[a] == 0:
                raise IndexOutOfRange(f"index is out of bounds for dimension {a} with size 0")

    def index_sources(self, bufs: Sequence[Buffer]) -> tuple[kernels.IndexSource, ...]:
        out = []
        for t, r, buf in zip(self.indices, self.reads, bufs):
            strides = [0] * len(self.shape)
            for st, k in zip(t._view.strides, r):
                strides[k] = st
            out.append(kernels.IndexSource(buf, t._view.offset, t.dtype, tuple(strides), self.wrap))
        return tuple(out)


def int_index(t: Any, what: str) -> None:
    if not t.dtype.is_int:
        kind = IndexDTypeError if what == "x[index]" else DTypeError  # x[float] is an IndexError in PyTorch
        raise kind(f"{what}: expected an integer index tensor (int64, int32, ...), got {t.dtype.name}")


def dim_access(table: Any, dim: int, index: Any, what: str) -> Access:
    """``gather``/``scatter`` along ``dim``: points of ``index.shape``, table coordinate ``dim`` from
    ``index``, the others the point's own (PyTorch's size rules: index no larger than the table off
    ``dim``)."""
    int_index(index, what)
    if index.ndim != table.ndim:
        raise ShapeError(f"{what}: index has {index.ndim} dims but self has {table.ndim} "
                         "(expected the same number of dimensions)")
    d = normalize_dim(dim, max(table.ndim, 1)) if table.ndim else 0
    for a in range(table.ndim):
        if a != d and index.shape[a] > table.shape[a]:
            raise ShapeError(f"{what}: size does not match at dimension {a}: expected index {list(index.shape)} "
                             f"to be no larger than self {list(table.shape)} apart from dimension {d}")
    axes = tuple(~0 if a == d else a for a in range(table.ndim))
    return Access(table, tuple(index.shape), axes, [index], (tuple(range(index.ndim)),), False)


def advanced_access(v: Any, adv: list[tuple[int, Any]]) -> Access:
    """The access of ``v[...]`` with integer tensors at the dims of ``adv`` and full slices elsewhere,
    under PyTorch's rules: the index tensors broadcast to one shape ``B``, which replaces the indexed
    dims where they are adjacent, else goes first."""
    positions = [d for d, _ in adv]
    tensors = [t for _, t in adv]
    try:
        bshape = broadcast_shapes(*(t.shape for t in tensors))
    except ShapeError:
        raise IndexOutOfRange("shape mismatch: indexing tensors could not be broadcast together with shapes "
                              + ", ".join(str(list(t.shape)) for t in tensors)) from None
    # A 0-d index tensor acts as an int in PyTorch: its dim goes away and it does not separate the
    # others, so adjacency is judged among the index tensors that keep dims (x[t0, :, [0, 1]] with
    # a 0-d t0 keeps the slice dim first).
    kept = [d for d, t in adv if t.ndim > 0] or positions
    adjacent = all(d in positions for d in range(kept[0], kept[-1] + 1))
    p = kept[0] if adjacent else 0
    rest = [d for d in range(v.ndim) if d not in positions]
    before = [d for d in rest if adjacent and d < p]
    after = [d for d in rest if d not in before]
    shape = tuple(v.shape[d] for d in before) + tuple(bshape) + tuple(v.shape[d] for d in after)
    start = len(before)
    axes = [0] * v.ndim
    for i, d in enumerate(before):
        axes[d] = i
    for i, d in enumerate(after):
        axes[d] = start + len(bshape) + i
    indices, reads = [], []
    for j, (d, t) in enumerate(adv):
        axes[d] = ~j
        lead = len(bshape) - t.ndim
        drop = tuple(r for r in range(t.ndim) if t.shape[r] == 1 and bshape[lead + r] != 1)
        keep = tuple(start + lead + r for r in range(t.ndim) if r not in drop)
        indices.append(t._with_view(t._view.squeeze(drop)) if drop else t)
        reads.append(keep)
    return Access(v, shape, tuple(axes), indices, tuple(reads), True)


def read(acc: Access) -> Any:
    """The values at the access's points: a fused, bounds-checked ``GATHER`` node, recorded for
    autograd (the gradient is the accumulating scatter of the same access)."""
    table = acc.table
    acc.check_nonempty_axes()
    if math.prod(acc.shape) == 0:
        out = from_node(graph.const(0, table.dtype, acc.shape, table.device))
    else:
        node = graph.gather(graph.Src(table._data, table._view, table.dtype),
                            tuple(graph.Src(t._data, t._view, t.dtype) for t in acc.indices), acc.spec(),
                            acc.shape, device_of(table, *acc.indices))
        out = from_node(node)
    if table._ag is None or not is_grad_enabled():
        return out
    shape = table.shape
    back = Access(None, acc.shape, acc.axes, [t.detach() for t in acc.indices], acc.reads, acc.wrap)

    def fn(g: Any) -> tuple:
        dest = zeros(*shape, dtype=g.dtype, device=g.device)
        back.table = dest
        return (write(back, g, "add"),)

    return autograd.record("index", out, [table], fn)


def _value(acc: Access, value: Any, dtype: Any, device: Any) -> Any:
    """``value`` (a tensor or scalar) as a tensor of ``dtype`` broadcast to the access's points, or a
    Python scalar."""
    if not isinstance(value, TensorBase):
        if dtype.is_int:  # NaN, inf or an int out of range: refused as x[...] = value and PyTorch refuse it
            try:
                return _fill_value(value, dtype)
            except DTypeError as exc:
                raise OpDTypeError(f"indexed write of {value!r}: {exc}") from None
        return value
    value = concrete(value)
    if value.dtype is not dtype:
        value = value.cast(dtype)
    if value.device is not device:
        value = value.to(device)
    try:
        return value.expand(*acc.shape)
    except ShapeError:
        raise ShapeError(f"shape mismatch: value tensor of shape {list(value.shape)} cannot be broadcast to "
                         f"indexing result of shape {list(acc.shape)}") from None


def _write_params(acc: Access, dest: Buffer, dest_view: View, value: Any, bufs: Sequence[Buffer],
                  reduce: str) -> kernels.IndexedWrite:
    n = len(acc.indices)
    if isinstance(value, TensorBase):
        val: Any = (bufs[n], value._view.offset, value._view.strides)
    else:
        val = value
    return kernels.IndexedWrite(dest, dest_view, acc.table.dtype, acc.shape, acc.axes,
                                acc.index_sources(bufs[:n]), val, reduce)


def write(acc: Access, value: Any, reduce: str, whole: Any = None, dest_view: View | None = None) -> Any:
    """A new tensor: ``acc.table``'s values with ``value`` written (``reduce`` "assign") or combined
    (``"add"``, ``"mul"``, ``"max"``, ``"min"``) at the access's points. With ``whole``: a copy of
    ``whole`` written where ``dest_view`` (the table's view into a dense ``whole``) says. An ``EXTERN``
    node: the scatter kernel runs on the copy when the value is needed; a bad index skips its point."""
    table = acc.table
    acc.check_nonempty_axes()
    dtype, device = table.dtype, table.device
    value = _value(acc, value, dtype, device)
    base = (table if whole is None else whole).contiguous()
    shape = tuple(base.shape)
    view = View.contiguous(shape) if dest_view is None else dest_view
    nbytes = math.prod(shape) * dtype.itemsize
    inputs = [base, *acc.indices] + ([value] if isinstance(value, TensorBase) else [])
    method = _method()

    def run(bufs: list[Buffer]) -> Buffer:
        out = device.pool.allocate(nbytes)
        copy_bytes(device, bufs[0], out, nbytes, base._view.offset * dtype.itemsize)
        kernels.scatter(device, _write_params(acc, out, view, value, bufs[1:], reduce), method)
        return out

    return extern_tensor(f"scatter {reduce}", run, inputs, dtype, shape, device)


def check_not_expanded(dest: Any, what: str) -> None:
    if any(st == 0 and d > 1 for st, d in zip(dest._view.strides, dest.shape)):
        raise ShapeError(f"{what}: the destination is expanded (several of its elements share one memory "
                         "location); write into a clone")


def write_inplace(acc: Access, value: Any, reduce: str, what: str) -> None:
    """Write ``value`` at the access's points into ``acc.table``'s own storage (every view of it sees
    the change); all indices are checked first, so a bad one writes nothing."""
    dest = acc.table
    acc.check_nonempty_axes()
    check_not_expanded(dest, what)
    value = _value(acc, value, dest.dtype, dest.device)
    device = dest.device
    raise_unread_errors(*acc.indices, value)  # a gathered index or value computed, its error raised
    with runtime_lock:
        if isinstance(value, TensorBase) and value._data is dest._data:
            value = value.clone()  # read while written: a copy first
        indices = [t.clone() if t._data is dest._data else t for t in acc.indices]
        indices = [t if t.device is device else t.to(device) for t in indices]
        acc = Access(dest, acc.shape, acc.axes, indices, acc.reads, acc.wrap)
        bufs = [t._realized() for t in indices]
        if isinstance(value, TensorBase):
            bufs.append(value._realized())
        out = dest._buf  # runs pending readers of the old values first
        kernels.scatter(device, _write_params(acc, out, dest._view, value, bufs, reduce), _method(),
                        guard=True, describe=f"{what}: index out of range for a destination of shape "
                                              f"{list(dest.shape)}")


def take_rows(table: Any, index: Any):
    """Rows of the 2-D ``table`` picked by the integer tensor ``index`` (any shape): ``(*index.shape, D)``.

    A gather node: the index fuses with the work that computes it, ``table`` is read from its buffer,
    and an index outside ``[0, rows)`` reads nothing and raises ``IndexOutOfRange`` (an ``IndexError``)
    when values are next read (device error flag). A variable-size index is taken at its bound values."""
    table, index = concrete(table), concrete(index)
    shape = (*index.shape, table.shape[1])
    if index.numel() == 0 or table.shape[1] == 0:
        return from_node(graph.const(0, table.dtype, shape, table.device))
    lead = tuple(range(index.ndim))
    spec = graph.GatherSpec((~0, index.ndim), (lead,), (False,))
    node = graph.gather(graph.Src(table._data, table._view, table.dtype),
                        (graph.Src(index._data, index._view, index.dtype),), spec, shape, device_of(table, index))
    out = from_node(node)
    if table._ag is None:
        return out
    rows = table.shape[0]
    ids = index.detach()
    return record("embedding", out, [table], lambda g: (_rows_backward(g, ids, rows),)) if needs_grad(table) else out


def _rows_backward(g: Any, index: Any, rows: int) -> Any:
    """The gradient of ``take_rows`` for the table: each row the sum of the gradients that read it
    (an accumulating scatter of ``n x D`` work)."""
    flat = index.reshape(-1)
    width = g.shape[-1]
    acc = Access(zeros(rows, width, dtype=g.dtype, device=g.device), (flat.shape[0], width), (~0, 1), [flat],
                 ((0,),), False)
    return write(acc, g.reshape(flat.shape[0], width), "add")
