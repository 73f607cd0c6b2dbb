"""The contract ops of the public API (API.md, "The contract ops") and ``ContractOpsMixin``.

Every op follows the same steps: look up its contract, ``validate`` the operands and
params (``ContractError`` before anything is written), contiguize each input the
contract wants dense (``needs_contiguize``) through the contiguize kernel, launch the
kernel from ``zyx/kernels/contracts/`` and wrap the result in a Tensor. In-place writers return
their destination, whose storage (seen through its view's strides) is the output.
"""
from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any, Callable, NamedTuple

import numpy as np

from zyx import dtype as dtypes
from zyx.backend import errorflags
from zyx.backend.device import Device
from zyx.backend.launch import runtime_lock
from zyx.backend.pool import Buffer
from zyx.contracts.spec.model import Contract, Operand
from zyx.contracts.spec.registry import get, lookup
from zyx.contracts.spec.validate import needs_contiguize, validate
from zyx.dtype import DType
from zyx.errors import AutogradError, ContractError, ContractIndexError, ContractShapeError, DTypeError, ShapeError
from zyx.frontend.args import device_of
from zyx.frontend.autograd.engine import check_not_view_of_leaf, needs_grad, no_grad, record
from zyx.frontend.autograd.rules import record_write, unbroadcast
from zyx.frontend.base import TensorBase, check_writable, concrete, extern_tensor, raise_unread_errors
from zyx.frontend.creation import arange, full, zeros
from zyx.frontend.elementwise import binary, broadcast_shapes, where
from zyx.frontend.index_access import take_rows
from zyx.frontend.scan_backward import cumprod_grad, extremum_grad, logcumsumexp_grad
from zyx.frontend.view_index import basic_index
from zyx.ir.variable import BOUND, VariableArg
from zyx.ir.view import View, normalize_dim
from zyx.kernels import contracts as kernels
from zyx.op import Op

Tensor = TensorBase  # annotations and isinstance checks: any tensor of the concrete class

# ---------------------------------------------------------------- helpers


def _locked(fn: Callable) -> Callable:
    """Run a contract op under the runtime lock (validate, contiguize, launch as one step)."""

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        with runtime_lock:
            return fn(*args, **kwargs)

    return call


def _differentiable(name: str, backward: Callable[..., Any]) -> Callable[[Callable], Callable]:
    """Record ``backward(grad, x, *args)`` (the gradient of ``x``) on the op's output when ``x`` needs one."""

    def wrap(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def call(x: Any, *args: Any, **kwargs: Any) -> Any:
            if not needs_grad(x):
                return fn(x, *args, **kwargs)
            with no_grad():
                out = fn(x, *args, **kwargs)
            return record(name, out, [x], lambda g: (backward(g, x.shape, *args, **kwargs),))

        return call

    return wrap


def _neg(shifts: Any) -> Any:
    return -shifts if isinstance(shifts, (int, np.integer)) else tuple(-s for s in shifts)


def operand(t: Tensor) -> Operand:
    """The layout facts of a tensor, as validation sees them."""
    v = t._view
    return Operand(
        dtype=t.dtype,
        shape=tuple(v.shape),
        is_contiguous=v.is_contiguous,
        has_offset=v.offset != 0 and v.numel > 0,
        is_broadcast=v.has_broadcast,
        has_negative_strides=v.has_negative_strides and v.numel > 0,
    )


def _tensor(x: Any, contract: str, field: str) -> Tensor:
    """``x`` checked to be a tensor; a tensor of variable size at its bound values (no contract has a
    variable form: its kernels take the shape as ints)."""
    if not isinstance(x, Tensor):
        raise ContractError(f"{contract}: {field} = {x!r} is not a zyx.Tensor")
    return concrete(x)


def _rd(t: Tensor) -> Any:
    """The realized buffer of a tensor a kernel only reads (its pending readers keep fusing)."""
    return t._realized()


def _on(t: Tensor, device: Device) -> Tensor:
    return t if t.device is device else t.to(device)


def _dense(contract: Contract, t: Tensor, index: int = 0) -> Tensor:
    """``t`` itself, or a contiguized copy when ``contract`` wants input ``index`` dense."""
    if needs_contiguize(contract, operand(t), index):
        return contiguize(t)
    return t


def _pending(name: str, shape: Sequence[int], dtype: DType, device: Device, inputs: Sequence[Tensor],
             launcher: Callable[..., None], sources: Sequence[Tensor]) -> Tensor:
    """The output of a contract kernel as a pending graph node: when realized, its ``inputs`` are
    realized first (a fusion break) and ``launcher(out, *input buffers)`` fills a fresh buffer. Pinned
    when one of the op's ``sources`` is (``Tensor.pinned``)."""
    nbytes = math.prod(shape) * dtype.itemsize

    def run(buffers: list[Buffer]) -> Buffer:
        out = device.pool.allocate(nbytes)
        launcher(out, *buffers)
        return out

    return extern_tensor(name, run, inputs, dtype, shape, device, any(t.pinned for t in sources))


def _split(shape: Sequence[int], axis: int) -> tuple[int, int, int]:
    return math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1:])


