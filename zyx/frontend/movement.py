"""Movement and basic indexing (API.md "Movement and indexing"): views, pad, split.

``MovementMixin`` gives ``Tensor`` its view methods (reshape, permute, slicing, ...), built on
the one primitive ``_with_view`` of the concrete class. ``pad`` is lazy: a pad node whose
reads are guarded by a validity condition, so it fuses with the work around it.
``split``/``chunk`` are views (``stack`` lives with ``cat`` in the contract ops).
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from zyx import graph
from zyx.errors import IndexOutOfRange, ShapeError, UnknownModeError
from zyx.frontend.args import shape_arg
from zyx.frontend.autograd.engine import needs_grad, record
from zyx.frontend.autograd.rules import index_backward, place, unbroadcast
from zyx.frontend.base import TensorBase
from zyx.frontend.creation import zeros
from zyx.frontend.elementwise import from_node, scalar_value
from zyx.frontend.padding import MODES, pad_mode
from zyx.frontend.view_index import basic_index, expand_index, infer_shape
from zyx.ir.variable import BOUND
from zyx.ir.view import View, normalize_dim


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
        return x._variable_pad(tuple(pads), value)  # a bound zyx.Variable as an amount (``VarEntryMixin``)
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
    return record("constant_pad_nd", out, [x], lambda g: (_crop(g, crops),)) if needs_grad(x) else out


def _crop(g: Any, crops: list[tuple[int, int]]) -> Any:
    for dim, (start, size) in enumerate(crops):
        if start or g.shape[dim] != size:
            g = g.narrow(dim, start, size)
    return g


def _unfold_backward(g: Any, d: int, length: int, size: int, step: int) -> Any:
    """The gradient of ``unfold`` into a dim of ``length``: window element ``j`` of every window goes
    back to its position (window start + ``j``), summed where windows overlap."""
    total = None
    for j in range(size):
        part = place(g[..., j], d, j, length, step)
        total = part if total is None else total + part
    if total is None:
        shape = list(g.shape[:-1])
        shape[d] = length
        return zeros(*shape, dtype=g.dtype, device=g.device)
    return total


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


class MovementMixin(TensorBase):
    """View methods; needs ``_with_view(view)`` and ``_data``/``_view``/``_dtype``/``_device`` of the concrete class."""

    __slots__ = ()

    def reshape(self, *shape: Any) -> Any:
        """The same values in another shape (one ``-1`` allowed); a view when strides allow."""
        shape = infer_shape(shape_arg(shape, variables=True), self.numel(), self.shape)
        view = self._view.reshape(shape)
        if view is not None:
            out = self._with_view(view)
        else:
            node = graph.copy(graph.Src(self._data, self._view, self._dtype), self.shape, self._device)
            out = type(self)(node, View.contiguous(shape), self._dtype, self._device)
        if self._ag is None:
            return out
        old = self.shape
        return record("view", out, [self], lambda g: (g.reshape(old),)) if needs_grad(self) else out

    def view(self, *shape: Any) -> Any:
        """Alias of ``reshape``."""
        return self.reshape(*shape)

    def expand(self, *shape: Any) -> Any:
        """Broadcast size-1 dims to ``shape`` (``-1`` keeps a dim) without copying."""
        target = shape_arg(shape, variables=True)
        out = self._with_view(self._view.expand(target))
        if self._ag is None:
            return out
        old = self.shape
        return record("expand", out, [self], lambda g: (unbroadcast(g, old),)) if needs_grad(self) else out

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
        return record("permute", out, [self], lambda g: (g.permute(*inverse),)) if needs_grad(self) else out

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
        return record("squeeze", out, [self], lambda g: (g.reshape(old),)) if needs_grad(self) else out

    def unsqueeze(self, dim: int) -> Any:
        """Insert a size-1 dim at ``dim`` (in ``[-ndim-1, ndim]``)."""
        d = normalize_dim(dim, self.ndim + 1)
        out = self._with_view(self._view.unsqueeze(d))
        if self._ag is None:
            return out
        old = self.shape
        return record("unsqueeze", out, [self], lambda g: (g.reshape(old),)) if needs_grad(self) else out

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
        d = normalize_dim(dim, self.ndim)
        size = self.shape[d]
        if start < 0:
            start += size
        if not (0 <= start <= size) or length < 0 or start + length > size:
            raise IndexOutOfRange(f"narrow: start {start} and length {length} exceed dim {d} of size {size}")
        out = self._with_view(self._view.slice(d, start, start + length, 1))
        if not needs_grad(self):
            return out
        return record("narrow", out, [self], lambda g: (place(g, d, start, size, 1),))

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
        if not needs_grad(self):
            return out
        return record("unfold", out, [self], lambda g: (_unfold_backward(g, d, length, size, step),))

    def __getitem__(self, index: Any) -> Any:
        out = self._with_view(basic_index(self._view, index))
        if self._ag is None:
            return out
        old, items = self.shape, expand_index(self.ndim, index)
        return record("slice", out, [self], lambda g: (index_backward(g, old, items),)) if needs_grad(self) else out

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
