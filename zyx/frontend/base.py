"""What the frontend mixins know of the concrete tensor class, without importing it.

Every mixin derives from ``TensorBase``; the class that completes them (``frontend/tensor.py``)
is declared with ``concrete=True`` and is then the class that module-level functions with no
tensor in hand (creation, ``from_node``) construct. Its constructor is the one primitive the
mixins share: ``cls(data, view, dtype, device)``.
"""
from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any

from zyx import graph
from zyx.backend import errorflags
from zyx.errors import ShapeError
from zyx.ir.view import View


class TensorBase:
    """The root of ``Tensor``'s mixins: isinstance checks use it, constructors come from ``tensor_class()``."""

    __slots__ = ()
    __zyx_tensor__ = True  # the protocol ``dtype.result_type`` recognizes tensors by
    _concrete: Any = None  # the concrete tensor class (set when it is defined)
    _varsize: Any = None  # the tensor class of variable size (set when it is defined)

    def __init_subclass__(cls, concrete: bool = False, varsize: bool = False, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if concrete:
            TensorBase._concrete = cls
        if varsize:
            TensorBase._varsize = cls
            VARSIZE.add(cls)


#: tensor classes of variable size (``VarTensor`` in ``frontend.tensor``, declared with ``varsize=True``):
#: module functions that have a variable form (``where``, ``softmax``, ``matmul``) hand such operands to
#: their methods; a set lookup keeps that test cheap
VARSIZE: set[type] = set()


def concrete(x: Any) -> Any:
    """``x`` at its bound values when it is a tensor of variable size (a plain tensor whose shape holds
    ints; ``_view`` reports the read, so a capture keys its plan by the values); anything else as it is.
    Ops with no variable form call it on their operands: they read ``shape`` and hand sizes to kernels."""
    if type(x) in VARSIZE:
        return TensorBase._concrete(x._data, x._view, x._dtype, x._device)
    return x


#: nodes holding a gathered copy where PyTorch has a view: a slice or ``narrow`` at a variable start
#: (``frontend.varsize``). A write into one would not reach the tensor it was taken from.
GATHERED_VIEWS: weakref.WeakSet[Any] = weakref.WeakSet()


def check_writable(x: Any, what: str) -> None:
    """Raise ``ShapeError`` when ``x``, the destination of the in-place write ``what``, is a tensor of
    variable size. Every in-place writer calls this before it writes anything: such a tensor's data is
    computed at the largest size its variable allows, most often inside the tensor it was sliced from,
    which a write would change at the bound values of the moment. As a write's source it is read by value."""
    if type(x) in VARSIZE:
        raise ShapeError(f"{what}: in-place writes into a tensor of variable size are not supported (shape "
                         f"{tuple(x.shape)}, sized by a bound zyx.Variable); expected a tensor of static size: "
                         "write into the full tensor it was taken from with int bounds (x[:n] = v with "
                         "n = int(t)), or .clone() it first to write into a plain copy")
    if x._data in GATHERED_VIEWS:
        raise ShapeError(f"{what}: this tensor was sliced at a variable start (a bound zyx.Variable), which "
                         "zyx computes as a copy, not a view: a write into it would not reach the tensor it was "
                         "taken from; expected a writable tensor: write into that tensor with int bounds "
                         "(x[s:s + n] = v with s = int(start)), or .clone() it first to write into a plain copy")


def raise_unread_errors(*values: Any) -> None:
    """Before an in-place write of ``values`` (its source, indices or position; Python scalars are skipped):
    realize the tensors among them, then raise a device error not yet read on their devices
    (``errorflags.check``: a failed gather, integer division by zero, a value check), so a write never stores
    what a failed check computed (the element-0 read of an out-of-range index, a NaN) into a tensor that
    PyTorch, raising at the failing op, would have left untouched. One sync per device, only when a kernel that
    can flag an error ran since the bits were last read. A replayed ``zyx.jit`` plan does not stop here: its
    writes run, and the error raises at the next read (the capture itself checked)."""
    tensors = [v for v in values if isinstance(v, TensorBase)]
    for t in tensors:
        t.realize()
    for device in {t.device for t in tensors}:
        errorflags.check(device)  # returns at once when nothing flagged ran since the last read


def extern_tensor(name: str, run: Callable[[list[Any]], Any], inputs: Sequence[Any], dtype: Any,
                  shape: Sequence[int], device: Any, pinned: bool | None = None) -> Any:
    """A pending tensor (dense, ``shape``) computed by a kernel outside the IR: ``run(buffers)`` gets the realized
    buffers of ``inputs`` and returns the output buffer (``graph.extern``). Pinned when ``pinned`` says so, by
    default when an input is."""
    shape = tuple(shape)
    node = graph.extern(name, run, [graph.Src(t._data, t._view, t.dtype) for t in inputs], dtype, shape, device)
    node.pinned = any(t.pinned for t in inputs) if pinned is None else pinned
    return tensor_class()(node, View.contiguous(shape), dtype, device)


def from_storage_start(t: Any) -> Any:
    """``t`` laid out dense from its storage's first element, as a kernel handed raw buffers (an
    ``extern_tensor``'s ``run``) reads it: ``t`` itself, or a copy."""
    return t if t._view.is_dense and not t._view.offset else t.clone()


def varsize_class() -> Any:
    """The tensor class of variable size (``VarTensor``, defined with ``Tensor`` in ``zyx.frontend.tensor``)."""
    return TensorBase._varsize


def tensor_class() -> Any:
    """The concrete tensor class (``zyx.frontend.tensor`` must have been imported)."""
    cls = TensorBase._concrete
    if cls is None:
        raise RuntimeError("no concrete tensor class yet: import zyx.frontend.tensor (or zyx) first")
    return cls
