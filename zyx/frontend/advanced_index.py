"""Advanced indexing: ``x[idx]`` with index tensors, lists or bool masks, ``index_put`` and ``x[idx] = v``
(API.md "Advanced indexing, gather and scatter"), each one indexed access (``index_access``)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from zyx import dtype as dtypes
from zyx.errors import AutogradError, DTypeError, IndexDTypeError, IndexOutOfRange
from zyx.frontend.autograd import engine as autograd
from zyx.frontend.autograd.engine import check_not_view_of_leaf, needs_grad, no_grad
from zyx.frontend.autograd.rules import unbroadcast
from zyx.frontend.base import TensorBase, check_writable
from zyx.frontend.creation import tensor
from zyx.frontend.index_access import Access, advanced_access, int_index, read, write, write_inplace
from zyx.frontend.view_index import basic_index
from zyx.ir.view import View

# ---------------------------------------------------------------- index parsing


def is_advanced(index: Any) -> bool:
    """Whether ``index`` needs more than the view path: tensors, lists, arrays or bools in it (a tuple
    nested in the index tuple is a sequence of indices too, as in PyTorch)."""
    items = index if isinstance(index, tuple) else (index,)
    return any(isinstance(it, (TensorBase, list, tuple, np.ndarray, bool, np.bool_)) for it in items)


def _to_tensor(it: Any, device: Any) -> Any:
    if isinstance(it, TensorBase):
        return it
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
            int_index(it, "x[index]")
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