def _int_or_tuple(value: Any, contract: str, field: str) -> tuple[int, ...]:
    if type(value) in BOUND:  # a bound zyx.Variable or t + 1: its value (a reported read)
        return (int(value),)
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return (int(value),)
    if isinstance(value, (tuple, list)) and all(
            isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) for v in value):
        return tuple(int(v) for v in value)
    raise ContractError(f"{contract}: {field} = {value!r} is not an int or a tuple of ints")


# ---------------------------------------------------------------- contiguize


@_differentiable("contiguous", lambda g, shape: g)
def contiguize(x: Tensor) -> Tensor:
    """A dense row-major copy of any view (strided, broadcast, offset, reversed); ``x`` if dense."""
    x = _tensor(x, "contiguize", "input")
    validate(get("contiguize"), [operand(x)], {})
    if x._view.is_contiguous:
        return x
    view, size = x._view, x.dtype.itemsize
    return _pending("contiguize", x.shape, x.dtype, x.device, [x],
                    lambda out, src: kernels.contiguize(x.device, out, src, view, size), [x])


def contiguize_rows(x: Tensor, row: int) -> Tensor:
    """A row-major copy of ``x`` (2 or more dims) whose rows lie ``row`` elements apart (``row`` at least its
    last extent), returned as the view of each row's first ``x.shape[-1]`` elements; what lies between the
    rows is never written nor read (no gradient: the matmul that pads its operand records its own)."""
    x = _tensor(x, "contiguize", "input")
    validate(get("contiguize"), [operand(x)], {})
    view, size, last = x._view, x.dtype.itemsize, x.shape[-1]
    if x.ndim < 2 or row < last:
        raise ShapeError(f"contiguize_rows: rows of {row} elements for shape {x.shape}: expected 2 or more dims "
                         f"and row >= {last}")
    padded = _pending("contiguize", (*x.shape[:-1], row), x.dtype, x.device, [x],
                      lambda out, src: kernels.contiguize(x.device, out, src, view, size, row=row), [x])
    return padded[..., :last]


# ---------------------------------------------------------------- flip / roll / concat


@_differentiable("flip", lambda g, shape, dims: g.flip(dims))
def flip(x: Tensor, dims: Any) -> Tensor:
    """``x`` reversed along each axis in ``dims`` (an int or a tuple)."""
    x = _tensor(x, "flip", "input")
    c = lookup("Flip", x.dtype)
    if x.ndim == 0 and _int_or_tuple(dims, c.name, "dims") in ((0,), (-1,)):
        dims = ()  # PyTorch takes dim 0 / -1 of a 0-d tensor as its one element: nothing to reverse
    params = validate(c, [operand(x)], {"dims": _int_or_tuple(dims, c.name, "dims")})
    x = _dense(c, x)
    shape, dims, size = x.shape, params["dims"], x.dtype.itemsize
    return _pending("flip", shape, x.dtype, x.device, [x],
                    lambda out, src: kernels.flip(x.device, out, src, shape, dims, size), [x])


