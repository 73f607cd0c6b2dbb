"""Graph nodes: a ``LazyNode`` is one value, realized (a device buffer) or pending (an op on sources).

A ``LazyNode`` of ``shape`` (dense row-major once stored) is either a realized device
buffer (``op is Op.BUFFER``) or a pending op on ``Src`` operands. A ``Src`` reads another
node through a ``View`` (movement ops are views: index arithmetic, never copies) or is a
constant. Nodes only point at their sources, so a pending graph nobody can reach any more
is freed by reference counting and never runs.

The kinds of pending node (``node.op``):

* an ALU op (``zyx.op.ALU``; ``arg`` None) on one to three sources;
* a reduce (``zyx.op.REDUCE``; ``arg`` the reduced axes, kept as size 1);
* ``CAST``, ``COPY`` (``arg``: stored when True: clone/contiguous), ``PAD`` (``arg``: pads, value);
* ``CONST``: one value at every element of ``shape`` (full, zeros, ones); ``arg`` is its constant
  ``Src`` (a float reaches the kernel as a scalar argument, so a new value compiles nothing);
* ``GATHER``: an indexed load ``out[o] = table[t(o)]`` (``arg``: a ``GatherSpec`` saying, per table
  axis, which output coordinate or which integer index source gives ``t(o)``'s coordinate);
* ``EXTERN``: a kernel that is not IR (a contract kernel, random bits): ``arg`` is an ``Extern``
  whose ``run`` launches it on the realized buffers of the sources and returns the output.

Every node keeps weak references to the pending nodes that read it (``readers``), so an
in-place write into a buffer can first run everything still waiting to read it.

Depth: realizing walks the pending graph recursively (fusion, the schedule key), so each node
keeps the weighted length of its longest pending chain (``depth``: a kernel boundary counts
``BOUNDARY_DEPTH``, as its realization nests several calls); ``graph.build`` cuts a chain that
grows too deep. This module holds data only: building a node runs nothing.
"""
from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from zyx.backend.pool import Buffer
from zyx.dtype import DType
from zyx.ir.view import View
from zyx.op import ALU, REDUCE, Op

_ref = weakref.ref

BOUNDARY_DEPTH = 4  # a reduce, copy or extern node: a kernel of its own, realized ~10 frames deeper
BOUNDARIES = frozenset(REDUCE) | {Op.COPY, Op.EXTERN}


@dataclass(frozen=True, eq=False)
class Extern:
    """A kernel the graph runs but does not generate: ``run(input buffers) -> output buffer``.

    ``name`` names it in debug output; the graph realizes every source first (a fusion break)."""

    name: str
    run: Callable[[list[Buffer]], Buffer]


class Src:
    """An operand: ``base`` (a LazyNode) read through ``view`` as ``dtype``, or a constant ``value``.

    ``param``: the constant reaches its kernel as a scalar argument, not a literal, so a new
    value reuses the compiled kernel (default: float constants; ``frontend.elementwise`` also marks
    integer operands of ops that gain nothing from a literal).

    ``offset_arg``: for a read of a realized buffer at a nonzero offset, the scalar argument that
    passes the offset (``graph.offset_args``, made once so every user names the same constant)."""

    __slots__ = ("base", "view", "dtype", "value", "param", "offset_arg")

    def __init__(self, base: LazyNode | None, view: View | None, dtype: DType, value: Any = None,
                 param: bool | None = None) -> None:
        self.base = base
        self.view = view
        self.dtype = dtype
        self.value = value
        self.param = (base is None and dtype.kind == "float") if param is None else param
        self.offset_arg: Any = None


class LazyNode:
    """A value: a realized buffer or a pending op (see the module docstring)."""

    __slots__ = ("op", "arg", "srcs", "dtype", "shape", "device", "buffer", "readers", "cost", "has_reduce",
                 "depth", "pinned", "version", "__weakref__")

    def __init__(self, op: Op, arg: Any, srcs: tuple[Src, ...], dtype: DType, shape: tuple[int, ...],
                 device: Any, buffer: Buffer | None = None) -> None:
        self.op = op
        self.arg = arg
        self.srcs = srcs
        self.dtype = dtype
        self.shape = shape
        self.device = device
        self.buffer = buffer
        self.readers: list[weakref.ref] | None = None  # weak refs to pending nodes reading this one
        cost = 1 if op in ALU else 0
        has_reduce = op in REDUCE
        pinned = False  # computed from a pinned value: kernels using it stay on its device
        depth = 0
        me = None
        for s in srcs:
            b = s.base
            if b is None:
                continue
            if b.pinned:
                pinned = True
            if b.buffer is None:
                cost += b.cost
                if b.has_reduce:
                    has_reduce = True
                if b.depth > depth:
                    depth = b.depth
            readers = b.readers
            if readers is None:  # the common case inline: this runs for every operand of every op
                b.readers = [me or (me := _ref(self))]
            else:
                _add_reader(b, self)
        self.cost = cost
        self.has_reduce = has_reduce
        self.depth = depth + (BOUNDARY_DEPTH if op in BOUNDARIES else 1) if srcs else 0
        self.pinned = pinned
        self.version = 0  # in-place writes into this node's buffer so far (autograd checks saved values)

    @property
    def realized(self) -> bool:
        return self.buffer is not None

    def __repr__(self) -> str:
        state = ("realized" if self.buffer is not None
                 else f"pending {self.op}{'' if self.arg is None else ' ' + str(self.arg)}")
        return f"<LazyNode {state} {self.dtype.name}{list(self.shape)}>"


def _add_reader(node: LazyNode, reader: LazyNode) -> None:
    """Note that pending ``reader`` reads ``node``; at powers of two the list drops readers that died
    or ran (amortized O(1)), so a long-lived weight's list stays short."""
    readers = node.readers
    if readers is None:
        node.readers = [_ref(reader)]
        return
    readers.append(_ref(reader))
    n = len(readers)
    if n >= 64 and not (n & (n - 1)):
        readers[:] = [r for r in readers if (m := r()) is not None and m.buffer is None]


def pending_readers(node: LazyNode) -> list[LazyNode]:
    """The pending nodes that read ``node`` (and forgets them: the caller runs them)."""
    readers = node.readers
    node.readers = None
    if not readers:
        return []
    return [m for r in readers if (m := r()) is not None and m.buffer is None]


@dataclass(frozen=True)
class GatherSpec:
    """How a gather's output coordinates ``o`` pick the table element it reads.

    ``axes[a]`` (one per table axis): ``k >= 0`` when table coordinate ``a`` is output coordinate
    ``o[k]``, ``~j`` when it is the value of index source ``j``. Index source ``j`` is read at the
    output coordinates ``reads[j]`` (its view has that many axes); ``wrap[j]``: a negative value counts
    from the end of its table axis (advanced indexing), else it is out of range (gather)."""

    axes: tuple[int, ...]
    reads: tuple[tuple[int, ...], ...]
    wrap: tuple[bool, ...]
