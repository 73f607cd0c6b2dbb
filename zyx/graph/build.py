"""Building graph nodes: one function per kind of node (``graph.node`` holds the data), and the depth cut.

Operands on another device: every node is built on one device, and a source living on another is
read through a *transfer* node (``on_device``): an ``EXTERN`` node whose realization realizes the
source on its own device and copies its buffer over. Fusion and the schedule cache therefore only
ever see one device's buffers per kernel, and the copy is a step of its own, keyed and stored like
any other fusion break.

Realizing walks the pending graph recursively, so a node whose pending chain (``LazyNode.depth``)
would exceed ``MAX_PENDING_DEPTH`` first realizes its deepest pending sources: a loop of thousands
of lazy ops (an unrolled recurrence, its gradient) runs in kernels of at most that depth instead of
exhausting Python's recursion limit. Building a node may therefore run kernels; the node module
itself never does.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from zyx.backend import transfer as transfers
from zyx.backend.pool import Buffer
from zyx.dtype import DType
from zyx.graph import node_log
from zyx.graph.node import BOUNDARIES, BOUNDARY_DEPTH, Extern, GatherSpec, LazyNode, Src
from zyx.graph.realization import realize
from zyx.ir.view import View
from zyx.op import ALU, REDUCE, Op

MAX_PENDING_DEPTH = 160  # about 3 Python frames per fused op: ~500 frames, well inside the default 1000


def _made(node: LazyNode) -> LazyNode:
    """``node``, its deepest pending sources realized first when its chain is too deep; an open capture's
    node log notes it."""
    if node.depth > MAX_PENDING_DEPTH:
        _shorten(node)
    if node_log.current is not None:  # a capture tells values made inside it from older ones
        node_log.note_made(node)
    return node


def _shorten(node: LazyNode) -> None:
    """Realize the pending sources of ``node`` deeper than half ``MAX_PENDING_DEPTH`` (so the next
    cut is at least that far away) and recount what ``node`` holds pending. A source that broadcasts
    its inputs (the product inside a matmul, before its reduce) is not stored: its own deep sources
    are, as storing it could take far more memory than anything the graph stores otherwise."""
    for s in node.srcs:
        b = s.base
        if b is None or b.buffer is not None or b.depth <= MAX_PENDING_DEPTH // 2:
            continue
        if any(t.base is not None and t.view.has_broadcast for t in b.srcs):
            _shorten(b)
        else:
            realize(b)
    pending = [s.base for s in node.srcs if s.base is not None and s.base.buffer is None]
    node.cost = (1 if node.op in ALU else 0) + sum(b.cost for b in pending)
    node.has_reduce = node.op in REDUCE or any(b.has_reduce for b in pending)
    node.depth = max((b.depth for b in pending), default=0) + (BOUNDARY_DEPTH if node.op in BOUNDARIES else 1)


def from_buffer(buf: Buffer, dtype: DType, device: Any) -> LazyNode:
    """A realized node over a fresh buffer (its elements indexed flat); one node per buffer, so the
    node's readers are every pending reader of the buffer."""
    n = buf.nbytes // dtype.itemsize if dtype.itemsize else 0
    return _made(LazyNode(Op.BUFFER, None, (), dtype, (n,), device, buf))


def alu(op: Op, srcs: list[Src], dtype: DType, shape: tuple[int, ...], device: Any) -> LazyNode:
    """``op`` (an ALU op) on ``srcs``, each already read at ``shape``."""
    node = LazyNode(op, None, tuple(_local(srcs, device)), dtype, shape, device)
    if node.depth > MAX_PENDING_DEPTH:  # _made inline: this runs for every elementwise op
        _shorten(node)
    if node_log.current is not None:
        node_log.note_made(node)
    return node


def cast(src: Src, dtype: DType, shape: tuple[int, ...], device: Any) -> LazyNode:
    """``src`` converted to ``dtype``."""
    return _made(LazyNode(Op.CAST, None, (on_device(src, device),), dtype, shape, device))


def copy(src: Src, shape: tuple[int, ...], device: Any, store: bool = False) -> LazyNode:
    """The values of ``src`` as a new dense value; ``store`` forces a buffer (clone/contiguous)."""
    return _made(LazyNode(Op.COPY, store, (on_device(src, device),), src.dtype, shape, device))


def reduce(op: Op, src: Src, axes: tuple[int, ...], dtype: DType, device: Any,
           shape: tuple[int, ...] | None = None) -> LazyNode:
    """``op`` over ``axes`` of ``src`` (result keeps the axes as size 1: ``shape``, worked out when not
    given); ``dtype`` is the accumulator's."""
    if shape is None:
        shape = tuple(1 if i in axes else d for i, d in enumerate(src.view.shape))
    return _made(LazyNode(op, tuple(axes), (on_device(src, device),), dtype, shape, device))