@_differentiable("roll", lambda g, shape, shifts, dims=None: g.roll(_neg(shifts), dims))
def roll(x: Tensor, shifts: Any, dims: Any = None) -> Tensor:
    """``x`` shifted cyclically by ``shifts`` along ``dims`` (PyTorch's roll; no dims: flattened)."""
    x = _tensor(x, "roll", "input")
    c = lookup("Roll", x.dtype)
    shift_t = _int_or_tuple(shifts, c.name, "shifts")
    if dims is None:
        if len(shift_t) != 1:
            raise ContractShapeError(f"{c.name}: shifts = {shifts!r} has {len(shift_t)} entries but dims is None; "
                                     "expected one shift for the flattened tensor")
        n = x.numel()
        validate(c, [operand(x)], {"shift": shift_t[0], "outer": 1, "dim_size": n, "inner": 1})
        x = _dense(c, x)
        if not n:
            return x
        shift, size = shift_t[0], x.dtype.itemsize
        return _pending("roll", x.shape, x.dtype, x.device, [x],
                        lambda out, src: kernels.roll(x.device, out, src, 1, n, 1, shift, size), [x])
    dim_t = _int_or_tuple(dims, c.name, "dims")
    if not dim_t:
        raise ContractError(f"{c.name}: dims = {dims!r} is empty; expected at least one dim (or dims=None)")
    if len(dim_t) != len(shift_t):
        raise ContractShapeError(f"{c.name}: shifts = {shifts!r} has {len(shift_t)} entries but dims = {dims!r} "
                                 f"has {len(dim_t)}; expected one shift per dim")
    rank = x.ndim
    axes = []
    for i, d in enumerate(dim_t):
        if not -max(rank, 1) <= d < max(rank, 1):
            raise ContractIndexError(f"{c.name}: dims[{i}] = {d} is out of range for rank {rank}; "
                                f"expected {-max(rank, 1)} <= dim < {max(rank, 1)}")
        axes.append(d % max(rank, 1))
    shape = x.shape if rank else (1,)
    steps = [(s, _split(shape, a)) for s, a in zip(shift_t, axes)]
    for s, (o, d, i) in steps:
        validate(c, [operand(x)], {"shift": s, "outer": o, "dim_size": d, "inner": i})
    x = _dense(c, x)
    if not x.numel():
        return x
    for s, (o, d, i) in steps:
        x = _pending("roll", x.shape, x.dtype, x.device, [x], functools.partial(
            _roll_step, x.device, o, d, i, s, x.dtype.itemsize), [x])
    return x


def _roll_step(device: Device, outer: int, dim_size: int, inner: int, shift: int, size: int, out: Buffer,
               src: Buffer) -> None:
    kernels.roll(device, out, src, outer, dim_size, inner, shift, size)


def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Join ``tensors`` along ``dim`` (dtypes promote as in PyTorch; 1-D empty inputs are skipped)."""
    if isinstance(tensors, Tensor) or not isinstance(tensors, (tuple, list)):
        raise ContractError(f"concat: tensors = {type(tensors).__name__} is not a sequence of tensors")
    if not tensors:
        raise ContractError("concat: tensors is empty; expected at least one tensor")
    if needs_grad(*tensors):
        with no_grad():
            out = cat(tensors, dim)
        return record("cat", out, list(tensors), _cat_backward([t.shape for t in tensors], [t.dtype for t in tensors],
                                                                 dim))
    ts = [_tensor(t, "concat", f"inputs[{i}]") for i, t in enumerate(tensors)]
    if any(t.ndim != 1 for t in ts):  # PyTorch's legacy rule: 1-D empty tensors join anything
        ts = [t for t in ts if not (t.ndim == 1 and t.numel() == 0)] or ts[:1]
    result = ts[0].dtype
    for t in ts[1:]:
        result = dtypes.promote_types(result, t.dtype)
    sources = ts
    device = device_of(*ts)  # a pinned input's device, else the one holding most of the bytes
    ts = [_on(t.cast(result), device) for t in ts]
    c = lookup("Concat", result)
    params = validate(c, [operand(t) for t in ts], {"dim": dim})
    axis = params["dim"]
    ts = [_dense(c, t, i) for i, t in enumerate(ts)]
    shape = list(ts[0].shape)
    shape[axis] = sum(t.shape[axis] for t in ts)
    outer, total, inner = _split(shape, axis)
    widths = [t.shape[axis] * inner for t in ts]

    def launch(out: Buffer, *parts: Buffer) -> None:
        col = 0
        for part, width in zip(parts, widths):
            kernels.concat_part(device, out, part, outer, width, total * inner, col, result.itemsize)
            col += width

    return _pending("concat", shape, result, device, ts, launch, sources)


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
    return cat([t.unsqueeze(d) for t in tensors], d)


concat = cat


def _cat_backward(shapes: list[tuple[int, ...]], dtypes_in: list[DType], dim: int) -> Callable[[Any], tuple]:
    """The rule of ``cat``: each input's slab of the gradient (legacy empty 1-D inputs get zeros)."""

    def fn(g: Any) -> tuple:
        axis = dim % g.ndim
        grads, start = [], 0
        for shape, dt in zip(shapes, dtypes_in):
            if len(shape) == 1 and shape[0] == 0 and g.ndim != 1:
                grads.append(zeros(0, dtype=dt, device=g.device))
                continue
            grads.append(g.narrow(axis, start, shape[axis]).cast(dt))
            start += shape[axis]
        return tuple(grads)

    return fn

