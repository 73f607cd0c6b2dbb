"""Building graph nodes: one function per kind of node (``graph.node`` holds the data), and the depth cut.

Realizing walks the pending graph recursively, so a node whose pending chain (``LazyNode.depth``)
would exceed ``MAX_PENDING_DEPTH`` first realizes its deepest pending sources: a loop of thousands
of lazy ops (an unrolled recurrence, its gradient) runs in kernels of at most that depth instead of
exhausting Python's recursion limit. Building a node may therefore run kernels; the node module
itself never does.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from zyx.backend.pool import Buffer
from zyx.dtype import DType
from zyx.graph import node_log
from zyx.graph.node import BOUNDARIES, BOUNDARY_DEPTH, Extern, GatherSpec, LazyNode, Src
from zyx.graph.realization import realize
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
    node = LazyNode(op, None, tuple(srcs), dtype, shape, device)
    if node.depth > MAX_PENDING_DEPTH:  # _made inline: this runs for every elementwise op
        _shorten(node)
    if node_log.current is not None:
        node_log.note_made(node)
    return node


def cast(src: Src, dtype: DType, shape: tuple[int, ...], device: Any) -> LazyNode:
    """``src`` converted to ``dtype``."""
    return _made(LazyNode(Op.CAST, None, (src,), dtype, shape, device))


def copy(src: Src, shape: tuple[int, ...], device: Any, store: bool = False) -> LazyNode:
    """The values of ``src`` as a new dense value; ``store`` forces a buffer (clone/contiguous)."""
    return _made(LazyNode(Op.COPY, store, (src,), src.dtype, shape, device))


def reduce(op: Op, src: Src, axes: tuple[int, ...], dtype: DType, device: Any,
           shape: tuple[int, ...] | None = None) -> LazyNode:
    """``op`` over ``axes`` of ``src`` (result keeps the axes as size 1: ``shape``, worked out when not
    given); ``dtype`` is the accumulator's."""
    if shape is None:
        shape = tuple(1 if i in axes else d for i, d in enumerate(src.view.shape))
    return _made(LazyNode(op, tuple(axes), (src,), dtype, shape, device))


def pad(src: Src, pads: tuple[tuple[int, int], ...], value: Any, device: Any) -> LazyNode:
    """``src`` with ``pads[i] = (before, after)`` elements of ``value`` on each dim (non-negative)."""
    shape = tuple(d + lo + hi for d, (lo, hi) in zip(src.view.shape, pads))
    return _made(LazyNode(Op.PAD, (tuple(pads), value), (src,), src.dtype, shape, device))


def const(value: Any, dtype: DType, shape: tuple[int, ...], device: Any) -> LazyNode:
    """``value`` (exactly representable in ``dtype``) at every element of ``shape``."""
    return _made(LazyNode(Op.CONST, Src(None, None, dtype, value, param=not dtype.is_bool), (), dtype, shape, device))


def gather(table: Src, indices: tuple[Src, ...], spec: GatherSpec, shape: tuple[int, ...], device: Any) -> LazyNode:
    """The indexed load ``out[o] = table[t(o)]`` of ``spec`` (``GatherSpec``) over the integer ``indices``;
    an index outside its table axis raises the device error flag (``IndexOutOfRange`` at readback)."""
    return _made(LazyNode(Op.GATHER, spec, (table, *indices), table.dtype, shape, device))


def extern(name: str, run: Callable[[list[Buffer]], Buffer], srcs: list[Src], dtype: DType,
           shape: tuple[int, ...], device: Any) -> LazyNode:
    """A value computed by a kernel that is not IR (see ``Extern``) from the realized ``srcs``."""
    return _made(LazyNode(Op.EXTERN, Extern(name, run), tuple(srcs), dtype, shape, device))


def choose_device(inputs: list[tuple[Any, int]], out_bytes: int) -> Any:
    """The device a kernel runs on, given its ``(device, bytes read)`` inputs (DESIGN.md).

    The device holding most of the input bytes that has room for the output (ties: the
    first operand's); inputs elsewhere are copied over when the kernel is built. (A pinned
    operand overrides this before it is called: ``frontend.args.device_of``.)
    """
    held: dict[Any, int] = {}
    for dev, nbytes in inputs:
        held[dev] = held.get(dev, 0) + nbytes
    ranked = sorted(held, key=lambda d: -held[d])  # stable: first operand first among equals
    for dev in ranked:
        if dev.global_mem_bytes - dev.pool.bytes_in_use >= out_bytes:
            return dev
    return ranked[0]
