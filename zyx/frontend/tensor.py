"""The user-facing ``Tensor``: a device buffer seen through a strided ``View``.

The class holds the core (data, view, dtype, device, readback, realize, to, cast,
contiguous); its operators and methods come from the mixins it is composed of, one
module per family (elementwise, reduce, movement, contract ops, softmax, sorting).
Movement ops (permute, expand, slicing, view-compatible reshape, squeeze/unsqueeze,
flatten) only make a new View over the same buffer; ``contiguous()``, casts and
transfers run generated kernels. No OpenCL code lives here: kernels come from
``zyx.codegen`` and memory from ``zyx.backend``.

``VarTensor``, a tensor of variable size (``frontend.varsize``), is composed here too: ``Tensor`` with
its movement, elementwise and compute methods replaced by their variable forms (``varsize_shapes``,
``varsize_compute``) and its shape read at the bound values.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from zyx import dtype as dtypes
from zyx import graph
from zyx.backend import sync_hooks, transfer
from zyx.backend.device import Device, resolve
from zyx.backend.pool import Buffer
from zyx.dtype import DType, to_dtype
from zyx.errors import AutogradError, DeviceError, DTypeError, ShapeError
from zyx.frontend import capture, dlpack
from zyx.frontend.autograd import engine as autograd
from zyx.frontend.autograd.engine import AutogradMixin
from zyx.frontend.autograd.rules import record_cast
from zyx.frontend.base import check_writable
from zyx.frontend.composites import CompositesMixin
from zyx.frontend.contract_ops import ContractOpsMixin, contiguize
from zyx.frontend.einsum import EinsumMixin
from zyx.frontend.elementwise import ElementwiseMixin
from zyx.frontend.elementwise_math import ElementwiseMathMixin
from zyx.frontend.indexing import IndexingMixin
from zyx.frontend.inplace import InplaceMixin
from zyx.frontend.movement import MovementMixin
from zyx.frontend.reduce import ReduceMixin
from zyx.frontend.shape_ops import ShapeOpsMixin
from zyx.frontend.softmax import SoftmaxMixin
from zyx.frontend.sorting import SortingMixin
from zyx.frontend.varsize import _taint
from zyx.frontend.varsize_compute import VarComputeMixin, VarElementwiseMixin
from zyx.frontend.varsize_shapes import VarEntryMixin, VarMovementMixin
from zyx.ir.view import View, normalize_dim


class Tensor(IndexingMixin, CompositesMixin, ElementwiseMixin, ElementwiseMathMixin, ReduceMixin, VarEntryMixin,
             MovementMixin, ContractOpsMixin, SoftmaxMixin, SortingMixin, ShapeOpsMixin, EinsumMixin, InplaceMixin,
             AutogradMixin, concrete=True):
    """An n-dimensional array on an OpenCL device (see API.md)."""

    __slots__ = ("_data", "_view", "_dtype", "_device", "_ag", "__weakref__")
    __array_priority__ = 1000  # numpy defers binary ops to Tensor

    def __init__(self, buf: Buffer | graph.LazyNode, view: View, dtype: DType, device: Device) -> None:
        # _data: the lazy node this tensor views (a realized buffer or pending work)
        self._data = buf if isinstance(buf, graph.LazyNode) else graph.from_buffer(buf, dtype, device)
        self._view = view
        self._dtype = dtype
        self._device = device
        self._ag: autograd.AutogradMeta | None = None  # gradient state, when it requires grad

    @property
    def _buf(self) -> Buffer:
        """The realized device buffer, for code that reads or writes it directly.

        Runs pending work producing it, and first runs every pending reader of the
        buffer, so an in-place write through it can never change what they compute.
        """
        buf = graph.realize(self._data)
        graph.flush_readers(self._data)
        self._data.version += 1  # the caller writes into it: saved values of autograd see the change
        return buf

    def _realized(self) -> Buffer:
        """The realized buffer for reading (pending readers of it keep fusing)."""
        return graph.realize(self._data)

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
        graph.realize(self._data)
        return self

    def _host_bytes(self) -> np.ndarray:
        """This tensor's elements, dense row-major, as raw bytes on the host."""
        v = self._view
        size = self._dtype.itemsize
        if v.is_dense:
            buf = self._realized()  # launch pending work first: its flags are checked before reading
            sync_hooks.run(self._device)
            return transfer.read(buf, v.numel * size, v.offset * size)
        dense = graph.copy(graph.Src(self._data, v, self._dtype), v.shape, self._device, store=True)
        buf = graph.realize(dense)  # a raw-bits copy of the view
        sync_hooks.run(self._device)
        return transfer.read(buf, v.numel * size)

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
        if self._view.numel != 1:
            raise ShapeError(f"item(): a tensor with {self.numel()} elements cannot be converted to a "
                             "Python scalar (expected exactly one element)")
        # one element lives at the view's offset whatever its strides: read it straight into an array of
        # its dtype (a scalar's readback is fixed host time, paid on every float(x.sum()))
        buf = self._realized()
        sync_hooks.run(self._device)
        value = np.empty(1, self._dtype.numpy)
        transfer.read_into(buf, value, self._view.offset * self._dtype.itemsize)
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
        if copy is False:
            raise ValueError("a zyx tensor lives in device memory, so converting it to NumPy always copies; "
                             "use np.asarray(x) or x.numpy() (copy=False cannot be honoured)")
        arr = self.numpy()
        return arr if dtype is None else arr.astype(dtype)

    def __dlpack__(self, *, stream: Any = None, max_version: tuple[int, int] | None = None,
                   dl_device: tuple[int, int] | None = None, copy: bool | None = None) -> Any:
        """A CPU DLPack capsule of a host copy of the values (``torch.from_dlpack(x)``, ``np.from_dlpack(x)``).
        The copy is made here: ``copy=False`` cannot be honoured, and the only device offered is the CPU."""
        if copy is False:
            raise BufferError("a zyx tensor lives in device memory: DLPack exchange copies it to the host "
                              "(copy=False cannot be honoured)")
        if dl_device is not None and tuple(dl_device) != (dlpack.KDL_CPU, 0):
            raise BufferError(f"a zyx tensor is exported to the CPU (DLPack device (1, 0)), not {tuple(dl_device)}")
        if stream is not None:
            raise BufferError("a zyx tensor is exported as a CPU tensor, which takes no stream (stream=None)")
        return dlpack.export_capsule(self.numpy(), self._dtype, max_version)

    def __dlpack_device__(self) -> tuple[int, int]:
        """(1, 0): DLPack consumers get a CPU copy (see ``__dlpack__``)."""
        return (dlpack.KDL_CPU, 0)

    # -- conversion and copies --------------------------------------------------
    def to(self, target: Any) -> Tensor:
        """A copy on another device (pinned there, see ``pinned``; lazy: the values move when it is
        used, ``graph.on_device``), or with another dtype (``self`` if nothing changes)."""
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
        # lazy: a transfer node, realized (this device's work first, then the copy) when it is needed
        src = graph.on_device(graph.Src(self._data, self._view, self._dtype), device)
        moved = Tensor(src.base, src.view, self._dtype, device)
        moved._data.pinned = True
        if self._ag is not None and autograd.is_grad_enabled():
            source = self._device
            autograd.record("to_copy", moved, [self], lambda g: (g.to(source),))
        return moved

    @property
    def pinned(self) -> bool:
        """Whether kernels using this tensor run on its device, whatever their other operands.

        A tensor is pinned when its device was named (``device=`` at creation, ``.to(device)``)
        or when it was computed from a pinned tensor. A kernel with operands on several devices
        runs on the device holding most of its input bytes among its pinned operands' devices (the
        one pinned device, when only one is), or among all of them when none is pinned. Either way
        the other inputs are copied over (a transfer node: ``graph.on_device``).
        """
        return self._data.pinned

    def cast(self, dtype: Any) -> Tensor:
        """This tensor converted to ``dtype`` (PyTorch conversion semantics; README lists edge cases)."""
        dtype = to_dtype(dtype)
        if dtype is self._dtype:
            return self
        self._device.check_dtype(dtype)
        node = graph.cast(graph.Src(self._data, self._view, self._dtype), dtype, self.shape, self._device)
        out = Tensor(node, View.contiguous(self.shape), dtype, self._device)
        if self._ag is not None and autograd.is_grad_enabled():
            record_cast(self, out)
        return out

    def type(self, dtype: Any) -> Tensor:
        """Alias of ``cast``."""
        return self.cast(dtype)

    # PyTorch's dtype shorthands (``x.float()``, ``x.long()``, ...): ``cast`` to the dtype they name
    def half(self) -> Tensor:
        """``cast(float16)``."""
        return self.cast(dtypes.float16)

    def bfloat16(self) -> Tensor:
        """``cast(bfloat16)``."""
        return self.cast(dtypes.bfloat16)

    def float(self) -> Tensor:
        """``cast(float32)``."""
        return self.cast(dtypes.float32)

    def double(self) -> Tensor:
        """``cast(float64)``."""
        return self.cast(dtypes.float64)

    def char(self) -> Tensor:
        """``cast(int8)``."""
        return self.cast(dtypes.int8)

    def byte(self) -> Tensor:
        """``cast(uint8)``."""
        return self.cast(dtypes.uint8)

    def short(self) -> Tensor:
        """``cast(int16)``."""
        return self.cast(dtypes.int16)

    def int(self) -> Tensor:
        """``cast(int32)``."""
        return self.cast(dtypes.int32)

    def long(self) -> Tensor:
        """``cast(int64)``."""
        return self.cast(dtypes.int64)

    def bool(self) -> Tensor:
        """``cast(bool)``."""
        return self.cast(dtypes.bool_)

    def bitcast(self, dtype: Any) -> Tensor:
        """The same bytes read as another dtype of the same itemsize (no copy)."""
        dtype = to_dtype(dtype)
        if dtype.itemsize != self._dtype.itemsize:
            raise DTypeError(f"bitcast from {self._dtype.name} ({self._dtype.itemsize} bytes) to {dtype.name} "
                             f"({dtype.itemsize} bytes): expected a dtype of the same itemsize")
        self._device.check_dtype(dtype)
        self._realized()
        return Tensor(self._data, self._view, dtype, self._device)  # one node per buffer: its readers are all

    def contiguous(self) -> Tensor:
        """A dense row-major tensor with these values (``self`` when already dense)."""
        if self._view.is_contiguous:
            return self
        return contiguize(self)  # the contiguize contract kernel

    def clone(self) -> Tensor:
        """A copy of the values in a new dense buffer."""
        view = self._view  # not ``shape``: a tensor of variable size is copied at its bound values
        node = graph.copy(graph.Src(self._data, view, self._dtype), view.shape, self._device, store=True)
        out = Tensor(node, View.contiguous(view.shape), self._dtype, self._device)
        if self._ag is not None and autograd.is_grad_enabled():
            autograd.record("clone", out, [self], lambda g: (g,))
        return out

    def is_contiguous(self) -> bool:
        """Whether the view is dense row-major from the start of its buffer."""
        return self._view.is_contiguous

    def _assign(self, value: Tensor) -> None:
        """Make ``value``'s (lazy) values this tensor's own, in place and without a copy kernel: the
        optimizers' parameter update. The tensor is rebound to ``value``'s node, whose version is set
        past the old one, so a pending backward that saved this tensor raises as after any in-place
        write. Views taken earlier keep the old storage and values. ``requires_grad``/``grad`` stay."""
        if value.shape != self.shape or value._dtype is not self._dtype or value._device is not self._device:
            raise ShapeError(f"_assign: a {value._dtype.name}{list(value.shape)} value on {value._device} "
                             f"into a {self._dtype.name}{list(self.shape)} tensor on {self._device}: expected "
                             "the same shape, dtype and device")
        version = max(self._data.version + 1, value._data.version)
        if capture.is_open():  # a capture replays the rebinding (zyx.jit)
            capture.note_assign(self, self._data, self._view)
        self._data, self._view = value._data, value._view
        self._data.version = version

    def _with_view(self, view: View) -> Tensor:
        """This tensor's data seen through another view (the movement mixin's primitive)."""
        return Tensor(self._data, view, self._dtype, self._device)


