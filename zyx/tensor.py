"""The user-facing ``Tensor``: a device buffer seen through a strided ``View``.

Movement ops (permute, expand, slicing, view-compatible reshape, squeeze/unsqueeze,
flatten) only make a new View over the same buffer; ``contiguous()``, casts and
transfers run generated kernels. No OpenCL code lives here: kernels come from
``zyx.codegen`` and memory from ``zyx.backend``.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from zyx import dtype as dtypes
from zyx import lazy
from zyx.backend import transfer
from zyx.backend.device import Device, resolve
from zyx.backend.pool import Buffer
from zyx.codegen import basic_kernels
from zyx.dtype import DType, to_dtype
from zyx.errors import DeviceError, DTypeError, IndexOutOfRange, ShapeError
from zyx.ir.view import View, normalize_dim


def _shape_arg(shape: Sequence[Any], what: str = "shape") -> tuple[int, ...]:
    """``f(2, 3)`` and ``f((2, 3))`` both give ``(2, 3)``; sizes must be ints."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    out = []
    for s in shape:
        if isinstance(s, bool) or not isinstance(s, (int, np.integer)):
            raise ShapeError(f"{what} entries must be ints, got {s!r} in {tuple(shape)}")
        out.append(int(s))
    return tuple(out)


class Tensor:
    """An n-dimensional array on an OpenCL device (see API.md)."""

    __slots__ = ("_data", "_view", "_dtype", "_device", "__weakref__")
    __array_priority__ = 1000  # numpy defers binary ops to Tensor

    def __init__(self, buf: Buffer | lazy.LazyNode, view: View, dtype: DType, device: Device) -> None:
        # _data: the lazy node this tensor views (a realized buffer or pending work)
        self._data = buf if isinstance(buf, lazy.LazyNode) else lazy.from_buffer(buf, dtype, device)
        self._view = view
        self._dtype = dtype
        self._device = device

    @property
    def _buf(self) -> Buffer:
        """The realized device buffer, for code that reads or writes it directly.

        Runs pending work producing it, and first runs every pending reader of the
        buffer, so an in-place write through it can never change what they compute.
        """
        buf = lazy.realize(self._data)
        lazy.pending_readers_flush(buf)
        return buf

    @_buf.setter
    def _buf(self, buf: Buffer) -> None:
        pinned = self._data.pinned
        self._data = lazy.from_buffer(buf, self._dtype, self._device)
        self._data.pinned = pinned

    def _realized(self) -> Buffer:
        """The realized buffer for reading (pending readers of it keep fusing)."""
        return lazy.realize(self._data)

    # -- basic properties ---------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return self._view.shape

    @property
    def dtype(self) -> DType:
        return self._dtype

    @property
    def device(self) -> Device:
        return self._device

    @property
    def ndim(self) -> int:
        return self._view.ndim

    def dim(self) -> int:
        """The number of dimensions (alias of ``ndim``)."""
        return self._view.ndim

    def numel(self) -> int:
        """The number of elements."""
        return self._view.numel

    def size(self, dim: int | None = None) -> tuple[int, ...] | int:
        """The shape, or the size of one dim."""
        if dim is None:
            return self.shape
        return self.shape[normalize_dim(dim, self.ndim)]

    def stride(self) -> tuple[int, ...]:
        """Element strides of this tensor's view (0 on broadcast dims)."""
        return self._view.strides

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    # -- realization and readback ---------------------------------------------
    def realize(self) -> Tensor:
        """Run any pending work producing this tensor and return it."""
        lazy.realize(self._data)
        return self

    def _host_bytes(self) -> np.ndarray:
        """This tensor's elements, dense row-major, as raw bytes on the host."""
        from zyx.backend import sync_hooks  # device-side error flags surface at readback

        buf = self._realized()  # launch pending work first: its flags are checked before reading
        sync_hooks.run(self._device)
        v = self._view
        size = self._dtype.itemsize
        if v.is_dense:
            return transfer.read(buf, v.numel * size, v.offset * size)
        dense = basic_kernels.copy_cast(self._device, buf, v, self._dtype, self._dtype)
        return transfer.read(dense, v.numel * size)

    def numpy(self) -> np.ndarray:
        """A NumPy copy of the values (ml_dtypes arrays for bfloat16 and float8)."""
        return self._host_bytes().view(self._dtype.numpy).reshape(self.shape)

    def tolist(self) -> Any:
        """The values as (nested) Python lists, or a scalar for a 0-d tensor."""
        arr = self.numpy()
        if self._dtype.emulated:
            arr = arr.astype(np.float32)
        return arr.tolist()

    def item(self) -> Any:
        """The single value of a one-element tensor as a Python scalar."""
        if self.numel() != 1:
            raise ShapeError(f"item(): a tensor with {self.numel()} elements cannot be converted to a "
                             "Python scalar (expected exactly one element)")
        value = self.numpy().reshape(())
        if self._dtype.emulated:
            value = value.astype(np.float32)
        return value.item()

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        if not (self._dtype.is_int or self._dtype.is_bool):
            raise DTypeError(f"only integer tensors can be used as an index, not {self._dtype.name}")
        return int(self.item())

    def __bool__(self) -> bool:
        if self.numel() != 1:
            raise ShapeError(f"the truth value of a tensor with {self.numel()} elements is ambiguous "
                             "(expected exactly one element; use any() or all())")
        return bool(self.item())

    def __repr__(self) -> str:
        arr = self.numpy()
        body = np.array2string(arr, separator=", ", prefix="tensor(", threshold=1000)
        suffix = "" if self._dtype in (dtypes.float32, dtypes.int64, dtypes.bool_) else f", dtype={self._dtype!r}"
        return f"tensor({body}{suffix})"

    __str__ = __repr__

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        arr = self.numpy()
        return arr if dtype is None else arr.astype(dtype)

    # -- conversion and copies --------------------------------------------------
    def to(self, target: Any) -> Tensor:
        """A copy on another device (pinned there, see ``pinned``), or with another dtype (``self`` if
        nothing changes)."""
        if isinstance(target, Device) or (isinstance(target, str) and target.lower().startswith("opencl:")):
            return self._to_device(resolve(target))
        try:
            dt = to_dtype(target)
        except DTypeError:
            if not isinstance(target, str):
                raise
            try:
                device = resolve(target)
            except DeviceError:
                raise DTypeError(f"to({target!r}): neither a zyx dtype name nor a device; expected a dtype "
                                 f"(e.g. 'float32') or a device ('opencl:P:D' or a name substring)") from None
            return self._to_device(device)
        return self.cast(dt)

    def _to_device(self, device: Device) -> Tensor:
        if device is self._device:
            self._data.pinned = True
            return self
        device.check_dtype(self._dtype)
        host = self._host_bytes()
        moved = Tensor(transfer.upload(device, host), View.contiguous(self.shape), self._dtype, device)
        moved._data.pinned = True
        return moved

    @property
    def pinned(self) -> bool:
        """Whether kernels using this tensor run on its device, whatever their other operands.

        A tensor is pinned when its device was named (``device=`` at creation, ``.to(device)``)
        or when it was computed from a pinned tensor. A kernel with operands on several devices
        runs on its first pinned operand's device; with none pinned, on the device holding most
        of its input bytes. Either way the other inputs are copied over.
        """
        return self._data.pinned

    def cast(self, dtype: Any) -> Tensor:
        """This tensor converted to ``dtype`` (PyTorch conversion semantics; README lists edge cases)."""
        dtype = to_dtype(dtype)
        if dtype is self._dtype:
            return self
        self._device.check_dtype(dtype)
        node = lazy.cast(lazy.Src(self._data, self._view, self._dtype), dtype, self.shape, self._device)
        return Tensor(node, View.contiguous(self.shape), dtype, self._device)

    def type(self, dtype: Any) -> Tensor:
        """Alias of ``cast``."""
        return self.cast(dtype)

    def bitcast(self, dtype: Any) -> Tensor:
        """The same bytes read as another dtype of the same itemsize (no copy)."""
        dtype = to_dtype(dtype)
        if dtype.itemsize != self._dtype.itemsize:
            raise DTypeError(f"bitcast from {self._dtype.name} ({self._dtype.itemsize} bytes) to {dtype.name} "
                             f"({dtype.itemsize} bytes): expected a dtype of the same itemsize")
        self._device.check_dtype(dtype)
        return Tensor(self._realized(), self._view, dtype, self._device)

    def contiguous(self) -> Tensor:
        """A dense row-major tensor with these values (``self`` when already dense)."""
        if self._view.is_contiguous:
            return self
        from zyx.contracts import ops  # the contiguize contract kernel

        return ops.contiguize(self)

    def clone(self) -> Tensor:
        """A copy of the values in a new dense buffer."""
        node = lazy.copy(lazy.Src(self._data, self._view, self._dtype), self.shape, self._device, store=True)
        return Tensor(node, View.contiguous(self.shape), self._dtype, self._device)

    def is_contiguous(self) -> bool:
        """Whether the view is dense row-major from the start of its buffer."""
        return self._view.is_contiguous

    # -- movement (views) ---------------------------------------------------------
    def _with_view(self, view: View) -> Tensor:
        return Tensor(self._data, view, self._dtype, self._device)

    def reshape(self, *shape: Any) -> Tensor:
        """The same values in another shape (one ``-1`` allowed); a view when strides allow."""
        shape = _infer_shape(_shape_arg(shape), self.numel(), self.shape)
        view = self._view.reshape(shape)
        if view is not None:
            return self._with_view(view)
        node = lazy.copy(lazy.Src(self._data, self._view, self._dtype), self.shape, self._device)
        return Tensor(node, View.contiguous(shape), self._dtype, self._device)

    def view(self, *shape: Any) -> Tensor:
        """Alias of ``reshape``."""
        return self.reshape(*shape)

    def expand(self, *shape: Any) -> Tensor:
        """Broadcast size-1 dims to ``shape`` (``-1`` keeps a dim) without copying."""
        return self._with_view(self._view.expand(_shape_arg(shape)))

    def broadcast_to(self, *shape: Any) -> Tensor:
        """Alias of ``expand``."""
        return self.expand(*shape)

    def permute(self, *dims: Any) -> Tensor:
        """Reorder the dims."""
        return self._with_view(self._view.permute(_shape_arg(dims, "dims")))

    def transpose(self, dim0: int, dim1: int) -> Tensor:
        """Swap two dims."""
        a, b = normalize_dim(dim0, self.ndim), normalize_dim(dim1, self.ndim)
        order = list(range(self.ndim))
        if self.ndim:
            order[a], order[b] = order[b], order[a]
        return self._with_view(self._view.permute(tuple(order)))

    @property
    def T(self) -> Tensor:  # PyTorch's name
        if self.ndim > 2:
            raise ShapeError(f".T expects a tensor of rank <= 2, got rank {self.ndim}; use permute")
        return self._with_view(self._view.permute(tuple(reversed(range(self.ndim)))))

    def squeeze(self, dim: int | Sequence[int] | None = None) -> Tensor:
        """Drop size-1 dims (all of them, or those named in ``dim``)."""
        if dim is None:
            dims = tuple(range(self.ndim))
        else:
            dims = tuple(normalize_dim(d, self.ndim) for d in ((dim,) if isinstance(dim, int) else dim))
        return self._with_view(self._view.squeeze(dims))

    def unsqueeze(self, dim: int) -> Tensor:
        """Insert a size-1 dim at ``dim`` (in ``[-ndim-1, ndim]``)."""
        d = normalize_dim(dim, self.ndim + 1)
        return self._with_view(self._view.unsqueeze(d))

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> Tensor:
        """Merge dims ``start_dim..end_dim`` into one."""
        if self.ndim == 0:
            return self.reshape(1)
        s, e = normalize_dim(start_dim, self.ndim), normalize_dim(end_dim, self.ndim)
        if s > e:
            raise ShapeError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim}")
        shape = self.shape[:s] + (math.prod(self.shape[s:e + 1]),) + self.shape[e + 1:]
        return self.reshape(shape)

    def narrow(self, dim: int, start: int, length: int) -> Tensor:
        """Elements ``start .. start+length`` of ``dim`` (a view)."""
        d = normalize_dim(dim, self.ndim)
        size = self.shape[d]
        if start < 0:
            start += size
        if not (0 <= start <= size) or length < 0 or start + length > size:
            raise IndexOutOfRange(f"narrow: start {start} and length {length} exceed dim {d} of size {size}")
        return self._with_view(self._view.slice(d, start, start + length, 1))

    def __getitem__(self, index: Any) -> Tensor:
        return self._with_view(basic_index(self._view, index))

    def __iter__(self) -> Iterable[Tensor]:
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self.shape[0]))

    # -- contract ops (FKC kernels, zyx/contracts/ops.py) ------------------------
    def __setitem__(self, index: Any, value: Any) -> None:
        """``x[index] = value`` in place (value broadcast to the indexed view)."""
        from zyx.contracts import ops
        ops.setitem(self, index, value)

    def flip(self, *dims: Any) -> Tensor:
        """Reverse the order along ``dims`` (``x.flip(0, 1)`` or ``x.flip((0, 1))``)."""
        from zyx.contracts import ops
        return ops.flip(self, dims[0] if len(dims) == 1 else dims)

    def roll(self, shifts: Any, dims: Any = None) -> Tensor:
        """Shift cyclically along ``dims`` (flattened when None), Python-style modulo."""
        from zyx.contracts import ops
        return ops.roll(self, shifts, dims)

    def triu(self, diagonal: int = 0) -> Tensor:
        """Keep ``j >= i + diagonal`` of the last two axes, zero elsewhere."""
        from zyx.contracts import ops
        return ops.triu(self, diagonal)

    def tril(self, diagonal: int = 0) -> Tensor:
        """Keep ``j <= i + diagonal`` of the last two axes, zero elsewhere."""
        from zyx.contracts import ops
        return ops.tril(self, diagonal)

    def masked_fill(self, mask: Tensor, value: Any) -> Tensor:
        """``value`` where the bool ``mask`` (broadcast to this shape) is True."""
        from zyx.contracts import ops
        return ops.masked_fill(self, mask, value)

    def cumsum(self, dim: int) -> Tensor:
        """Running sum along ``dim`` (float types; 16-bit floats accumulate in float32)."""
        from zyx.contracts import ops
        return ops.cumsum(self, dim)


def _infer_shape(shape: tuple[int, ...], numel: int, old: tuple[int, ...]) -> tuple[int, ...]:
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


def basic_index(view: View, index: Any) -> View:
    """The view selected by a basic index: ints, slices (any non-zero step), None and ``...``."""
    items = index if isinstance(index, tuple) else (index,)
    if sum(1 for it in items if it is Ellipsis) > 1:
        raise ShapeError("an index can only have a single ellipsis ('...')")
    consumed = sum(1 for it in items if it is not None and it is not Ellipsis)
    if consumed > view.ndim:
        raise IndexOutOfRange(f"too many indices for a tensor of rank {view.ndim}: got {consumed}")
    expanded: list[Any] = []
    for it in items:
        if it is Ellipsis:
            expanded.extend([slice(None)] * (view.ndim - consumed))
        else:
            expanded.append(it)
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
        elif isinstance(it, (int, np.integer)) and not isinstance(it, bool):
            size = view.shape[dim]
            i = int(it)
            if not -size <= i < size:
                raise IndexOutOfRange(f"index {i} is out of bounds for dim {dim} with size {size}")
            view = view.select(dim, i % size)
        else:
            raise ShapeError(f"unsupported index {it!r}: only ints, slices, None and ... are supported")
    return view