def pad(src: Src, pads: tuple[tuple[int, int], ...], value: Any, device: Any) -> LazyNode:
    """``src`` with ``pads[i] = (before, after)`` elements of ``value`` on each dim (non-negative)."""
    shape = tuple(d + lo + hi for d, (lo, hi) in zip(src.view.shape, pads))
    return _made(LazyNode(Op.PAD, (tuple(pads), value), (on_device(src, device),), src.dtype, shape, device))


def const(value: Any, dtype: DType, shape: tuple[int, ...], device: Any) -> LazyNode:
    """``value`` (exactly representable in ``dtype``) at every element of ``shape``."""
    return _made(LazyNode(Op.CONST, Src(None, None, dtype, value, param=not dtype.is_bool), (), dtype, shape, device))


def gather(table: Src, indices: tuple[Src, ...], spec: GatherSpec, shape: tuple[int, ...], device: Any) -> LazyNode:
    """The indexed load ``out[o] = table[t(o)]`` of ``spec`` (``GatherSpec``) over the integer ``indices``;
    an index outside its table axis raises the device error flag (``IndexOutOfRange`` at readback)."""
    srcs = tuple(_local((table, *indices), device))
    return _made(LazyNode(Op.GATHER, spec, srcs, table.dtype, shape, device))


def extern(name: str, run: Callable[[list[Buffer]], Buffer], srcs: list[Src], dtype: DType,
           shape: tuple[int, ...], device: Any) -> LazyNode:
    """A value computed by a kernel that is not IR (see ``Extern``) from the realized ``srcs``."""
    return _made(LazyNode(Op.EXTERN, Extern(name, run), tuple(_local(srcs, device)), dtype, shape, device))


def choose_device(inputs: list[tuple[Any, int]], out_bytes: int, among: list[Any] | None = None) -> Any:
    """The device a kernel runs on, given its ``(device, bytes read)`` inputs (DESIGN.md).

    The device holding most of the input bytes that has room for the output (ties: the first
    operand's); inputs elsewhere are copied over (``on_device``). ``among``: the devices it may
    choose (the pinned operands', ``frontend.args.device_of``), when not all of them.
    """
    held: dict[Any, int] = {}
    for dev, nbytes in inputs:
        held[dev] = held.get(dev, 0) + nbytes
    if among is not None:
        held = {d: n for d, n in held.items() if d in among}
    ranked = sorted(held, key=lambda d: -held[d])  # stable: first operand first among equals
    for dev in ranked:
        if dev.global_mem_bytes - dev.pool.bytes_in_use >= out_bytes:
            return dev
    return ranked[0]


def on_device(src: Src, device: Any) -> Src:
    """``src`` as read by a node on ``device``: itself, or (its base living on another device) a read of
    a transfer node. The whole base moves when the view reads at least half of it (the view kept, so a
    broadcast moves its values once); a smaller part is made dense on its own device first (a kernel
    there, fused with the work producing it), and only that part moves."""
    b = src.base
    if b is None or b.device is device:
        return src
    v = src.view
    kept = View(tuple(d if st else 1 for d, st in zip(v.shape, v.strides)), v.strides, v.offset)  # no broadcasts
    if 2 * kept.numel >= math.prod(b.shape):
        return Src(transfer(b, device), v, src.dtype)
    part = copy(Src(b, kept, src.dtype), kept.shape, b.device)
    return Src(transfer(part, device), View.contiguous(kept.shape).expand(v.shape), src.dtype)


TRANSFER = "transfer"  # the name of a transfer node's Extern


def transfer(node: LazyNode, device: Any) -> LazyNode:
    """The values of ``node`` (another device's) on ``device``: realized by realizing ``node`` where it
    lives and copying its buffer over (``backend.transfer.to_device``)."""
    def run(bufs: list[Buffer]) -> Buffer:
        return transfers.to_device(bufs[0], device)

    src = Src(node, View.contiguous(node.shape), node.dtype)
    return _made(LazyNode(Op.EXTERN, Extern(TRANSFER, run), (src,), node.dtype, node.shape, device))


def _local(srcs: Sequence[Src], device: Any) -> Sequence[Src]:
    """``srcs`` read on ``device`` (``on_device``); the same sequence when all are there already."""
    for s in srcs:
        b = s.base
        if b is not None and b.device is not device:
            return [on_device(t, device) for t in srcs]
    return srcs