# ---------------------------------------------------------------- triangular / masked_fill / scans


def _triangular(x: Tensor, diagonal: int, kind: str) -> Tensor:
    x = _tensor(x, kind.lower(), "input")
    c = lookup(kind, x.dtype)
    params = validate(c, [operand(x)], {"diagonal": diagonal}, op_kind=kind)
    x = _dense(c, x)
    batch, rows, cols = math.prod(x.shape[:-2]), x.shape[-2], x.shape[-1]
    upper, diag, size = params["upper"], params["diagonal"], x.dtype.itemsize
    return _pending(kind.lower(), x.shape, x.dtype, x.device, [x], lambda out, src: kernels.triangular(
        x.device, out, src, batch, rows, cols, upper, diag, size), [x])


@_differentiable("triu", lambda g, shape, diagonal=0: g.triu(diagonal))
def triu(x: Tensor, diagonal: int = 0) -> Tensor:
    """The upper triangle of the last two axes (``j >= i + diagonal``), zeros elsewhere."""
    return _triangular(x, diagonal, "Triu")


@_differentiable("tril", lambda g, shape, diagonal=0: g.tril(diagonal))
def tril(x: Tensor, diagonal: int = 0) -> Tensor:
    """The lower triangle of the last two axes (``j <= i + diagonal``), zeros elsewhere."""
    return _triangular(x, diagonal, "Tril")


def fill_bits(value: Any, dtype: DType) -> np.ndarray:
    """One element of ``dtype`` holding ``value`` (already range-checked), as a 0-d array."""
    if dtype.is_bool:
        return np.array(bool(value), dtype=np.bool_)
    if dtype.is_int:
        return np.array(int(value), dtype=dtype.numpy)
    return np.array(float(value), dtype=np.float64).astype(dtype.numpy)


@_differentiable("masked_fill", lambda g, shape, mask, value: g.masked_fill(mask, 0.0))
def masked_fill(x: Tensor, mask: Tensor, value: Any) -> Tensor:
    """``value`` where ``mask`` (bool, broadcastable to ``x``) is True, ``x`` elsewhere."""
    x = _tensor(x, "masked_fill", "input")
    mask = _tensor(mask, "masked_fill", "mask")
    c = lookup("MaskedFill", x.dtype)
    if isinstance(value, Tensor):
        if value.numel() != 1:
            raise ContractError(f"{c.name}: fill is a tensor of shape {value.shape}; expected one element")
        value = value.item()
    if mask.dtype is dtypes.bool_ and mask.shape != x.shape:
        try:
            mask = mask.expand(*x.shape)
        except ShapeError:
            raise ContractError(f"{c.name}: mask shape {mask.shape} is not broadcastable to input shape "
                                f"{x.shape}") from None
    params = validate(c, [operand(x), operand(mask)], {"fill": value})
    mask = _on(mask, x.device)
    x, mask = _dense(c, x, 0), _dense(c, mask, 1)
    n, bits, size = x.numel(), fill_bits(params["fill"], x.dtype), x.dtype.itemsize
    return _pending("masked_fill", x.shape, x.dtype, x.device, [x, mask], lambda out, src, m: kernels.masked_fill(
        x.device, out, src, m, n, bits, size), [x])


@_differentiable("cumsum", lambda g, shape, dim: g.flip(dim).cumsum(dim).flip(dim) if shape else g)
def cumsum(x: Tensor, dim: int) -> Tensor:
    """Running sum along ``dim`` (16-bit floats accumulate in float32, rounded once on store;
    bool and integers accumulate into an int64 result, as PyTorch)."""
    return _scan(x, dim, "cumsum", "CumSum", kernels.cumsum)


def _scan_with_grad(x: Tensor, dim: int, name: str, node_name: str, kernel: Any, grad: Any) -> Tensor:
    """A scan whose gradient ``grad(g, x, out, dim)`` reads its input and output (cumprod, logcumsumexp)."""
    if not needs_grad(x):
        return _scan(x, dim, name, node_name, kernel)
    with no_grad():
        out = _scan(x, dim, name, node_name, kernel)
    saved = out.detach()
    return record(name, out, [x], lambda g: (grad(g, x.detach(), saved, dim) if x.ndim else g,))


