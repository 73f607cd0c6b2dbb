"""Movement and basic indexing (API.md "Movement and indexing"): views, pad, stack, split.

``MovementMixin`` gives ``Tensor`` its view methods (reshape, permute, slicing, ...), built on
the one primitive ``_with_view`` of the concrete class. ``pad`` is lazy: a pad node whose
reads are guarded by a validity condition, so it fuses with the work around it.
``split``/``chunk`` are views; ``stack`` concatenates unsqueezed views through ``zyx.cat``.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from zyx import graph
from zyx.errors import IndexOutOfRange, ShapeError, UnknownModeError
from zyx.frontend.args import device_of, shape_arg
from zyx.frontend.autograd import is_grad_enabled
from zyx.frontend.base import TensorBase
from zyx.frontend.elementwise import from_node, scalar_value
from zyx.frontend.padding import MODES, pad_mode
from zyx.ir.variable import BOUND
from zyx.ir.view import View, normalize_dim


def _bound_in(shape: Sequence[Any]) -> bool:
    """Whether a shape argument holds a bound ``zyx.Variable`` (``frontend.varsize`` takes it)."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    return any(type(s) in BOUND for s in shape)


def _bound_slice(index: Any) -> bool:
    """Whether a basic index slices by a bound ``zyx.Variable``."""
    if type(index) is slice:
        return type(index.start) in BOUND or type(index.stop) in BOUND
    return any(type(i) is slice and (type(i.start) in BOUND or type(i.stop) in BOUND)
               for i in index)


