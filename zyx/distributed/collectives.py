"""Collectives on zyx tensors (PyTorch's names, in place): each is one read-back, gloo on the host, one upload.

gloo carries float32, float64, float16, bfloat16, int8, uint8, int32, int64 and bool as they are.
The dtypes it lacks travel in a wider type and come back in their own: float8 (e4m3, e5m2) as
float32 (the reduction is exact there and rounded once on the way back, as zyx computes emulated
dtypes), int16 and uint16 as int32, uint32 as int64 (wrapped back to their width, as their
arithmetic wraps), uint64 as int64's bits (SUM and PRODUCT wrap the same way; MIN and MAX compare
with the sign bit flipped, which orders them as unsigned). ``AVG`` is ``SUM`` divided by the world
size, for floating dtypes only (gloo averages no integers either).
"""
from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any

import numpy as np

from zyx.distributed.process_group import failure, get_world_size, torch_distributed
from zyx.dtype import DType
from zyx.errors import DistributedError, DTypeError, ShapeError
from zyx.frontend.autograd.engine import no_grad
from zyx.frontend.base import TensorBase
from zyx.frontend.creation import from_numpy


class ReduceOp(enum.Enum):
    """How ``all_reduce`` and ``reduce_scatter`` combine the ranks' values (PyTorch's members)."""

    SUM = "sum"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"
    AVG = "avg"


def reduce_op(op: Any) -> ReduceOp:
    """``op`` as a ``ReduceOp``: one of ours, ``torch.distributed.ReduceOp``'s member of that name, or the name."""
    if isinstance(op, ReduceOp):
        return op
    name = op if isinstance(op, str) else getattr(op, "name", None) or str(op).rsplit(".", 1)[-1]
    try:
        return ReduceOp[str(name).upper()]
    except KeyError:
        raise ValueError(f"reduce op {op!r}; expected one of {', '.join(m.name for m in ReduceOp)}") from None


_SIGN64 = np.uint64(1 << 63)
# zyx dtypes gloo lacks -> the NumPy dtype they travel in
_WIDER = {"float8_e4m3": np.float32, "float8_e5m2": np.float32, "int16": np.int32, "uint16": np.int32,
          "uint32": np.int64}


def to_wire(arr: np.ndarray, dtype: DType, op: ReduceOp | None = None) -> Any:
    """A torch CPU tensor gloo can carry holding ``arr`` (NumPy values of zyx ``dtype``)."""
    import torch

    arr = np.ascontiguousarray(arr)
    if dtype.name == "bfloat16":  # ml_dtypes' bfloat16 has no torch counterpart in from_numpy: its bits
        return torch.from_numpy(arr.view(np.int16)).view(torch.bfloat16)
    if dtype.name == "uint64":
        bits = arr ^ _SIGN64 if op in (ReduceOp.MIN, ReduceOp.MAX) else arr
        return torch.from_numpy(bits.view(np.int64))
    wider = _WIDER.get(dtype.name)
    return torch.from_numpy(arr.astype(wider) if wider is not None else arr.copy())


def from_wire(t: Any, dtype: DType, op: ReduceOp | None = None) -> np.ndarray:
    """The NumPy values of zyx ``dtype`` that the torch tensor ``t`` (from ``to_wire``) carries back."""
    import torch

    if dtype.name == "bfloat16":
        return t.view(torch.int16).numpy().view(dtype.numpy)
    arr = t.numpy()
    if dtype.name == "bool":  # gloo's SUM of bools leaves a byte 2 where both were True: back to 0/1
        return arr.view(np.uint8) != 0
    if dtype.name == "uint64":
        bits = arr.view(np.uint64)
        return bits ^ _SIGN64 if op in (ReduceOp.MIN, ReduceOp.MAX) else bits
    return arr.astype(dtype.numpy, copy=False)


def _torch_op(op: ReduceOp, dtype: DType) -> Any:
    dist = torch_distributed()
    if op is ReduceOp.AVG:
        if not dtype.is_float:
            raise DTypeError(f"all_reduce: ReduceOp.AVG of {dtype.name}; expected a floating dtype (use SUM and "
                             "divide, as gloo averages no integers)")
        return dist.ReduceOp.SUM
    return getattr(dist.ReduceOp, op.name)  # on bool gloo's SUM is a logical or, PRODUCT a logical and


def _check(t: Any, what: str) -> None:
    if not isinstance(t, TensorBase):
        raise DTypeError(f"{what}: expected a zyx Tensor, got {type(t).__name__}")


def _write(t: Any, values: np.ndarray) -> None:
    """Write host ``values`` into zyx tensor ``t`` in place (one upload and one copy)."""
    with no_grad():
        t[...] = from_numpy(np.ascontiguousarray(values).reshape(t.shape), device=t.device)


class Work:
    """What an ``async_op=True`` collective returns (PyTorch's ``Work``): ``wait()`` blocks until gloo is
    done and writes the result into the zyx tensors; ``is_completed()`` asks without blocking."""

    def __init__(self, what: str, work: Any, finish: Any, group: Any = None) -> None:
        self._what, self._work, self._finish, self._group = what, work, finish, group
        self._done = False

    def is_completed(self) -> bool:
        return self._done or bool(self._work.is_completed())

    def wait(self, timeout: Any = None) -> bool:
        if self._done:
            return True
        try:
            self._work.wait() if timeout is None else self._work.wait(timeout)
        except RuntimeError as exc:
            raise failure(self._what, exc, self._group) from exc
        self._done = True
        self._finish()
        return True