def cumprod(x: Tensor, dim: int) -> Tensor:
    """Running product along ``dim`` (accumulated as ``cumsum``; bool and integers give int64)."""
    return _scan_with_grad(x, dim, "cumprod", "CumProd", kernels.cumprod, cumprod_grad)


def logcumsumexp(x: Tensor, dim: int) -> Tensor:
    """``log(cumsum(exp(x)))`` along ``dim`` without overflow (float dtypes; 16-bit in float32)."""
    return _scan_with_grad(x, dim, "logcumsumexp", "LogCumSumExp", kernels.logcumsumexp, logcumsumexp_grad)


def _scan(x: Tensor, dim: int, name: str, kind: str, launcher: Callable[..., Any]) -> Tensor:
    """Validate, contiguize and launch a one-output scan (``launcher(device, out, src, dtype, o, d, i)``)."""
    x = _tensor(x, name, "input")
    c = lookup(kind, x.dtype)
    params = validate(c, [operand(x)], {"dim": dim})
    x = _dense(c, x)
    o, d, i = _split(x.shape if x.ndim else (1,), params["dim"])
    dt = x.dtype
    return _pending(name, x.shape, kernels.result_dtype(dt), x.device, [x],
                    lambda out, src: launcher(x.device, out, src, dt, o, d, i), [x])


class ValuesIndices(NamedTuple):
    """What ``cummax``/``cummin`` return, as PyTorch's: the running values and their int64 indices."""

    values: Any
    indices: Any


def cummax(x: Tensor, dim: int) -> ValuesIndices:
    """Running maximum along ``dim`` and the index where it was taken (ties: the last; NaN wins)."""
    return _extremum(x, dim, "cummax", "CumMax")


def cummin(x: Tensor, dim: int) -> ValuesIndices:
    """Running minimum along ``dim`` and the index where it was taken (ties: the last; NaN wins)."""
    return _extremum(x, dim, "cummin", "CumMin")


def _extremum(x: Tensor, dim: int, name: str, kind: str) -> ValuesIndices:
    grad = needs_grad(x)
    x = _tensor(x, name, "input")
    c = lookup(kind, x.dtype)
    params = validate(c, [operand(x)], {"dim": dim})
    src = _dense(c, x.detach() if grad else x)
    o, d, i = _split(src.shape if src.ndim else (1,), params["dim"])
    dt, device = src.dtype, src.device
    launcher = kernels.cummax if name == "cummax" else kernels.cummin
    idx_buf: list[Buffer] = []

    def run_values(out: Buffer, buf: Buffer) -> None:
        idx = device.pool.allocate(math.prod(src.shape) * dtypes.int64.itemsize)
        idx_buf.append(idx)  # the indices come out of the same launch; the second node picks them up
        launcher(device, out, idx, buf, dt, o, d, i)

    values = _pending(name, src.shape, dt, device, [src], run_values, [x])

    indices = _indices_of(values, idx_buf, src.shape, device, name)
    if grad:
        axis = params["dim"]
        kept = indices
        values = record(name, values, [x], lambda g: (extremum_grad(g, kept, axis) if x.ndim else g,))
    return ValuesIndices(values, indices)


def _indices_of(values: Tensor, box: list[Buffer], shape: Sequence[int], device: Device, name: str) -> Tensor:
    """The indices output of the kernel behind ``values``: a pending node reading ``values`` (so
    the launch runs first) whose buffer is the one that launch filled (left in ``box``)."""

    def run(buffers: list[Buffer]) -> Buffer:
        return box.pop()

    return extern_tensor(f"{name}_indices", run, [values], dtypes.int64, shape, device)


# ---------------------------------------------------------------- in-place writers


def _check_dest(name: str, dest: Tensor) -> None:
    v = dest._view
    for k, (d, s) in enumerate(zip(v.shape, v.strides)):
        if s == 0 and d > 1:
            raise ContractError(f"{name}: dest is a broadcast view (stride 0 on axis {k} of extent {d}); "
                                "several of its elements share one memory location, so it cannot be written")


def _source_for(name: str, contract: Contract, dest: Tensor, source: Any) -> Tensor:
    """The source on dest's device, dense, and never sharing dest's storage."""
    src = _on(_tensor(source, name, "source"), dest.device)
    if _rd(src) is _rd(dest):  # reading while writing the same memory: copy first
        return contiguize(src) if not src._view.is_contiguous else src.clone()
    return _dense(contract, src)



