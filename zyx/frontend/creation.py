"""Tensor creation: from host data, constants, ranges and the counter-based generator."""
from __future__ import annotations

import functools
import math
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from zyx import dtype as dtypes
from zyx import graph
from zyx.backend import transfer
from zyx.backend.device import Device, resolve
from zyx.dtype import DType, to_dtype
from zyx.errors import DTypeError, OpDTypeError, ShapeError
from zyx.frontend import capture
from zyx.frontend.args import shape_arg
from zyx.frontend.base import TensorBase, tensor_class, varsize_class
from zyx.ir.variable import BOUND
from zyx.ir.view import View
from zyx.kernels.random import random_bits

Tensor = TensorBase  # annotations and isinstance checks; results are built by ``tensor_class()``


def _grad_leaf(fn: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """Give a creation function the keyword ``requires_grad=False`` (API.md: every creation function):
    the new tensor is a leaf that requires grad when it is True (floating dtypes only)."""

    @functools.wraps(fn)
    def create(*args: Any, requires_grad: bool = False, **kwargs: Any) -> Tensor:
        t = fn(*args, **kwargs)
        if requires_grad:
            t.requires_grad_(True)
        return t

    return create


def _host_array(data: Any, keep_python_precision: bool = False) -> np.ndarray:
    """``data`` as a NumPy array with PyTorch's default dtypes for Python values.

    With ``keep_python_precision`` (an explicit dtype follows) Python floats stay float64
    and ints stay exact, so the one conversion to the requested dtype rounds once.
    """
    if isinstance(data, Tensor):
        return data.numpy()
    if isinstance(data, np.ndarray):
        return data
    if isinstance(data, np.generic):
        return np.asarray(data)
    try:
        arr = np.array(data)
    except ValueError as exc:
        raise ShapeError(f"tensor(): ragged nested sequence, every row must have the same length ({exc})") from None
    if arr.dtype == object:
        if arr.size and all(isinstance(v, int) for v in arr.flat):
            raise DTypeError("tensor(): integer values beyond the 64-bit range; expected ints in "
                             f"[{np.iinfo(np.int64).min}, {np.iinfo(np.uint64).max}]")
        raise ShapeError("tensor(): ragged or mixed nested sequence; expected a rectangular nest of numbers")
    if keep_python_precision:
        return arr
    if arr.dtype.kind == "f":
        arr = arr.astype(np.float32)  # Python floats default to float32, as in PyTorch
    elif arr.dtype.kind in "iu":
        if arr.dtype == np.uint64 and arr.size and arr.max() > np.iinfo(np.int64).max:
            raise DTypeError(f"tensor(): value {int(arr.max())} overflows int64, the default integer dtype; "
                             "pass dtype=zyx.uint64")
        arr = arr.astype(np.int64)
    return arr


def _pinned_if(t: Tensor, explicit: bool) -> Tensor:
    """``t``, pinned to its device when the caller named that device (see ``Tensor.pinned``)."""
    if explicit:
        t._data.pinned = True
    return t


def pinned_as(t: Tensor, model: Tensor) -> Tensor:
    """``t`` (a helper tensor zyx made on ``model``'s device) pinned exactly when ``model`` is."""
    t._data.pinned = model.pinned
    return t


def host_cast(arr: np.ndarray, dtype: DType) -> np.ndarray:
    """``arr`` converted to ``dtype`` on the host as a device cast would (and PyTorch does):
    float64 goes to 16/8-bit floats through float32, so there is one rounding rule."""
    with np.errstate(over="ignore", invalid="ignore"):
        if arr.dtype == np.float64 and dtype.is_float and dtype.itemsize <= 2:
            arr = arr.astype(np.float32)
        return arr.astype(dtype.numpy)


def from_host(arr: np.ndarray, dtype: DType | None, device: Device) -> Tensor:
    """Upload a host array (converted to ``dtype`` on the host if given)."""
    if dtype is None:
        try:
            dtype = to_dtype(arr.dtype)
        except DTypeError:
            raise DTypeError(f"NumPy dtype {arr.dtype} has no zyx equivalent; expected one of "
                             f"{', '.join(d.name for d in dtypes.ALL_DTYPES)}") from None
    elif arr.dtype != dtype.numpy:
        arr = host_cast(arr, dtype)
    device.check_dtype(dtype)
    return tensor_class()(transfer.upload(device, arr), View.contiguous(arr.shape), dtype, device)


@_grad_leaf
def tensor(data: Any, dtype: Any = None, device: Any = None) -> Tensor:
    """A tensor holding a copy of ``data`` (a scalar, nested lists or a NumPy array)."""
    dev = resolve(device)
    dt = None if dtype is None else to_dtype(dtype)
    return _pinned_if(from_host(_host_array(data, keep_python_precision=dt is not None), dt, dev), device is not None)


@_grad_leaf
def from_numpy(array: np.ndarray, device: Any = None) -> Tensor:
    """A tensor holding a copy of a NumPy array, its dtype kept."""
    if not isinstance(array, np.ndarray):
        raise DTypeError(f"from_numpy expects a numpy.ndarray, got {type(array).__name__}")
    return _pinned_if(from_host(array, None, resolve(device)), device is not None)


def _value_bits(value: Any, dtype: DType) -> np.ndarray:
    """One element of ``dtype`` holding ``value``, refusing integer overflow as PyTorch does."""
    if isinstance(value, Tensor):
        value = value.item()
    if dtype.is_int and not isinstance(value, (bool, np.bool_)):
        if isinstance(value, float) and not math.isfinite(value):
            raise DTypeError(f"value {value} cannot be converted to {dtype.name}")
        info = np.iinfo(dtype.numpy)
        if not info.min <= int(value) <= info.max:
            raise DTypeError(f"value {value} cannot be converted to {dtype.name} without overflow "
                             f"(expected {info.min} <= value <= {info.max})")
        return np.array(int(value), dtype=dtype.numpy)
    return host_cast(np.array(value), dtype)


def _fill_value(value: Any, dtype: DType) -> Any:
    """``value`` as the Python number ``dtype`` holds (rounded or wrapped as a device cast would)."""
    bits = _value_bits(value, dtype)
    if dtype.is_bool:
        return bool(bits)
    if dtype.is_int:
        return int(bits)
    return float(bits.astype(np.float64)) if dtype.emulated or dtype.itemsize < 4 else bits.item()


@_grad_leaf
def full(shape: Any, fill_value: Any, dtype: Any = None, device: Any = None) -> Tensor:
    """A tensor of ``shape`` filled with ``fill_value`` (dtype inferred from the value if not given)."""
    shape = shape_arg((shape,) if isinstance(shape, (int, np.integer)) else tuple(shape))
    if any(s < 0 for s in shape):
        raise ShapeError(f"negative dimension in shape {shape}")
    dt = dtypes.scalar_dtype(fill_value) if dtype is None else to_dtype(dtype)
    dev = resolve(device)
    dev.check_dtype(dt)
    node = graph.const(_fill_value(fill_value, dt), dt, shape, dev)
    return _pinned_if(tensor_class()(node, View.contiguous(shape), dt, dev), device is not None)


@_grad_leaf
def zeros(*shape: Any, dtype: Any = None, device: Any = None) -> Tensor:
    """A tensor of zeros (float32 unless ``dtype`` says otherwise)."""
    return full(shape_arg(shape), 0, dtypes.float32 if dtype is None else dtype, device)


@_grad_leaf
def ones(*shape: Any, dtype: Any = None, device: Any = None) -> Tensor:
    """A tensor of ones (float32 unless ``dtype`` says otherwise)."""
    return full(shape_arg(shape), 1, dtypes.float32 if dtype is None else dtype, device)


def _like(x: Tensor, value: Any, dtype: Any, device: Any) -> Tensor:
    """``value`` in ``x``'s shape; pinned when ``device`` is named or ``x`` is pinned, as ``x`` itself."""
    t = full(x.shape, value, dtype or x.dtype, x.device if device is None else device)
    t._data.pinned = device is not None or x.pinned
    return t


@_grad_leaf
def zeros_like(x: Tensor, dtype: Any = None, device: Any = None) -> Tensor:
    """Zeros with the shape (and by default dtype and device) of ``x``."""
    return _like(x, 0, dtype, device)


@_grad_leaf
def ones_like(x: Tensor, dtype: Any = None, device: Any = None) -> Tensor:
    """Ones with the shape (and by default dtype and device) of ``x``."""
    return _like(x, 1, dtype, device)


@_grad_leaf
def full_like(x: Tensor, fill_value: Any, dtype: Any = None, device: Any = None) -> Tensor:
    """``fill_value`` everywhere, with the shape (and by default dtype and device) of ``x``."""
    return _like(x, fill_value, dtype, device)


@_grad_leaf
def arange(start: Any, stop: Any = None, step: Any = 1, dtype: Any = None, device: Any = None) -> Tensor:
    """Values ``start, start+step, ...`` below ``stop`` (int64 for int arguments, else float32)."""
    if stop is None:
        start, stop = 0, start
    if type(stop) in BOUND or type(start) in BOUND:
        # a bound zyx.Variable: a variable size, one upload for its range
        return varsize_class()._variable_arange(start, stop, step, dtype, device)
    if step == 0:
        raise ShapeError("arange: step must be non-zero")
    if (stop - start) * step < 0:
        raise ShapeError(f"arange: start={start} and stop={stop} are inconsistent with the sign of step={step}")
    args = (start, stop, step)
    if dtype is None:
        dtype = dtypes.float32 if any(isinstance(a, (float, np.floating)) for a in args) else dtypes.int64
    dt = to_dtype(dtype)
    length = max(math.ceil((stop - start) / step), 0)
    values = start + np.arange(length, dtype=np.float64 if dt.is_float else np.int64) * step
    return _pinned_if(from_host(np.asarray(values), dt, resolve(device)), device is not None)


@_grad_leaf
def linspace(start: float, end: float, steps: int, dtype: Any = None, device: Any = None) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive."""
    if steps < 0:
        raise ShapeError(f"linspace: number of steps must be non-negative, got {steps}")
    dt = dtypes.float32 if dtype is None else to_dtype(dtype)
    if dt.is_bool:  # as PyTorch, which has no bool linspace
        raise OpDTypeError("linspace: dtype bool is not supported; expected a numeric dtype")
    return _pinned_if(from_host(np.linspace(start, end, steps, dtype=np.float64), dt, resolve(device)),
                      device is not None)


@_grad_leaf
def eye(n: int, m: int | None = None, dtype: Any = None, device: Any = None) -> Tensor:
    """An ``n x m`` identity matrix (``m`` defaults to ``n``)."""
    m = n if m is None else m
    if n < 0 or m < 0:
        raise ShapeError(f"eye: sizes must be non-negative, got n={n}, m={m}")
    dt = dtypes.float32 if dtype is None else to_dtype(dtype)
    return _pinned_if(from_host(np.eye(n, m, dtype=np.float64), dt, resolve(device)), device is not None)


# ----------------------------------------------------------------- random numbers

class _Generator:
    """The global counter-based generator: a 64-bit seed and a running counter."""

    def __init__(self, seed: int) -> None:
        self.lock = threading.Lock()
        self.seed = seed
        self.counter = 0

    def take(self, n: int) -> tuple[int, int]:
        with self.lock:
            start = self.counter
            self.counter += n
            return self.seed, start


_generator = _Generator(0x5EED)


def manual_seed(seed: int) -> None:
    """Reset the generator: the same seed gives the same values on every device."""
    if not isinstance(seed, (int, np.integer)):
        raise DTypeError(f"manual_seed expects an int, got {type(seed).__name__}")
    with _generator.lock:
        _generator.seed = int(seed) & 0xFFFFFFFFFFFFFFFF
        _generator.counter = 0


def _random(shape: tuple[int, ...], dtype: DType, device: Any, distribution: str,
            low: int = 0, high: int = 1) -> Tensor:
    if any(s < 0 for s in shape):
        raise ShapeError(f"negative dimension in shape {shape}")
    dev = resolve(device)
    dev.check_dtype(dtype)
    n = math.prod(shape)
    seed, counter = _generator.take(n)
    replayed = None
    if n and capture.active() is not None:  # a replay draws the next values, as a call would
        replayed = [seed, counter]

        def redraw(cell: list[int] = replayed) -> None:
            cell[0], cell[1] = _generator.take(n)

        capture.note_replay_hook(redraw)

    def run(inputs: list) -> Any:
        return random_bits(dev, dtype, n, distribution, seed, counter, low, high, replayed=replayed)

    node = graph.extern(f"random {distribution}", run, [], dtype, shape, dev)
    return _pinned_if(tensor_class()(node, View.contiguous(shape), dtype, dev), device is not None)


def _float_dtype(dtype: Any, fn: str) -> DType:
    dt = dtypes.float32 if dtype is None else to_dtype(dtype)
    if not dt.is_float:
        raise DTypeError(f"{fn} needs a floating dtype, got {dt.name}")
    return dt


@_grad_leaf
def rand(*shape: Any, dtype: Any = None, device: Any = None) -> Tensor:
    """Uniform values in ``[0, 1)`` (float32 by default)."""
    return _random(shape_arg(shape), _float_dtype(dtype, "rand"), device, "uniform")


@_grad_leaf
def randn(*shape: Any, dtype: Any = None, device: Any = None) -> Tensor:
    """Standard normal values (float32 by default)."""
    return _random(shape_arg(shape), _float_dtype(dtype, "randn"), device, "normal")


@_grad_leaf
def randint(low: int, high: int | None = None, shape: Any = (), dtype: Any = None, device: Any = None) -> Tensor:
    """Uniform integers in ``[low, high)`` (int64 by default); ``randint(high, shape)`` also works."""
    if high is None or (isinstance(high, (tuple, list))):
        if high is not None:
            shape = high
        low, high = 0, low
    if high <= low:
        raise ShapeError(f"randint: expected low < high, got low={low}, high={high}")
    dt = dtypes.int64 if dtype is None else to_dtype(dtype)
    if not (dt.is_int or dt.is_bool):
        raise DTypeError(f"randint needs an integer dtype, got {dt.name}")
    lo, hi = (0, 1) if dt.is_bool else (int(np.iinfo(dt.numpy).min), int(np.iinfo(dt.numpy).max))
    if low < lo or high - 1 > hi:
        raise DTypeError(f"randint: the range [{low}, {high}) does not fit {dt.name} (values {lo} .. {hi})")
    shape = shape_arg((shape,) if isinstance(shape, (int, np.integer)) else tuple(shape))
    return _random(shape, dt, device, "integer", int(low), int(high))
