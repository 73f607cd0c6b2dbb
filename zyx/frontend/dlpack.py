"""DLPack exchange with NumPy, PyTorch, JAX and any other library that speaks it (CPU DLPack).

A zyx tensor lives in an OpenCL buffer, so an exchange is always a copy: ``Tensor.__dlpack__`` reads the
values back into a host array and hands out that array's capsule, and ``from_dlpack`` copies a CPU
tensor's memory into a new device buffer. NumPy carries the standard dtypes both ways; for bfloat16 and
the float8 types (which NumPy's DLPack does not know) the capsule is read and written here with ctypes
over the DLPack ABI (``dlpack.h``: ``DLTensor``, ``DLManagedTensor`` and its versioned form).
"""
from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from zyx import dtype as dtypes
from zyx.backend.device import resolve
from zyx.dtype import DType
from zyx.errors import DTypeError
from zyx.frontend.creation import from_host

KDL_CPU = 1  # DLDeviceType of host memory
# DLDataTypeCode values of the types NumPy's DLPack cannot carry (dlpack.h), and the unsigned integers
# NumPy carries the same bytes as
_CODES = {dtypes.bfloat16: 4, dtypes.float8_e4m3: 10, dtypes.float8_e5m2: 12}
_RAW = {1: np.uint8, 2: np.uint16}


class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _Device), ("ndim", ctypes.c_int32), ("dtype", _DataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


_Deleter = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class _Managed(ctypes.Structure):  # DLManagedTensor: the capsule "dltensor"
    _fields_ = [("dl_tensor", _Tensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


class _ManagedVersioned(ctypes.Structure):  # DLManagedTensorVersioned: the capsule "dltensor_versioned"
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p), ("flags", ctypes.c_uint64), ("dl_tensor", _Tensor)]


_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype, _get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
_get_name = ctypes.pythonapi.PyCapsule_GetName
_get_name.restype, _get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
_set_name = ctypes.pythonapi.PyCapsule_SetName
_set_name.restype, _set_name.argtypes = ctypes.c_int, [ctypes.py_object, ctypes.c_char_p]


def _managed(capsule: Any) -> tuple[_Managed | _ManagedVersioned, bytes]:
    name = _get_name(capsule)
    if name not in (b"dltensor", b"dltensor_versioned"):
        raise BufferError(f"not an unused DLPack capsule (its name is {name!r})")
    kind = _Managed if name == b"dltensor" else _ManagedVersioned
    return kind.from_address(_get_pointer(capsule, name)), name


def export_capsule(arr: np.ndarray, dtype: DType, max_version: tuple[int, int] | None) -> Any:
    """The DLPack capsule of the host array ``arr`` holding ``dtype`` values (NumPy keeps it alive)."""
    code = _CODES.get(dtype)
    if code is None:
        return arr.__dlpack__(max_version=max_version)
    raw = np.ascontiguousarray(arr).view(_RAW[dtype.itemsize])
    capsule = raw.__dlpack__(max_version=max_version)
    managed, _ = _managed(capsule)
    managed.dl_tensor.dtype.code = code  # the same bits, named as what they are
    return capsule


def _dtype_of(dt: _DataType) -> DType:
    by_code = {(0, 8): dtypes.int8, (0, 16): dtypes.int16, (0, 32): dtypes.int32, (0, 64): dtypes.int64,
               (1, 8): dtypes.uint8, (1, 16): dtypes.uint16, (1, 32): dtypes.uint32, (1, 64): dtypes.uint64,
               (2, 16): dtypes.float16, (2, 32): dtypes.float32, (2, 64): dtypes.float64, (6, 8): dtypes.bool_}
    by_code.update({(code, 8 * d.itemsize): d for d, code in _CODES.items()})
    found = by_code.get((dt.code, dt.bits))
    if found is None or dt.lanes != 1:
        raise DTypeError(f"from_dlpack: DLPack dtype (code {dt.code}, {dt.bits} bits, {dt.lanes} lanes) has no zyx "
                         f"equivalent; expected one of {', '.join(d.name for d in dtypes.ALL_DTYPES)}")
    return found


def _copy_from_capsule(capsule: Any) -> tuple[np.ndarray, DType]:
    """A host copy of a CPU capsule's tensor and its dtype; the capsule is consumed (its deleter run)."""
    managed, name = _managed(capsule)
    t = managed.dl_tensor
    if t.device.device_type != KDL_CPU:
        raise BufferError(f"from_dlpack reads CPU tensors; this one is on DLPack device type {t.device.device_type}")
    dtype = _dtype_of(t.dtype)
    shape = tuple(t.shape[i] for i in range(t.ndim))
    itemsize = dtype.itemsize
    if t.strides:
        strides = tuple(t.strides[i] * itemsize for i in range(t.ndim))
    else:  # NULL strides: row-major
        strides = tuple(int(np.prod(shape[i + 1:], dtype=np.int64)) * itemsize for i in range(t.ndim))
    if 0 in shape:
        host = np.empty(shape, dtype=dtype.numpy)
    else:
        lo = sum((d - 1) * s for d, s in zip(shape, strides) if s < 0)
        hi = sum((d - 1) * s for d, s in zip(shape, strides) if s > 0)
        window = (ctypes.c_char * (hi - lo + itemsize)).from_address(t.data + t.byte_offset + lo)
        host = np.ndarray(shape, dtype=dtype.numpy, buffer=window, offset=-lo, strides=strides).copy()
    _set_name(capsule, b"used_dltensor" if name == b"dltensor" else b"used_dltensor_versioned")
    if managed.deleter:
        _Deleter(managed.deleter)(ctypes.addressof(managed))
    return host, dtype


def host_copy(obj: Any) -> tuple[np.ndarray, DType | None]:
    """A host array holding ``obj``'s values (a DLPack producer on the CPU) and its zyx dtype (None: the
    array's own)."""
    if isinstance(obj, np.ndarray):  # NumPy itself (ml_dtypes arrays included, which its DLPack rejects)
        return obj, None
    if not hasattr(obj, "__dlpack__"):
        raise TypeError(f"from_dlpack expects an object with __dlpack__ (a NumPy array, a torch or JAX tensor), "
                        f"got {type(obj).__name__}")
    device_type = obj.__dlpack_device__()[0] if hasattr(obj, "__dlpack_device__") else KDL_CPU
    if int(device_type) != KDL_CPU:
        raise BufferError(f"from_dlpack reads CPU tensors; this {type(obj).__name__} is on DLPack device type "
                          f"{int(device_type)} (move it to the CPU first, e.g. t.cpu())")
    try:
        return np.from_dlpack(obj), None
    except (BufferError, RuntimeError, TypeError):  # a dtype NumPy's DLPack lacks (bfloat16, float8)
        arr, dtype = _copy_from_capsule(obj.__dlpack__())
        return arr, dtype


def from_dlpack(obj: Any, device: Any = None) -> Any:
    """A zyx tensor holding a copy of ``obj``, any CPU DLPack producer (NumPy, PyTorch, JAX, ...), on
    ``device`` (the default device when None). A zyx tensor is returned as it is."""
    from zyx.frontend.base import tensor_class

    if isinstance(obj, tensor_class()):
        return obj
    arr, dtype = host_copy(obj)
    return from_host(arr if arr.flags.c_contiguous else arr.copy(order="C"), dtype, resolve(device))