def _prepare_write(name: str, dest: Any, source: Any, params: dict[str, Any]) -> tuple[Tensor, dict[str, Any], Tensor]:
    """The shared first steps of the in-place writers: check the operands against contract
    ``name`` (nothing written yet), then give a dense source that does not alias ``dest``."""
    check_writable(dest, name)
    dest = _tensor(dest, name, "dest")
    source = _tensor(source, name, "source")
    c = get(name)
    checked = validate(c, [operand(source)], {"dest_shape": dest.shape, **params, "dest_dtype": dest.dtype})
    _check_dest(c.name, dest)
    raise_unread_errors(source, *params.values())  # a position or offset tensor too
    return dest, checked, _source_for(c.name, c, dest, source)

def _box_base(dest: Tensor, starts: Sequence[int]) -> int:
    v = dest._view
    return v.offset + sum(s * st for s, st in zip(starts, v.strides))


@_locked
def write_slice(dest: Tensor, source: Tensor, ranges: Sequence[Sequence[int]]) -> Tensor:
    """Copy ``source`` into the half-open box ``ranges`` of ``dest``, in place; returns ``dest``."""
    if _write_grad(dest, source):
        with no_grad():
            write_slice(dest, source, ranges)
        return record_write(dest, tuple(slice(int(a), int(b)) for a, b in ranges), source)
    dest, params, src = _prepare_write("write_slice", dest, source, {"ranges": ranges})
    starts = [r[0] for r in params["ranges"]]
    kernels.write_slice(dest.device, dest._buf, _rd(src), src.shape, dest._view.strides,
                        _box_base(dest, starts), dest.dtype.itemsize)
    return dest


def _record_rows_write(dest: Any, source: Any, axis: int, start: Any, modulus: int | None,
                      ranges: Any) -> Any:
    """``write_slice_rotating`` (``modulus``: rows land at ``(start + r) % modulus``) and
    ``write_slice_doff`` (rows at ``start + r``, the box ``ranges`` off ``axis``) done in place, where
    ``start`` may be a one-element tensor read on the device: the rows written are computed from it
    lazily, so the rule needs no readback."""
    n, size = source.shape[axis], dest.shape[axis]
    src_shape, src_dtype = source.shape, source.dtype
    box = [slice(None)] * dest.ndim
    if ranges is not None:
        box = [slice(None) if k == axis else slice(int(a), int(b)) for k, (a, b) in enumerate(ranges)]

    def rows(device: Any) -> tuple[Any, Any]:
        first = start.reshape(()).cast("int64") if isinstance(start, Tensor) else int(start)
        r = arange(n, device=device)
        at = arange(size, device=device)
        if modulus is None:
            return r + first, binary(Op.GE, at, first) & binary(Op.LT, at, first + n)
        p = first % modulus
        return (r + p) % modulus, binary(Op.LT, at, modulus) & binary(Op.LT, (at - p) % modulus, n)

    def fn(g: Any) -> tuple:
        index, written = rows(g.device)
        inside = written.reshape(*[size if k == axis else 1 for k in range(g.ndim)])
        for k, sl in enumerate(box):
            if k != axis and sl != slice(None):
                at = arange(g.shape[k], device=g.device)
                span = binary(Op.GE, at, sl.start) & binary(Op.LT, at, sl.stop)
                inside = inside & span.reshape(*[g.shape[k] if j == k else 1 for j in range(g.ndim)])
        gd = where(inside, 0.0, g)
        slab = g[tuple(box)]
        front = slab.transpose(0, axis) if axis else slab
        picked = take_rows(front.reshape(size, -1), index).reshape(n, *front.shape[1:])
        gs = (picked.transpose(0, axis) if axis else picked).cast(src_dtype)
        return gd, unbroadcast(gs, src_shape)

    return record("copy_rows", dest, [dest, source], fn)


