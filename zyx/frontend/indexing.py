"""Advanced indexing, gather and scatter (API.md "Advanced indexing, gather and scatter").

Every op here is one *indexed access*: an iteration shape ``S`` whose points map to elements of a
table (the tensor read, or written) through, per table axis, either an iteration axis or an integer
index tensor read at the point (``Access``; the ``axes`` convention of ``graph.GatherSpec``).

* Reads (``x[idx]``, ``gather``, ``index_select``, ``take_along_dim``, ``masked_select``) are a
  ``GATHER`` graph node: an indexed load that fuses with the elementwise work on both sides (the
  index computation and the consumer), bounds-checked on the device.
* Writes (``x[idx] = v``, ``index_put_``, ``scatter*``, the gathers' gradients) are the scatter
  kernels of ``codegen.scatter``: out of place as an ``EXTERN`` node writing into a copy of
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

import numpy as np

from zyx import dtype as dtypes
from zyx import graph
from zyx.backend import errorflags, transfer
from zyx.backend.launch import runtime_lock
from zyx.backend.pool import Buffer
from zyx.codegen import scatter as kernels
from zyx.errors import AutogradError, DTypeError, IndexDTypeError, IndexOutOfRange, OpDTypeError, ShapeError
from zyx.frontend import autograd
from zyx.frontend.args import device_of
from zyx.frontend.autograd import check_not_view_of_leaf, is_grad_enabled, needs_grad, no_grad
from zyx.frontend.base import TensorBase, check_writable, concrete, extern_tensor, raise_unread_errors
from zyx.frontend.elementwise import broadcast_shapes, from_node
from zyx.frontend.movement import basic_index
from zyx.ir.view import View, normalize_dim

_deterministic = False
REDUCE_NAMES = {"sum": "add", "prod": "mul", "mean": "add", "amax": "max", "amin": "min"}


def use_deterministic_algorithms(mode: bool) -> None:
    """Make every scatter (scatter_add, index_put accumulate, the gathers' gradients, plain writes
    with duplicate indices) deterministic: the points are combined in index order (PyTorch's CPU
    order, so its bits) by work items owning parts of the destination, instead of atomics. Slower
    (``codegen.scatter``)."""
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


def _int_index(t: Any, what: str) -> None:
    if not t.dtype.is_int:
        kind = IndexDTypeError if what == "x[index]" else DTypeError  # x[float] is an IndexError in PyTorch
        raise kind(f"{what}: expected an integer index tensor (int64, int32, ...), got {t.dtype.name}")


def dim_access(table: Any, dim: int, index: Any, what: str) -> Access:
    """``gather``/``scatter`` along ``dim``: points of ``index.shape``, table coordinate ``dim`` from
    ``index``, the others the point's own (PyTorch's size rules: index no larger than the table off
    ``dim``)."""
    _int_index(index, what)
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
        from zyx.frontend.creation import zeros

        dest = zeros(*shape, dtype=g.dtype, device=g.device)
        back.table = dest
        return (write(back, g, "add"),)

    return autograd.record("index", out, [table], fn)


def _value(acc: Access, value: Any, dtype: Any, device: Any) -> Any:
    """``value`` (a tensor or scalar) as a tensor of ``dtype`` broadcast to the access's points, or a
    Python scalar."""
    if not isinstance(value, TensorBase):
        if dtype.is_int:  # NaN, inf or an int out of range: refused as x[...] = value and PyTorch refuse it
            from zyx.frontend.creation import _fill_value

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
        transfer.copy_buffer(bufs[0], out, nbytes, base._view.offset * dtype.itemsize)
        kernels.scatter(device, _write_params(acc, out, view, value, bufs[1:], reduce), method)
        return out

    return extern_tensor(f"scatter {reduce}", run, inputs, dtype, shape, device)


def _check_not_expanded(dest: Any, what: str) -> None:
    if any(st == 0 and d > 1 for st, d in zip(dest._view.strides, dest.shape)):
        raise ShapeError(f"{what}: the destination is expanded (several of its elements share one memory "
                         "location); write into a clone")


def write_inplace(acc: Access, value: Any, reduce: str, what: str) -> None:
    """Write ``value`` at the access's points into ``acc.table``'s own storage (every view of it sees
    the change); all indices are checked first, so a bad one writes nothing."""
    dest = acc.table
    acc.check_nonempty_axes()
    _check_not_expanded(dest, what)
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


# ---------------------------------------------------------------- index parsing


def is_advanced(index: Any) -> bool:
    """Whether ``index`` needs more than the view path: tensors, lists, arrays or bools in it (a tuple
    nested in the index tuple is a sequence of indices too, as in PyTorch)."""
    items = index if isinstance(index, tuple) else (index,)
    return any(isinstance(it, (TensorBase, list, tuple, np.ndarray, bool, np.bool_)) for it in items)


def _to_tensor(it: Any, device: Any) -> Any:
    if isinstance(it, TensorBase):
        return it
    from zyx.frontend.creation import tensor

    arr = np.asarray(it)
    if arr.dtype == object:
        raise DTypeError(f"unsupported index {it!r}: expected ints, bools or tensors")
    if arr.size == 0 and arr.dtype.kind == "f":
        arr = arr.astype(np.int64)  # [] indexes nothing
    if arr.dtype.kind not in "biu":
        raise IndexDTypeError(f"tensors used as indices must be integer or bool tensors, got {arr.dtype}")
    if arr.dtype == np.uint8:
        arr = arr != 0  # a mask, as a uint8 tensor (PyTorch)
    elif arr.dtype.kind in "iu":
        arr = arr.astype(np.int64)
    return tensor(arr, device=device)


def nonzero_indices(mask: Any) -> list[Any]:
    """One int64 tensor per dim of ``mask``: the coordinates of its True elements, row-major (the
    mask is read back: the count decides the result's shape)."""
    from zyx.frontend.creation import tensor

    arr = mask.numpy()
    return [tensor(c.astype(np.int64), device=mask.device) for c in np.nonzero(arr != 0)]


@dataclass
class ParsedIndex:
    """An index split into its basic part (a view of the tensor) and integer tensors at dims of that
    view (``adv``)."""

    basic: tuple[Any, ...]
    adv: list[tuple[int, Any]]


def parse(x: Any, index: Any) -> ParsedIndex:
    """Split ``index`` for ``x`` (PyTorch's rules: a bool mask covers as many dims as it has and
    becomes its nonzero coordinates; a Python bool adds a dim of size 1, or 0 for False)."""
    items = list(index) if isinstance(index, tuple) else [index]
    items = [_to_tensor(it, x.device) if isinstance(it, (list, tuple, np.ndarray)) else it for it in items]
    items = [it.cast(dtypes.bool_) if isinstance(it, TensorBase) and it.dtype is dtypes.uint8 else it
             for it in items]  # uint8 tensors index as masks, as in PyTorch

    def consumed(it: Any) -> int:
        if it is None or it is Ellipsis or isinstance(it, (bool, np.bool_)):
            return 0
        if isinstance(it, TensorBase) and it.dtype.is_bool:
            return it.ndim
        return 1

    if sum(1 for it in items if it is Ellipsis) > 1:
        raise IndexOutOfRange("an index can only have a single ellipsis ('...')")
    used = sum(consumed(it) for it in items)
    if used > x.ndim:
        raise IndexOutOfRange(f"too many indices for tensor of dimension {x.ndim} (got {used})")
    basic: list[Any] = []
    adv: list[tuple[int, Any]] = []
    vd = sd = 0
    for it in items:
        if it is Ellipsis:
            k = x.ndim - used
            basic.extend([slice(None)] * k)
            vd += k
            sd += k
        elif it is None:
            basic.append(None)
            vd += 1
        elif isinstance(it, (bool, np.bool_)):  # a new dim indexed by [0] (True) or [] (False), as PyTorch
            basic.append(None)
            adv.append((vd, _to_tensor(np.zeros(int(bool(it)), np.int64), x.device)))
            vd += 1
        elif isinstance(it, TensorBase) and it.dtype.is_bool:
            k = it.ndim
            if tuple(it.shape) != tuple(x.shape[sd:sd + k]):
                raise IndexOutOfRange(f"the shape of the mask {list(it.shape)} at index {sd} does not match the "
                                      f"shape of the indexed tensor {list(x.shape)} at index {sd}")
            if k == 0:  # a 0-d mask: like a Python bool
                basic.append(None)
                adv.append((vd, _to_tensor(np.zeros(int(bool(it.item())), np.int64), x.device)))
                vd += 1
                continue
            for j, coords in enumerate(nonzero_indices(it)):
                basic.append(slice(None))
                adv.append((vd + j, coords))
            vd += k
            sd += k
        elif isinstance(it, TensorBase):
            _int_index(it, "x[index]")
            basic.append(slice(None))
            adv.append((vd, it))
            vd += 1
            sd += 1
        else:
            basic.append(it)
            if not isinstance(it, (int, np.integer)):
                vd += 1
            sd += 1
    return ParsedIndex(tuple(basic), adv)


def _basic_view(x: Any, parsed: ParsedIndex, grad: bool) -> Any:
    """The basic part of the index applied to ``x`` (a view; recorded for autograd when ``grad``)."""
    if grad:
        return x[parsed.basic]
    return x._with_view(basic_index(x._view, parsed.basic))


def getitem(x: Any, index: Any) -> Any:
    """``x[index]`` with tensors, lists, arrays or bools in the index (advanced indexing)."""
    parsed = parse(x, index)
    v = _basic_view(x, parsed, True)
    if not parsed.adv:
        return v
    return read(advanced_access(v, parsed.adv))


def _record_put(out: Any, x: Any, index: Any, value: Any, accumulate: bool) -> Any:
    """Record ``out = x`` with ``value`` put at ``index``: the written elements' gradient goes to
    ``value`` (summed over its broadcast), the rest (all with ``accumulate``) to ``x``."""
    value_shape = tuple(value.shape) if isinstance(value, TensorBase) else None
    value_dtype = value.dtype if isinstance(value, TensorBase) else None

    def fn(g: Any) -> tuple:
        from zyx.frontend.gradients import unbroadcast

        gx = g if accumulate else index_put(g, index, 0.0)
        gv = None if value_shape is None else unbroadcast(g[index], value_shape).cast(value_dtype)
        return gx, gv

    return autograd.record("index_put", out, [x, value if value_shape is not None else None], fn)


def _put_access(x: Any, index: Any) -> tuple[Access, tuple[Any, ...]]:
    """The access of ``x[index]`` for a write, and the index's basic part."""
    parsed = parse(x, index)
    v = _basic_view(x, parsed, False)
    if parsed.adv:
        return advanced_access(v, parsed.adv), parsed.basic
    return Access(v, tuple(v.shape), tuple(range(v.ndim)), [], (), True), parsed.basic


def index_put_(x: Any, index: Any, value: Any, accumulate: bool = False) -> Any:
    """``x[index] = value`` in place (``accumulate``: ``x[index] += value`` with every duplicate index
    adding, as PyTorch's ``index_put_``); returns ``x``. Recorded for autograd (``_record_put``)."""
    check_writable(x, "index_put_")
    if needs_grad(x, value):
        if x._ag is not None and x._ag.grad_fn is None:
            raise AutogradError("a leaf tensor that requires grad is written in place (x[idx] = v or "
                                "index_put_); write under zyx.no_grad(), or into a clone")
        check_not_view_of_leaf(x)
        with no_grad():
            index_put_(x, index, value, accumulate)
        return _record_put(x, x, index, value, accumulate)
    acc, _ = _put_access(x, index)
    write_inplace(acc, value, "add" if accumulate else "assign", "index_put_")
    return x


def index_put(x: Any, index: Any, value: Any, accumulate: bool = False) -> Any:
    """Out-of-place ``index_put_``: a new tensor (one scatter kernel on a copy of ``x``)."""
    if needs_grad(x, value):
        with no_grad():
            out = index_put(x, index, value, accumulate)
        return _record_put(out, x, index, value, accumulate)
    acc, basic = _put_access(x, index)
    dest_view = basic_index(View.contiguous(tuple(x.shape)), basic)
    return write(acc, value, "add" if accumulate else "assign", whole=x, dest_view=dest_view)


def setitem(x: Any, index: Any, value: Any) -> None:
    """``x[index] = value`` for an advanced index (duplicates: one of the written values wins)."""
    check_writable(x, "x[...] = value")
    index_put_(x, index, value, False)


# ---------------------------------------------------------------- gather / scatter family


def gather(x: Any, dim: int, index: Any) -> Any:
    """``out[i][j][k] = x[index[i][j][k]][j][k]`` (for ``dim == 0``): values along ``dim`` picked by
    ``index`` (same rank as ``x``, no larger off ``dim``)."""
    if x.ndim == 0:
        return gather(x.reshape(1), 0, index.reshape(1)).reshape(index.shape)
    return read(dim_access(x, dim, index, "gather"))


def index_select(x: Any, dim: int, index: Any) -> Any:
    """The entries ``index`` (1-D or 0-D) of ``dim``."""
    _int_index(index, "index_select")
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
    _int_index(indices, "take_along_dim")
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
    from zyx.frontend.creation import tensor

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
            from zyx.frontend.creation import full_like

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
        _check_not_expanded(x, what)
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
    from zyx.frontend.creation import ones_like, zeros_like
    from zyx.frontend.elementwise import where

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
    from zyx.frontend.creation import zeros_like
    from zyx.frontend.elementwise import where

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


class IndexingMixin(TensorBase):
    """Advanced indexing and the gather/scatter family as methods (``__getitem__``/``__setitem__``
    hand basic indices to the view path)."""

    __slots__ = ()

    def __getitem__(self, index: Any) -> Any:
        if is_advanced(index):
            return getitem(self, index)
        return super().__getitem__(index)

    def __setitem__(self, index: Any, value: Any) -> None:
        if is_advanced(index):
            setitem(self, index, value)
            return
        super().__setitem__(index, value)

    def gather(self, dim: int, index: Any) -> Any:
        return gather(self, dim, index)

    def index_select(self, dim: int, index: Any) -> Any:
        return index_select(self, dim, index)

    def take_along_dim(self, indices: Any, dim: int | None = None) -> Any:
        return take_along_dim(self, indices, dim)

    def masked_select(self, mask: Any) -> Any:
        return masked_select(self, mask)

    def nonzero(self, as_tuple: bool = False) -> Any:
        return nonzero(self, as_tuple)

    def scatter(self, dim: int, index: Any, src: Any = None, value: Any = None, reduce: str | None = None) -> Any:
        return scatter(self, dim, index, src, value, reduce)

    def scatter_add(self, dim: int, index: Any, src: Any) -> Any:
        return scatter_add(self, dim, index, src)

    def scatter_(self, dim: int, index: Any, src: Any = None, value: Any = None) -> Any:
        """``scatter`` in place; returns ``self``."""
        return scatter_inplace(self, dim, index, value if src is None else src, "assign", "scatter_")

    def scatter_add_(self, dim: int, index: Any, src: Any) -> Any:
        """``scatter_add`` in place; returns ``self``."""
        return scatter_inplace(self, dim, index, src, "add", "scatter_add_")

    def scatter_reduce(self, dim: int, index: Any, src: Any, reduce: str, include_self: bool = True) -> Any:
        return scatter_reduce(self, dim, index, src, reduce, include_self)

    def index_put_(self, indices: Any, values: Any, accumulate: bool = False) -> Any:
        return index_put_(self, tuple(indices) if isinstance(indices, list) else indices, values, accumulate)

    def index_put(self, indices: Any, values: Any, accumulate: bool = False) -> Any:
        return index_put(self, tuple(indices) if isinstance(indices, list) else indices, values, accumulate)