def pad(x: Any, pads: Sequence[int], mode: Any = "constant", value: Any = None):
    """Pad; ``pads`` in ``F.pad`` order (last dim first: before, after, ...). ``mode``: ``"constant"``
    (``value``, default 0), ``"reflect"``, ``"replicate"`` or ``"circular"`` (``zyx.frontend.padding``);
    a number in ``mode``'s place is the constant value (``x.pad(pads, 7.0)``). Negative amounts crop.
    """
    if not isinstance(mode, str):
        mode, value = "constant", mode
    if mode not in MODES:
        raise UnknownModeError(f"pad: mode must be one of {', '.join(MODES)}; got {mode!r}")
    if mode != "constant" and value not in (None, 0):
        raise ShapeError(f"pad: a padding value {value!r} only applies to mode 'constant', not {mode!r}")
    value = 0 if value is None else value
    if mode == "constant" and any(type(p) in BOUND for p in pads):
        from zyx.frontend import varsize_shapes  # a bound zyx.Variable as an amount: one kernel for its range

        return varsize_shapes.pad(x, tuple(pads), value)
    pads = tuple(int(p) for p in pads)
    if len(pads) % 2 or len(pads) // 2 > x.ndim:
        raise ShapeError(f"pad: expected an even number of pad amounts for at most {x.ndim} dims, got {pads}")
    per_dim = [(0, 0)] * x.ndim
    for i in range(len(pads) // 2):
        per_dim[x.ndim - 1 - i] = (pads[2 * i], pads[2 * i + 1])
    # negative amounts crop first, except for reflect and replicate: PyTorch mirrors/clamps about the
    # uncropped input's ends there (pad_mode takes the signed amounts)
    for d, (lo, hi) in enumerate(per_dim):
        if (lo < 0 or hi < 0) and mode in ("constant", "circular"):
            start = -lo if lo < 0 else 0
            stop = x.shape[d] + (hi if hi < 0 else 0)
            if stop < start:
                raise ShapeError(f"pad: cropping {(lo, hi)} exceeds dim {d} of size {x.shape[d]}")
            x = x.narrow(d, start, stop - start)
            per_dim[d] = (max(lo, 0), max(hi, 0))
    if all(lo == 0 and hi == 0 for lo, hi in per_dim):
        return x
    if mode != "constant":
        return pad_mode(x, per_dim, mode)
    v = scalar_value(value, x.dtype)
    node = graph.pad(graph.Src(x._data, x._view, x.dtype), tuple(per_dim), v, x.device)
    out = from_node(node)
    if x._ag is None:
        return out
    crops = [(lo, d) for (lo, _), d in zip(per_dim, x.shape)]
    return x._recorded(out, "constant_pad_nd", lambda g: _crop(g, crops))


def _crop(g: Any, crops: list[tuple[int, int]]) -> Any:
    for dim, (start, size) in enumerate(crops):
        if start or g.shape[dim] != size:
            g = g.narrow(dim, start, size)
    return g


def _unfold_backward(g: Any, d: int, length: int, size: int, step: int) -> Any:
    """The gradient of ``unfold`` into a dim of ``length``: window element ``j`` of every window goes
    back to its position (window start + ``j``), summed where windows overlap."""
    from zyx.frontend.gradients import place

    total = None
    for j in range(size):
        part = place(g[..., j], d, j, length, step)
        total = part if total is None else total + part
    if total is None:
        from zyx.frontend.creation import zeros

        shape = list(g.shape[:-1])
        shape[d] = length
        return zeros(*shape, dtype=g.dtype, device=g.device)
    return total


def take_rows(table: Any, index: Any):
    """Rows of the 2-D ``table`` picked by the integer tensor ``index`` (any shape): ``(*index.shape, D)``.

    A gather node: the index fuses with the work that computes it, ``table`` is read from its buffer,
    and an index outside ``[0, rows)`` reads nothing and raises ``IndexOutOfRange`` (an ``IndexError``)
    when values are next read (device error flag)."""
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
    return table._recorded(out, "embedding", lambda g: _rows_backward(g, ids, rows))


def _rows_backward(g: Any, index: Any, rows: int) -> Any:
    """The gradient of ``take_rows`` for the table: each row the sum of the gradients that read it
    (an accumulating scatter of ``n x D`` work, ``frontend.indexing``)."""
    from zyx.frontend.creation import zeros
    from zyx.frontend.indexing import Access, write

    flat = index.reshape(-1)
    width = g.shape[-1]
    acc = Access(zeros(rows, width, dtype=g.dtype, device=g.device), (flat.shape[0], width), (~0, 1), [flat],
                 ((0,),), False)
    return write(acc, g.reshape(flat.shape[0], width), "add")


def stack(tensors: Sequence[Any], dim: int = 0):
    """Join same-shaped tensors along a new dim ``dim``."""
    tensors = list(tensors)
    if not tensors:
        raise ShapeError("stack expects a non-empty sequence of tensors")
    shape = tensors[0].shape
    for t in tensors[1:]:
        if t.shape != shape:
            raise ShapeError(f"stack expects each tensor to be equal size, got {shape} and {t.shape}")
    d = normalize_dim(dim, len(shape) + 1)
    from zyx.frontend.contract_ops import cat  # contract ops build on this module

    return cat([t.unsqueeze(d) for t in tensors], d)


def split(x: Any, split_size_or_sections: Any, dim: int = 0) -> tuple:
    """Views of ``x`` along ``dim``: chunks of one size (last may be smaller) or the listed sizes."""
    if x.ndim == 0:
        raise IndexOutOfRange("split/chunk expect a tensor of at least 1 dim, got a 0-d tensor")
    d = normalize_dim(dim, x.ndim)
    size = x.shape[d]
    if isinstance(split_size_or_sections, int) or type(split_size_or_sections) in BOUND:  # t + 1: by value
        step = int(split_size_or_sections)
        if step <= 0:
            raise ShapeError(f"split: split_size must be positive, got {step}")
        sizes = [min(step, size - s) for s in range(0, size, step)] or [0]
    else:
        sizes = [int(s) for s in split_size_or_sections]
        if sum(sizes) != size or any(s < 0 for s in sizes):
            raise ShapeError(f"split: sizes {sizes} do not add up to dim {d} of size {size}")
    out, start = [], 0
    for s in sizes:
        out.append(x.narrow(d, start, s))
        start += s
    return tuple(out)


def chunk(x: Any, chunks: int, dim: int = 0) -> tuple:
    """``chunks`` (at most) nearly equal views along ``dim``."""
    if chunks <= 0:
        raise ShapeError(f"chunk: chunks must be positive, got {chunks}")
    if x.ndim == 0:
        raise IndexOutOfRange("split/chunk expect a tensor of at least 1 dim, got a 0-d tensor")
    d = normalize_dim(dim, x.ndim)
    size = x.shape[d]
    if size == 0:  # like PyTorch: ``chunks`` empty pieces
        return tuple(x.narrow(d, 0, 0) for _ in range(chunks))
    return split(x, -(-size // chunks), dim)


def infer_shape(shape: tuple[int, ...], numel: int, old: tuple[int, ...]) -> tuple[int, ...]:
    if shape.count(-1) > 1:
        raise ShapeError(f"reshape: only one dimension can be -1, got {shape}")
    if any(s < -1 for s in shape):
        raise ShapeError(f"reshape: invalid size in {shape}")
    if -1 in shape:
        known = math.prod(s for s in shape if s != -1)
        if known == 0 or numel % known:
            raise ShapeError(f"reshape: cannot reshape {old} ({numel} elements) to {shape}")
        shape = tuple(numel // known if s == -1 else s for s in shape)
    if math.prod(shape) != numel:
        raise ShapeError(f"reshape: cannot reshape {old} ({numel} elements) to {shape}")
    return shape


def expand_index(ndim: int, index: Any) -> list[Any]:
    """A basic index as a list of ints, slices and None, its ``...`` spelled out as full slices."""
    items = index if isinstance(index, tuple) else (index,)
    if sum(1 for it in items if it is Ellipsis) > 1:
        raise IndexOutOfRange("an index can only have a single ellipsis ('...')")  # an IndexError, as PyTorch
    consumed = sum(1 for it in items if it is not None and it is not Ellipsis)
    if consumed > ndim:
        raise IndexOutOfRange(f"too many indices for a tensor of rank {ndim}: got {consumed}")
    expanded: list[Any] = []
    for it in items:
        if it is Ellipsis:
            expanded.extend([slice(None)] * (ndim - consumed))
        else:
            expanded.append(it)
    return expanded


def basic_index(view: View, index: Any) -> View:
    """The view selected by a basic index: ints, slices (any non-zero step), None and ``...``."""
    expanded = expand_index(view.ndim, index)
    dim = 0
    for it in expanded:
        if it is None:
            view = view.unsqueeze(dim)
            dim += 1
        elif isinstance(it, slice):
            if it.step == 0:
                raise ShapeError("slice step cannot be zero")
            start, stop, step = it.indices(view.shape[dim])
            view = view.slice(dim, start, stop, step)
            dim += 1
        elif isinstance(it, (int, np.integer)) and not isinstance(it, bool) or type(it) in BOUND:  # t, t + 1: by value
            size = view.shape[dim]
            i = int(it)
            if not -size <= i < size:
                raise IndexOutOfRange(f"index {i} is out of bounds for dim {dim} with size {size}")
            view = view.select(dim, i % size)
        else:
            # an IndexError (and a ShapeError), as PyTorch raises for x[1.5]
            raise IndexOutOfRange(f"unsupported index {it!r}: only ints, slices, None and ... are supported")
    return view


class MovementMixin(TensorBase):
    """View methods; needs ``_with_view(view)`` and ``_data``/``_view``/``_dtype``/``_device`` of the concrete class."""

    __slots__ = ()

    def _recorded(self, out: Any, name: str, back: Callable[[Any], Any]) -> Any:
        """``out`` with the gradient rule ``back`` (the gradient of ``self`` from ``out``'s) when recording."""
        if self._ag is not None and is_grad_enabled():
            from zyx.frontend.gradients import record_view

            record_view(name, self, out, back)
        return out

    def reshape(self, *shape: Any) -> Any:
        """The same values in another shape (one ``-1`` allowed); a view when strides allow."""
        try:
            shape = infer_shape(shape_arg(shape, variables=True), self.numel(), self.shape)
        except ShapeError:
            if not _bound_in(shape):
                raise
            from zyx.frontend import varsize_shapes  # a bound zyx.Variable as a size

            return varsize_shapes.reshape(self, shape)
        view = self._view.reshape(shape)
        if view is not None:
            out = self._with_view(view)
        else:
            node = graph.copy(graph.Src(self._data, self._view, self._dtype), self.shape, self._device)
            out = type(self)(node, View.contiguous(shape), self._dtype, self._device)
        if self._ag is None:
            return out
        old = self.shape
        return self._recorded(out, "view", lambda g: g.reshape(old))

    def view(self, *shape: Any) -> Any:
        """Alias of ``reshape``."""
        return self.reshape(*shape)

    def expand(self, *shape: Any) -> Any:
        """Broadcast size-1 dims to ``shape`` (``-1`` keeps a dim) without copying."""
        try:
            target = shape_arg(shape, variables=True)
        except ShapeError:
            if not _bound_in(shape):
                raise
            from zyx.frontend import varsize_shapes  # a bound zyx.Variable as a size

            return varsize_shapes.expand(
                self, tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape)
        out = self._with_view(self._view.expand(target))
        if self._ag is None:
            return out
        from zyx.frontend.gradients import unbroadcast

        old = self.shape
        return self._recorded(out, "expand", lambda g: unbroadcast(g, old))

    def broadcast_to(self, *shape: Any) -> Any:
        """Alias of ``expand``."""
        return self.expand(*shape)

    def permute(self, *dims: Any) -> Any:
        """Reorder the dims."""
        order = shape_arg(dims, "dims")
        out = self._with_view(self._view.permute(order))
        if self._ag is None:
            return out
        inverse = tuple(sorted(range(len(order)), key=lambda i: order[i] % max(len(order), 1)))
        return self._recorded(out, "permute", lambda g: g.permute(*inverse))

    def transpose(self, dim0: int, dim1: int) -> Any:
        """Swap two dims."""
        a, b = normalize_dim(dim0, self.ndim), normalize_dim(dim1, self.ndim)
        order = list(range(self.ndim))
        if self.ndim:
            order[a], order[b] = order[b], order[a]
        return self.permute(*order)

    @property
    def T(self) -> Any:  # PyTorch's name
        if self.ndim > 2:
            raise ShapeError(f".T expects a tensor of rank <= 2, got rank {self.ndim}; use permute")
        return self.permute(*reversed(range(self.ndim)))

    def squeeze(self, dim: int | Sequence[int] | None = None) -> Any:
        """Drop size-1 dims (all of them, or those named in ``dim``)."""
        if dim is None:
            dims = tuple(range(self.ndim))
        else:
            dims = tuple(normalize_dim(d, self.ndim) for d in ((dim,) if isinstance(dim, int) else dim))
        out = self._with_view(self._view.squeeze(dims))
        if self._ag is None:
            return out
        old = self.shape
        return self._recorded(out, "squeeze", lambda g: g.reshape(old))

    def unsqueeze(self, dim: int) -> Any:
        """Insert a size-1 dim at ``dim`` (in ``[-ndim-1, ndim]``)."""
        d = normalize_dim(dim, self.ndim + 1)
        out = self._with_view(self._view.unsqueeze(d))
        if self._ag is None:
            return out
        old = self.shape
        return self._recorded(out, "unsqueeze", lambda g: g.reshape(old))

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> Any:
        """Merge dims ``start_dim..end_dim`` into one."""
        if self.ndim == 0:
            return self.reshape(1)
        s, e = normalize_dim(start_dim, self.ndim), normalize_dim(end_dim, self.ndim)
        if s > e:
            raise ShapeError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim}")
        shape = self.shape[:s] + (math.prod(self.shape[s:e + 1]),) + self.shape[e + 1:]
        return self.reshape(shape)

    def narrow(self, dim: int, start: int, length: int) -> Any:
        """Elements ``start .. start+length`` of ``dim`` (a view)."""
        if type(start) in BOUND or type(length) in BOUND:
            from zyx.frontend import varsize_shapes  # a bound zyx.Variable: one kernel for its range

            return varsize_shapes.narrow(self, dim, start, length)
        d = normalize_dim(dim, self.ndim)
        size = self.shape[d]
        if start < 0:
            start += size
        if not (0 <= start <= size) or length < 0 or start + length > size:
            raise IndexOutOfRange(f"narrow: start {start} and length {length} exceed dim {d} of size {size}")
        out = self._with_view(self._view.slice(d, start, start + length, 1))
        if self._ag is None:
            return out
        from zyx.frontend.gradients import place

        return self._recorded(out, "narrow", lambda g: place(g, d, start, size, 1))

    def unfold(self, dimension: int, size: int, step: int) -> Any:
        """Every window of ``size`` elements along ``dimension``, ``step`` apart, as a new last dim: a view
        whose windows overlap when ``step < size`` (PyTorch's ``Tensor.unfold``; no copy)."""
        if self.ndim == 0:
            if size > 1 or step <= 0:
                raise ShapeError(f"unfold: size {size} and step {step} on a 0-d tensor (expected size <= 1, step > 0)")
            return self.reshape(1)[:size]
        d = normalize_dim(dimension, self.ndim)
        length = self.shape[d]
        if step <= 0 or size < 0 or size > length:
            raise ShapeError(f"unfold: size {size} and step {step} along dim {d} of size {length} "
                             f"(expected 0 <= size <= {length} and step > 0)")
        v = self._view
        windows = (length - size) // step + 1
        view = View(v.shape[:d] + (windows,) + v.shape[d + 1:] + (size,),
                    v.strides[:d] + (v.strides[d] * step,) + v.strides[d + 1:] + (v.strides[d],), v.offset)
        out = self._with_view(view)
        if self._ag is None:
            return out
        return self._recorded(out, "unfold", lambda g: _unfold_backward(g, d, length, size, step))

    def __getitem__(self, index: Any) -> Any:
        if (type(index) is slice or type(index) is tuple) and _bound_slice(index):
            from zyx.frontend import varsize_shapes  # x[:t] with a bound zyx.Variable: one kernel for its range

            return varsize_shapes.getitem(self, index)
        out = self._with_view(basic_index(self._view, index))
        if self._ag is None:
            return out
        from zyx.frontend.gradients import index_backward

        old, items = self.shape, expand_index(self.ndim, index)
        return self._recorded(out, "slice", lambda g: index_backward(g, old, items))

    def __iter__(self) -> Iterable[Any]:
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self.shape[0]))

    def pad(self, pads: Sequence[int], mode: Any = "constant", value: Any = None) -> Any:
        """Pad (``F.pad`` order; see ``zyx.pad``)."""
        return pad(self, pads, mode, value)

    def split(self, split_size_or_sections: Any, dim: int = 0) -> tuple:
        return split(self, split_size_or_sections, dim)

    def chunk(self, chunks: int, dim: int = 0) -> tuple:
        return chunk(self, chunks, dim)