@_locked
def write_slice_rotating(dest: Tensor, source: Tensor, axis: int, position: Any,
                         modulus: int | None = None) -> Tensor:
    """Ring-buffer write: source row r lands at ``(position % modulus + r) % modulus`` on ``axis``.

    ``position`` is an int or a one-element uint32/int32 tensor read when the kernel runs.
    """
    if _write_grad(dest, source):
        with no_grad():
            write_slice_rotating(dest, source, axis, position, modulus)
        mod = dest.shape[axis % dest.ndim] if modulus is None else modulus
        return _record_rows_write(dest, source, axis % dest.ndim, position, mod, None)
    if type(position) in BOUND:  # zyx.Variable (or t + c): validated as the int it is bound to
        position = position.arg()
    dest, params, src = _prepare_write("write_slice_rotating", dest, source,
                                       {"axis": axis, "modulus": modulus, "position": position})
    pos = params["position"]
    if isinstance(pos, Tensor):
        pos = _on(pos.realize(), dest.device)
        pos_arg: Any = (_rd(pos), pos._view.offset, pos.dtype)
    elif type(pos) is VariableArg:  # a run-time kernel argument: a plan recomputes it at replay
        pos_arg = pos.then(functools.partial(_ring_slot, modulus=params["modulus"]))
    else:
        pos_arg = int(pos) % params["modulus"]  # Python modulo; any int fits the kernel argument
    kernels.write_slice_rotating(dest.device, dest._buf, _rd(src), src.shape, dest._view.strides,
                                 params["axis"], dest._view.offset, params["modulus"], pos_arg,
                                 dest.dtype.itemsize)
    return dest


@_locked
def write_slice_doff(dest: Tensor, source: Tensor, axis: int, offset: Tensor,
                     ranges: Sequence[Sequence[int]] | None = None) -> Tensor:
    """Write ``source`` into ``dest`` starting on ``axis`` at the int64 device value ``offset``.

    Off ``axis`` the box is ``ranges`` (default: all of dest). An offset out of range writes
    nothing and raises ``ContractError`` at the latest when values are next read.
    """
    if _write_grad(dest, source):
        with no_grad():
            write_slice_doff(dest, source, axis, offset, ranges)
        return _record_rows_write(dest, source, axis % dest.ndim, offset, None, ranges)
    dest, params, src = _prepare_write("write_slice_doff", dest, source,
                                       {"axis": axis, "offset": offset, "ranges": ranges})
    if src.numel() == 0:
        return dest
    ax = params["axis"]
    off = _on(params["offset"].realize(), dest.device)
    width, extent = src.shape[ax], dest.shape[ax]
    starts = [0 if k == ax else r[0] for k, r in enumerate(params["ranges"])]
    flags = errorflags.reserve(dest.device, f"write_slice_doff: offset = {{offset}} (read on the device) is out of "
                                           f"range on axis {ax}: expected 0 <= offset <= dest_shape[{ax}] - width = "
                                           f"{extent} - {width} = {extent - width}; nothing was written")
    kernels.write_slice_doff(dest.device, dest._buf, _rd(src), src.shape, dest._view.strides, ax,
                             _box_base(dest, starts), extent, (_rd(off), off._view.offset), flags,
                             dest.dtype.itemsize)
    return dest


def _ring_slot(position: int, modulus: int) -> int:
    return position % modulus  # Python modulo; any int fits the kernel argument


def _write_grad(x: Tensor, value: Any) -> bool:
    """Whether an in-place write of ``value`` into ``x`` is recorded for autograd; a leaf that
    requires grad cannot be written in place (as PyTorch: its values are the gradient's reference)."""
    if not needs_grad(x, value):
        return False
    if x._ag is not None and x._ag.grad_fn is None:
        raise AutogradError("a leaf tensor that requires grad is written in place (x[...] = v, x += y and the like, "
                            "or write_slice); write under zyx.no_grad(), or into a clone")
    check_not_view_of_leaf(x)
    return True


@_locked
def setitem(x: Tensor, index: Any, value: Any) -> None:
    """``x[index] = value`` in place, through write_slice on the indexed view of ``x``; recorded for
    autograd (the written slab's gradient goes to ``value``, the rest to ``x``'s old values)."""
    check_writable(x, "x[...] = value")
    if _write_grad(x, value):
        with no_grad():
            setitem(x, index, value)
        record_write(x, index, value)
        return
    x = x.realize()
    target = x._with_view(basic_index(x._view, index))
    if isinstance(value, Tensor):
        raise_unread_errors(value)
        v = _on(value, x.device)
        if v.dtype is not x.dtype:
            v = v.cast(x.dtype)
    else:
        try:
            v = full((), value, dtype=x.dtype, device=x.device)
        except DTypeError as exc:
            raise DTypeError(f"x[...] = {value!r}: {exc}") from None
    try:
        v = v.expand(*target.shape)
    except ShapeError as exc:
        raise ShapeError(f"x[...] = value: cannot broadcast value of shape {value_shape(value)} to the indexed "
                         f"shape {target.shape} ({exc})") from None
    if target.numel() == 0:
        return
    _check_dest("write_slice", target)
    # Fold the box to as few axes as dest's strides allow (rank 0 becomes rank 1).
    shape, strides, _ = kernels.fold_axes(target.shape, target._view.strides)
    box = x._with_view(View(shape, strides, target._view.offset))
    if _rd(v) is _rd(x) or not v._view.is_contiguous:
        v = contiguize(v) if not v._view.is_contiguous else v.clone()
    write_slice(box, v.reshape(*shape), [(0, d) for d in shape])