def _run(what: str, call: Any, finish: Any, async_op: bool, group: Any) -> Work | None:
    try:
        work = call()
    except RuntimeError as exc:
        raise failure(what, exc, group) from exc
    handle = Work(what, work, finish, group)
    if async_op:
        return handle
    handle.wait()
    return None


def all_reduce(tensor: Any, op: Any = ReduceOp.SUM, group: Any = None, async_op: bool = False) -> Work | None:
    """Combine ``tensor`` over every rank with ``op`` and leave the result in ``tensor`` on each rank."""
    _check(tensor, "all_reduce")
    rop = reduce_op(op)
    dist = torch_distributed()
    torch_op = _torch_op(rop, tensor.dtype)
    wire = to_wire(tensor.numpy(), tensor.dtype, rop)

    def finish() -> None:
        if rop is ReduceOp.AVG:
            wire.div_(get_world_size(group))
        _write(tensor, from_wire(wire, tensor.dtype, rop))

    return _run("all_reduce", lambda: dist.all_reduce(wire, op=torch_op, group=group, async_op=True), finish,
                async_op, group)


def broadcast(tensor: Any, src: int, group: Any = None, async_op: bool = False) -> Work | None:
    """Give every rank rank ``src``'s ``tensor`` (in place)."""
    _check(tensor, "broadcast")
    dist = torch_distributed()
    wire = to_wire(tensor.numpy(), tensor.dtype)

    def finish() -> None:
        if dist.get_rank(group) != src:
            _write(tensor, from_wire(wire, tensor.dtype))

    return _run("broadcast", lambda: dist.broadcast(wire, src, group=group, async_op=True), finish, async_op, group)


def _same_parts(parts: Sequence[Any], like: Any, what: str, group: Any) -> None:
    world = get_world_size(group)
    if len(parts) != world:
        raise ShapeError(f"{what}: {len(parts)} tensors in the list; expected one per rank ({world})")
    for i, p in enumerate(parts):
        _check(p, what)
        if tuple(p.shape) != tuple(like.shape) or p.dtype is not like.dtype:
            raise ShapeError(f"{what}: list[{i}] is {p.dtype.name}{tuple(p.shape)}; expected "
                             f"{like.dtype.name}{tuple(like.shape)} like the other tensor")


def all_gather(tensor_list: list[Any], tensor: Any, group: Any = None, async_op: bool = False) -> Work | None:
    """Put rank i's ``tensor`` into ``tensor_list[i]`` on every rank."""
    _check(tensor, "all_gather")
    _same_parts(tensor_list, tensor, "all_gather", group)
    dist = torch_distributed()
    wire = to_wire(tensor.numpy(), tensor.dtype)
    outs = [wire.clone() for _ in tensor_list]

    def finish() -> None:
        for t, w in zip(tensor_list, outs):
            _write(t, from_wire(w, tensor.dtype))

    return _run("all_gather", lambda: dist.all_gather(outs, wire, group=group, async_op=True), finish, async_op,
                group)


def reduce_scatter(output: Any, input_list: list[Any], op: Any = ReduceOp.SUM, group: Any = None,
                   async_op: bool = False) -> Work | None:
    """Combine ``input_list[i]`` over every rank with ``op`` and leave the result in rank i's ``output``."""
    _check(output, "reduce_scatter")
    _same_parts(input_list, output, "reduce_scatter", group)
    rop = reduce_op(op)
    dist = torch_distributed()
    torch_op = _torch_op(rop, output.dtype)
    wires = [to_wire(t.numpy(), t.dtype, rop) for t in input_list]
    out = wires[0].clone()

    def finish() -> None:
        if rop is ReduceOp.AVG:
            out.div_(get_world_size(group))
        _write(output, from_wire(out, output.dtype, rop))

    return _run("reduce_scatter", lambda: dist.reduce_scatter(out, wires, op=torch_op, group=group, async_op=True),
                finish, async_op, group)


def all_reduce_host(array: np.ndarray, group: Any = None) -> Any:
    """Start summing the host ``array`` (float32/float64/float16, in place) over every rank; returns a
    ``Work`` to ``wait()`` on. Data parallelism reduces its gradient buckets through this."""
    import torch

    dist = torch_distributed()
    if not array.flags.c_contiguous or array.dtype not in (np.float32, np.float64, np.float16):
        raise DistributedError(f"all_reduce_host: a contiguous float32/float64/float16 array expected, got "
                               f"{array.dtype} (contiguous={array.flags.c_contiguous})")
    wire = torch.from_numpy(array)  # shares the array's memory: gloo writes the sum into it
    return _run("all_reduce (gradient bucket)", lambda: dist.all_reduce(wire, group=group, async_op=True),
                lambda: None, True, group)


def broadcast_host(array: np.ndarray, dtype: DType, src: int, group: Any = None) -> np.ndarray:
    """Rank ``src``'s host ``array`` (NumPy values of zyx ``dtype``; the other ranks' arrays give only the
    shape) on every rank."""
    dist = torch_distributed()
    wire = to_wire(array, dtype)
    _run("broadcast", lambda: dist.broadcast(wire, src, group=group, async_op=True), lambda: None, False, group)
    return from_wire(wire, dtype)