class VarTensor(VarMovementMixin, VarElementwiseMixin, VarComputeMixin, Tensor, varsize=True):
    """A tensor with variable-size axes (``frontend.varsize``): ``_data`` is computed at the
    static extents of ``_pview``; ``_vax[d]`` is the ``VDim`` of axis ``d`` (None: static)."""

    __slots__ = ("_pview", "_vax")

    @property  # type: ignore[override]
    def _view(self) -> View:
        """The view at the bound values (a read of them: reported, so a capture keys by the values)."""
        v = self._pview
        for d, vd in enumerate(self._vax):
            if vd is not None:
                for var, _ in vd.terms:
                    _taint(var)
                v = v.slice(d, 0, vd.value, 1)
        return v

    @_view.setter
    def _view(self, v: View) -> None:
        check_writable(self, "rebinding its view")

    @property
    def requires_grad(self) -> bool:
        return self._ag is not None

    @requires_grad.setter
    def requires_grad(self, flag: bool) -> None:  # ``x.requires_grad = True`` as ``requires_grad_``
        self.requires_grad_(flag)

    def requires_grad_(self, requires_grad: bool = True) -> VarTensor:
        if requires_grad:
            raise AutogradError("a tensor of variable size cannot require grad (expected a static tensor: "
                                "slice a leaf that requires grad instead; that slice is taken by value)")
        return self

    def _assign(self, value: Tensor) -> None:
        check_writable(self, "_assign")

    @property
    def shape(self) -> tuple:
        ps = self._pview.shape
        return tuple(ps[d] if vd is None else vd.public() for d, vd in enumerate(self._vax))

    @property
    def ndim(self) -> int:
        return len(self._vax)

    def dim(self) -> int:
        return len(self._vax)

    def __len__(self) -> int:
        if not self._vax:
            raise TypeError("len() of a 0-d tensor")
        return int(self.shape[0])

    def realize(self) -> VarTensor:
        """Run the pending work (at the static extents) and return this tensor."""
        graph.realize(self._data)
        return self

    def numpy(self) -> Any:
        """A NumPy copy of the values at the bound sizes (read at the static extents, then cut on the
        host: one readback kernel serves every value)."""
        arr = Tensor.numpy(self.phys())
        cut = []
        for vd in self._vax:
            if vd is None:
                cut.append(slice(None))
            else:
                for var, _ in vd.terms:
                    _taint(var)
                cut.append(slice(0, vd.value))
        return np.ascontiguousarray(arr[tuple(cut)])

    def phys(self) -> Tensor:
        """The data at the static extents (a plain tensor; elements past a size are unspecified)."""
        return Tensor(self._data, self._pview, self._dtype, self._device)