def value_shape(value: Any) -> tuple[int, ...]:
    """The shape of an assigned value (``()`` for a scalar)."""
    return tuple(value.shape) if isinstance(value, Tensor) else ()


class ContractOpsMixin(TensorBase):
    """The contract ops as methods (each realizes its operands and launches one contract kernel)."""

    __slots__ = ()

    def __setitem__(self, index: Any, value: Any) -> None:
        """``x[index] = value`` in place (value broadcast to the indexed view)."""
        setitem(self, index, value)

    def _contiguous_rows(self, row: int) -> Any:
        """A copy with rows ``row`` elements apart, seen without their padding (``contiguize_rows``)."""
        return contiguize_rows(self, row)

    def flip(self, *dims: Any) -> Any:
        """Reverse the order along ``dims`` (``x.flip(0, 1)`` or ``x.flip((0, 1))``)."""
        return flip(self, dims[0] if len(dims) == 1 else dims)

    def roll(self, shifts: Any, dims: Any = None) -> Any:
        """Shift cyclically along ``dims`` (flattened when None), Python-style modulo."""
        return roll(self, shifts, dims)

    def triu(self, diagonal: int = 0) -> Any:
        """Keep ``j >= i + diagonal`` of the last two axes, zero elsewhere."""
        return triu(self, diagonal)

    def tril(self, diagonal: int = 0) -> Any:
        """Keep ``j <= i + diagonal`` of the last two axes, zero elsewhere."""
        return tril(self, diagonal)

    def masked_fill(self, mask: Any, value: Any) -> Any:
        """``value`` where the bool ``mask`` is True; as PyTorch's out-of-place form, a mask of more
        dims or larger sizes broadcasts ``self`` up to the common shape."""
        x = self
        if isinstance(mask, Tensor) and tuple(mask.shape) != tuple(self.shape):
            try:
                common = broadcast_shapes(self.shape, mask.shape)
            except ShapeError:
                common = tuple(self.shape)  # masked_fill names the mismatch
            if tuple(common) != tuple(self.shape):
                x = self.expand(*common)
        if isinstance(value, Tensor) and needs_grad(value):
            # a fill that needs a gradient (the sum of the filled elements'): composed from where
            if not isinstance(mask, Tensor) or not mask.dtype.is_bool or value.numel() != 1:
                raise ContractError(f"masked_fill: expected a bool mask and a one-element fill, got mask "
                                    f"{getattr(mask, 'dtype', type(mask).__name__)} and fill of shape {value.shape}")
            return where(mask, value.reshape(()).cast(x.dtype), x)
        return masked_fill(x, mask, value)

    def cumsum(self, dim: int, dtype: Any = None) -> Any:
        """Running sum along ``dim`` (16-bit floats accumulate in float32; integers into int64);
        ``dtype``: the input cast to it first and the result of that dtype, as PyTorch."""
        if dtype is None:
            return cumsum(self, dim)
        return cumsum(self.cast(dtype), dim).cast(dtype)

    def cumprod(self, dim: int, dtype: Any = None) -> Any:
        """Running product along ``dim`` (16-bit floats accumulate in float32; integers into int64);
        ``dtype`` as in ``cumsum``."""
        if dtype is None:
            return cumprod(self, dim)
        return cumprod(self.cast(dtype), dim).cast(dtype)

    def cummax(self, dim: int) -> ValuesIndices:
        """``(values, indices)``: the running maximum along ``dim`` and where it was taken."""
        return cummax(self, dim)

    def cummin(self, dim: int) -> ValuesIndices:
        """``(values, indices)``: the running minimum along ``dim`` and where it was taken."""
        return cummin(self, dim)

    def logcumsumexp(self, dim: int) -> Any:
        """``log(cumsum(exp(x)))`` along ``dim``, computed without overflow."""
        return logcumsumexp(self, dim)
