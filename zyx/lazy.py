"""The lazy graph: ops record nodes, realization fuses them into kernels and runs them.

A ``LazyNode`` is one value of ``shape`` (dense row-major once stored): either a
realized device buffer (``op == "buffer"``) or a pending op on ``Src`` operands. A
``Src`` reads another node through a ``View`` (movement ops are views: index
arithmetic, never copies) or is a constant. Nodes only point at their sources, so a
pending graph nobody can reach any more is freed by reference counting and never runs.

Realizing a node builds one kernel for it, inlining pending sources (fusion) and
storing those where inlining would recompute work:

* elementwise chains always fuse, through any view (composed by the symbolic index
  algebra), unless the view broadcasts a computed value (expand) or the value is
  shared inside the graph and costly to recompute;
* a reduce fuses into its consumer when read through an identity view (same flat
  index: keepdim reshapes), with no pad above it, not inside another reduce, and with
  the kernel's reduce shape; so ``(a*b).sum(1) + c`` is one kernel;
* a reduce read through a view that broadcasts it back along the output's last axis
  (``x - x.max(-1, keepdim=True)``) fuses as a *row* reduce when it reads only the outer
  coordinates and reduces as many elements as that axis holds: each row's reduces are
  computed once, then its outputs (``ir.kernel.row_kernel``), so softmax and layer_norm over
  the last dim are one kernel each;
* ``copy`` nodes from ``clone``/``contiguous`` are always stored (explicit breaks).

Stored sources are realized first (their kernels are enqueued first on the in-order
queue). After realization a node drops its sources and holds only its buffer, so
buffers die as soon as no tensor and no pending node needs them.

In-place writes: ``pending_readers_flush(buffer)`` realizes every pending node that
reads ``buffer`` before anyone writes into it.
"""
from __future__ import annotations

import math
import weakref
from typing import Any

from zyx import dtype as dtypes
from zyx import settings
from zyx.backend.launch import runtime_lock
from zyx.backend.pool import Buffer
from zyx.dtype import DType
from zyx.errors import ZyxError
from zyx.ir import ops
from zyx.ir import symbolic as sym
from zyx.ir.kernel import Kernel, out_var, red_var
from zyx.ir.view import View, contiguous_strides
from zyx.opt.ir_tuning import choose_opts

_BITS = {1: dtypes.uint8, 2: dtypes.uint16, 4: dtypes.uint32, 8: dtypes.uint64}
SHARED_RECOMPUTE_LIMIT = 6  # a shared pending value costing more ALU ops than this is stored
# a row kernel runs a row in one work item: rows longer than this fuse only when there are many rows
# (a few long rows reduce faster with work items sharing each reduce, then an elementwise kernel)
ROW_SERIAL_MAX, ROW_MANY = 1 << 15, 64


class Src:
    """An operand: ``base`` (a LazyNode) read through ``view`` as ``dtype``, or a constant ``value``.

    ``param``: the constant reaches its kernel as a scalar argument, not a literal, so a new
    value reuses the compiled kernel (default: float constants; ``frontend.elementwise`` also marks
    integer operands of ops that gain nothing from a literal)."""

    __slots__ = ("base", "view", "dtype", "value", "param")

    def __init__(self, base: LazyNode | None, view: View | None, dtype: DType, value: Any = None,
                 param: bool | None = None) -> None:
        self.base = base
        self.view = view
        self.dtype = dtype
        self.value = value
        self.param = (base is None and dtype.kind == "float") if param is None else param


class LazyNode:
    """A value: a realized buffer or a pending op (see the module docstring)."""

    __slots__ = ("op", "arg", "srcs", "dtype", "shape", "device", "buffer", "readers", "cost", "has_reduce",
                 "pinned", "__weakref__")

    def __init__(self, op: str, arg: Any, srcs: tuple[Src, ...], dtype: DType, shape: tuple[int, ...],
                 device: Any, buffer: Buffer | None = None) -> None:
        self.op = op
        self.arg = arg
        self.srcs = srcs
        self.dtype = dtype
        self.shape = shape
        self.device = device
        self.buffer = buffer
        self.readers: list[weakref.ref] | None = None  # weak refs to pending nodes reading this one
        cost = 1 if op == "alu" else 0
        has_reduce = op == "reduce"
        pinned = False  # computed from a pinned value: kernels using it stay on its device
        for s in srcs:
            b = s.base
            if b is None:
                continue
            if b.pinned:
                pinned = True
            buf = b.buffer
            if buf is not None:
                _register_reader(buf, self)
            else:
                cost += b.cost
                if b.has_reduce:
                    has_reduce = True
                readers = b.readers
                if readers is None:
                    b.readers = [_ref(self)]
                else:
                    readers.append(_ref(self))
                    n = len(readers)
                    if n >= 64 and not (n & (n - 1)):  # at powers of two: drop dead readers (amortized O(1))
                        live = [r for r in readers if r() is not None]
                        if len(live) <= n // 2:
                            readers[:] = live
        self.cost = cost
        self.has_reduce = has_reduce
        self.pinned = pinned

    @property
    def realized(self) -> bool:
        return self.buffer is not None

    def __repr__(self) -> str:
        state = ("realized" if self.buffer is not None
                 else f"pending {self.op}{'' if self.arg is None else ' ' + str(self.arg)}")
        return f"<LazyNode {state} {self.dtype.name}{list(self.shape)}>"


_ref = weakref.ref


def _register_reader(buf: Buffer, node: LazyNode) -> None:
    """Note that pending ``node`` reads ``buf`` (``Buffer.readers``: weak references, pruned of
    dead and realized nodes at powers of two, so a long-lived weight's list stays short)."""
    readers = buf.readers
    if readers is None:
        buf.readers = [_ref(node)]
        return
    readers.append(_ref(node))
    n = len(readers)
    if n >= 64 and not (n & (n - 1)):
        readers[:] = [r for r in readers if (m := r()) is not None and m.buffer is None]


def from_buffer(buf: Buffer, dtype: DType, device: Any) -> LazyNode:
    """A realized node over an existing buffer (its elements indexed flat)."""
    n = buf.nbytes // dtype.itemsize if dtype.itemsize else 0
    return LazyNode("buffer", None, (), dtype, (n,), device, buf)


def pending_readers_flush(buf: Buffer) -> None:
    """Realize every pending node that reads ``buf`` (before an in-place write into it)."""
    readers = buf.readers
    if not readers:
        return
    buf.readers = None
    for r in readers:
        node = r()
        if node is not None and node.buffer is None:
            realize(node)


# ------------------------------------------------------------------ building

def alu(op: str, srcs: list[Src], dtype: DType, shape: tuple[int, ...], device: Any) -> LazyNode:
    return LazyNode("alu", op, tuple(srcs), dtype, shape, device)


def cast(src: Src, dtype: DType, shape: tuple[int, ...], device: Any) -> LazyNode:
    return LazyNode("cast", None, (src,), dtype, shape, device)


def copy(src: Src, shape: tuple[int, ...], device: Any, store: bool = False) -> LazyNode:
    """The values of ``src`` as a new dense value; ``store`` forces a buffer (clone/contiguous)."""
    return LazyNode("copy", store, (src,), src.dtype, shape, device)


def reduce(op: str, src: Src, axes: tuple[int, ...], dtype: DType, device: Any) -> LazyNode:
    """``op`` over ``axes`` of ``src`` (result keeps the axes as size 1); ``dtype`` is the accumulator's."""
    shape = tuple(1 if i in axes else d for i, d in enumerate(src.view.shape))
    return LazyNode("reduce", (op, tuple(axes)), (src,), dtype, shape, device)


def pad(src: Src, pads: tuple[tuple[int, int], ...], value: Any, device: Any) -> LazyNode:
    """``src`` with ``pads[i] = (before, after)`` elements of ``value`` on each dim (non-negative)."""
    shape = tuple(d + lo + hi for d, (lo, hi) in zip(src.view.shape, pads))
    return LazyNode("pad", (tuple(pads), value), (src,), src.dtype, shape, device)


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


# ------------------------------------------------------------------ scheduling

def _identity(view: View, shape: tuple[int, ...]) -> bool:
    """Whether ``view`` reads a dense value of ``shape`` at the same flat index it produces."""
    if view.offset != 0 or view.numel != math.prod(shape):
        return False
    return all(s == c for s, c, d in zip(view.strides, contiguous_strides(view.shape), view.shape) if d != 1)


def _broadcasts(view: View) -> bool:
    return any(s == 0 and d > 1 for s, d in zip(view.strides, view.shape))


def _pending_cost_above(n: LazyNode, limit: int) -> bool:
    """Whether more than ``limit`` ALU ops are still pending in ``n`` (``n.cost`` is fixed at creation
    and also counts work realized since); stops as soon as the answer is known."""
    cost, stack = 0, [n]
    while stack:
        m = stack.pop()
        if m.buffer is not None:
            continue
        if m.op == "alu":
            cost += 1
            if cost > limit:
                return True
        stack.extend(s.base for s in m.srcs if s.base is not None)
    return False


def _count_parents(root: LazyNode) -> dict[int, int]:
    counts: dict[int, int] = {}
    stack = [root]
    seen = {id(root)}
    while stack:
        n = stack.pop()
        for s in n.srcs:
            b = s.base
            if b is None or b.buffer is not None:
                continue
            counts[id(b)] = counts.get(id(b), 0) + 1
            if id(b) not in seen:
                seen.add(id(b))
                stack.append(b)
    return counts


class _KernelBuilder:
    def __init__(self, root: LazyNode, counts: dict[int, int]) -> None:
        self.root = root
        self.counts = counts
        self.bufs: list[DType] = [root.dtype]
        self.args: list[Buffer | None] = [None]
        self.index: dict[tuple[int, str], int] = {}
        self.red_shape: tuple[int, ...] | None = None
        self.in_reduce = False
        self.row = False  # a reduce broadcast along the output's last axis was fused (a row kernel)
        self.plain = False  # a reduce reading the output's last axis was fused (no row kernel)
        self.outer = {f"o{i}" for i in range(len(root.shape) - 1)}
        self.fusable: dict[int, bool] = {}
        self.copies: dict[int, Buffer] = {}  # inputs from other devices, copied over
        self.params: list[Src] = []  # constants passed as scalar arguments (ops.Param slots)
        self.param_slot: dict[int, int] = {}

    def build(self) -> Kernel:
        coords = [out_var(i, d) for i, d in enumerate(self.root.shape)]
        root = self.root
        if root.op == "copy" and root.srcs[0].base is not None and root.srcs[0].base.buffer is not None:
            # a stored copy of stored values moves raw bits (NaN payloads, bool bytes kept)
            bits = _BITS[root.dtype.itemsize]
            src = root.srcs[0]
            self.bufs[0] = bits
            body = self.src_expr(Src(src.base, src.view, bits), coords, sym.ONE)
            return Kernel(tuple(root.shape), (), tuple(self.bufs), body)
        body = self.node_expr(self.root, coords, sym.ONE)
        if body.dtype != self.root.dtype:
            body = ops.Cast(body, self.root.dtype)
        return Kernel(tuple(self.root.shape), self.red_shape or (), tuple(self.bufs), body,
                      tuple(s.dtype for s in self.params))

    def buf_index(self, buf: Buffer, dtype: DType) -> int:
        if buf.pool is not None and buf.pool.device is not self.root.device:
            buf = self.copied_over(buf)
        key = (id(buf), dtype.name)
        i = self.index.get(key)
        if i is None:
            i = self.index[key] = len(self.bufs)
            self.bufs.append(dtype)
            self.args.append(buf)
        return i

    def copied_over(self, buf: Buffer) -> Buffer:
        """An input living on another device, copied to the kernel's device (once per kernel)."""
        from zyx.backend import transfer

        got = self.copies.get(id(buf))
        if got is None:
            got = transfer.upload(self.root.device, transfer.read(buf, buf.nbytes))
            self.copies[id(buf)] = got
        return got

    def can_inline(self, n: LazyNode, view: View, valid: sym.Node, inner: list[sym.Node]) -> bool:
        if n.op == "copy" and n.arg:
            return False
        if self.fusable_reduce(n):
            if not _identity(view, n.shape):
                return self.row_fusable(n, valid, inner)
            if n.op != "reduce" and self.store_shared_reduces(n):
                return self.can_inline(n, view, valid, inner)  # now plain elementwise work
            if self.in_reduce or valid != sym.ONE or self.counts.get(id(n), 0) > 1:
                return False
            if self.row and not self.row_coords(inner):
                return False
            return self.red_shape is None or self.red_shape == self.red_sizes(n)
        if n.cost > 0 and _broadcasts(view):
            return False
        return not (self.counts.get(id(n), 0) > 1 and n.cost > SHARED_RECOMPUTE_LIMIT
                    and _pending_cost_above(n, SHARED_RECOMPUTE_LIMIT))

    def store_shared_reduces(self, n: LazyNode) -> bool:
        """Store the pending reduces ``n`` would fuse when each is (or sits inside) a value read by several
        nodes: such values are stored whichever kernel reaches them first, and storing them now lets ``n``
        be judged as the elementwise work it then is (softmax of a matmul: one row kernel, not two)."""
        found: list[LazyNode] = []
        self.inner_reduces(n, found)
        if not found or any(self.counts.get(id(r), 0) < 2 for r in found):
            return False
        for r in found:
            realize(r)
        self.fusable.clear()
        return True

    def inner_reduces(self, n: LazyNode, out: list[LazyNode]) -> None:
        """The first nodes holding a pending reduce that inlining ``n`` would fuse (along the sources
        ``fusable_reduce`` follows): each a reduce, or a shared value with a reduce inside."""
        for s in n.srcs:
            b = s.base
            if b is None or b.buffer is not None or (b.op == "copy" and b.arg) or not _identity(s.view, b.shape):
                continue
            if not self.fusable_reduce(b):
                continue
            if b.op == "reduce":
                out.append(b)
            elif self.counts.get(id(b), 0) > 1:
                if not self.store_shared_reduces(b):  # else b is reduce-free now: recomputing it is cheap
                    out.append(b)
            else:
                self.inner_reduces(b, out)

    def row_coords(self, coords: list[sym.Node]) -> bool:
        """Whether ``coords`` use only the outer output coordinates (not the last output axis, no reduce)."""
        return all(v.name in self.outer for c in coords for v in sym.variables(c))

    def row_fusable(self, n: LazyNode, valid: sym.Node, inner: list[sym.Node]) -> bool:
        """Row fusion: a reduce read through a view that broadcasts it back along the output's last axis
        (``x - x.max(-1, keepdim=True)``), reducing as many elements as that axis holds and reading only
        the outer coordinates: each row's reduce is computed once per kernel (``ir.kernel.row_kernel``)
        instead of being stored, so softmax and layer_norm are one kernel each."""
        shape = self.root.shape
        if not shape or shape[-1] < 2 or valid != sym.ONE or self.plain:
            return False
        if shape[-1] > ROW_SERIAL_MAX and math.prod(shape[:-1]) < ROW_MANY:
            return False
        sizes = self.red_sizes(n)
        if sizes != (shape[-1],) or self.red_shape not in (None, sizes) or not self.row_coords(inner):
            return False
        self.row = True
        return True

    def fusable_reduce(self, n: LazyNode) -> bool:
        """Whether ``n`` contains a pending reduce that inlining it would fuse (not one that gets stored)."""
        if not n.has_reduce or n.buffer is not None:
            return False
        got = self.fusable.get(id(n))
        if got is None:
            got = n.op == "reduce" or any(
                s.base is not None and s.base.buffer is None and not (s.base.op == "copy" and s.base.arg)
                and _identity(s.view, s.base.shape) and self.fusable_reduce(s.base) for s in n.srcs)
            self.fusable[id(n)] = got
        return got

    def red_sizes(self, n: LazyNode) -> tuple[int, ...] | None:
        """The reduce sizes of the pending reduce that inlining ``n`` fuses."""
        if n.op == "reduce":
            return tuple(n.srcs[0].view.shape[a] for a in n.arg[1])
        for s in n.srcs:
            if s.base is not None and _identity(s.view, s.base.shape) and self.fusable_reduce(s.base):
                return self.red_sizes(s.base)
        return None

    def src_expr(self, s: Src, coords: list[sym.Node], valid: sym.Node) -> ops.Expr:
        n = s.base
        if n is None:
            if not s.param:
                return ops.Const(s.value, s.dtype)
            slot = self.param_slot.get(id(s))
            if slot is None:
                slot = self.param_slot[id(s)] = len(self.params)
                self.params.append(s)
            return ops.Param(slot, s.dtype)
        v = s.view
        if n.buffer is None:
            if v.shape == n.shape and _identity(v, n.shape):
                inner = coords
            else:
                flat = sym.add(v.offset, *(sym.mul(c, st) for c, st, d in zip(coords, v.strides, v.shape) if d != 1))
                inner = sym.unravel(flat, n.shape)
            if self.can_inline(n, v, valid, inner):
                if self.row and self.in_reduce and self.row_coords(inner):  # a hoisted row reduce: not inside
                    saved, self.in_reduce = self.in_reduce, False
                    try:
                        return self.node_expr(n, inner, valid)
                    finally:
                        self.in_reduce = saved
                return self.node_expr(n, inner, valid)
            realize(n)
        if valid == sym.ZERO:
            return ops.Const(0, s.dtype)
        index = sym.add(v.offset, *(sym.mul(c, st) for c, st, d in zip(coords, v.strides, v.shape) if d != 1))
        return ops.Load(self.buf_index(n.buffer, s.dtype), s.dtype, index, valid)

    def node_expr(self, n: LazyNode, coords: list[sym.Node], valid: sym.Node) -> ops.Expr:
        op = n.op
        if op == "alu":
            srcs = tuple(self.src_expr(s, coords, valid) for s in n.srcs)
            return ops.Alu(n.arg, srcs, n.dtype)
        if op == "cast":
            inner = self.src_expr(n.srcs[0], coords, valid)
            return inner if inner.dtype == n.dtype else ops.Cast(inner, n.dtype)
        if op == "copy":
            return self.src_expr(n.srcs[0], coords, valid)
        if op == "pad":
            pads, value = n.arg
            src = n.srcs[0]
            inner_coords, conds = [], []
            for c, (lo, hi), d in zip(coords, pads, src.view.shape):
                inner_coords.append(sym.add(c, -lo) if lo else c)
                if lo:
                    conds.append(sym.ge(c, lo))
                if hi:
                    conds.append(sym.lt(c, lo + d))
            cond = sym.land(*conds)
            inner = self.src_expr(src, inner_coords, sym.land(valid, cond))
            if cond == sym.ONE:
                return inner
            if isinstance(inner, ops.Load) and inner.other == 0:
                return ops.Load(inner.buf, inner.dtype, inner.index, inner.valid, value)
            return ops.Alu("where", (ops.Cond(cond), inner, ops.Const(value, n.dtype)), n.dtype)
        if op == "reduce":
            rop, axes = n.arg
            src = n.srcs[0]
            sizes = tuple(src.view.shape[a] for a in axes)
            if self.red_shape is None:
                self.red_shape = sizes
            if not self.row_coords(coords):
                self.plain = True
            inner = list(coords)
            for j, a in enumerate(axes):
                inner[a] = red_var(j, sizes[j])
            saved, self.in_reduce = self.in_reduce, True
            body = self.src_expr(src, inner, valid)
            self.in_reduce = saved
            return ops.Reduce(rop, body, n.dtype)
        if op == "buffer":  # pragma: no cover - handled by src_expr
            raise ZyxError("internal: a realized node reached node_expr")
        raise ZyxError(f"internal: unknown lazy op {op!r}")


# ------------------------------------------------------------------ schedule cache
#
# Realizing a graph whose structure was seen before replays its recorded schedule: the
# same launches (compiled kernels, sizes) on this graph's buffers, with no fusion
# decisions, symbolic simplification or codegen. The key is the pending graph's
# structure: per pending node (post-order) its op, arg, dtype, shape and sources; a
# source is a constant (dtype, value), a realized buffer (position of first use, view,
# dtype) or a pending node (position, view, dtype). Buffers are positional arguments,
# so the key never holds one. ``schedule_stats`` counts builds (codegen runs) and hits.

SCHEDULE_CACHE_SIZE = 4096
_schedules: dict[tuple, tuple] = {}
schedule_stats = {"builds": 0, "hits": 0}
_allocs: list[tuple[LazyNode, Buffer]] | None = None  # outputs allocated while recording


class _NotCacheable(Exception):
    pass


_PARAM = "param"  # a graph key's stand-in for a scalar argument's value (passed at launch)
_param_objs: dict[int, Src] | None = None  # while recording: id(launch argument) -> its constant


def _value_key(v: Any) -> Any:
    # -0.0 == 0.0 and nan != nan, but they are different literals
    return repr(v) if isinstance(v, float) else v


def _graph_key(root: LazyNode) -> tuple[tuple, list[LazyNode], list[Buffer], list[Src]] | None:
    """(structural key, pending nodes in key order, input buffers by position, float constants by
    position); None when not cacheable."""
    device = root.device
    nodes: list[LazyNode] = []
    bufs: list[Buffer] = []
    consts: list[Src] = []
    items: list[tuple] = []
    try:
        _visit(root, device, nodes, bufs, consts, {}, {}, items)
    except _NotCacheable:
        return None
    # the heuristics kind too: a schedule holds kernels shaped for it (settings.set_heuristics)
    return (device, settings.heuristics_kind(device), tuple(items)), nodes, bufs, consts


def _visit(n: LazyNode, device: Any, nodes: list, bufs: list, consts: list, npos: dict, bpos: dict,
           items: list) -> int:
    # a module-level function, not a closure: a recursive closure is a reference cycle
    # that would keep the graph's buffers alive until the garbage collector runs
    srcs = []
    for s in n.srcs:
        b = s.base
        if b is None:
            if s.param:
                consts.append(s)
                srcs.append((s.dtype, _PARAM))
            else:
                srcs.append((s.dtype, _value_key(s.value)))
            continue
        v = s.view
        if b.buffer is not None:
            buf = b.buffer
            i = bpos.get(id(buf))
            if i is None:
                if buf.pool is None or buf.pool.device is not device:
                    raise _NotCacheable
                i = bpos[id(buf)] = len(bufs)
                bufs.append(buf)
            srcs.append((-1 - i, v.shape, v.strides, v.offset, s.dtype))
        else:
            i = npos.get(id(b))
            if i is None:
                i = _visit(b, device, nodes, bufs, consts, npos, bpos, items)
            srcs.append((i, v.shape, v.strides, v.offset, s.dtype))
    arg = n.arg
    if n.op == "pad":
        arg = (arg[0], _value_key(arg[1]))
    items.append((n.op, arg, n.dtype, n.shape, n.device is device, tuple(srcs)))
    npos[id(n)] = len(nodes)
    nodes.append(n)
    return len(nodes) - 1


def _record(key: tuple, nodes: list[LazyNode], bufs: list[Buffer], consts: list[Src], launches: list,
            allocs: list) -> None:
    """Store the schedule of a finished build (when every launch argument can be named)."""
    from zyx.backend import arith_flags

    device = key[0]
    npos = {id(n): i for i, n in enumerate(nodes)}
    where: dict[int, tuple[int, int]] = {id(b.cl): (0, i) for i, b in enumerate(bufs) if b.cl is not None}
    outs = []
    for j, (node, buf) in enumerate(allocs):
        if id(node) not in npos or buf.pool is None or buf.pool.device is not device:
            return
        outs.append((npos[id(node)], buf.nbytes))
        if buf.cl is not None:
            where[id(buf.cl)] = (1, j)
    flag = arith_flags._flags.get(device)
    cpos = {id(c): j for j, c in enumerate(consts)}
    steps = []
    for ck, glob, local, args, offset, counts in launches:
        spec = []
        for a in args:
            if flag is not None and a is flag:
                spec.append((2, 0))
            elif id(a) in where:
                spec.append(where[id(a)])
            elif _param_objs is not None and id(a) in _param_objs and id(_param_objs[id(a)]) in cpos:
                spec.append((3, cpos[id(_param_objs[id(a)])]))
            else:
                return
        steps.append((ck, glob, local, tuple(spec), offset, counts))
    if len(_schedules) >= SCHEDULE_CACHE_SIZE:
        del _schedules[next(iter(_schedules))]
    _schedules[key] = (tuple(outs), tuple(steps))


def _replay(schedule: tuple, nodes: list[LazyNode], bufs: list[Buffer], consts: list[Src], device: Any) -> None:
    from zyx.backend.launch import launch

    outs_spec, steps = schedule
    pool = device.pool
    outs = [pool.allocate(nbytes) for _, nbytes in outs_spec]
    for ck, glob, local, spec, offset, counts in steps:
        args = []
        for kind, i in spec:
            if kind == 0:
                args.append(bufs[i].cl)
            elif kind == 1:
                args.append(outs[i].cl)
            elif kind == 3:
                c = consts[i]
                args.append(ops.param_value(c.value, c.dtype))
            else:
                from zyx.backend import arith_flags

                args.append(arith_flags.buffer(device))
                arith_flags.arm(device)
        launch(ck, glob, local, args, offset=offset, counts=counts)
    for (p, _), out in zip(outs_spec, outs):
        _set_buffer(nodes[p], out)


_counts_stack: list[dict[int, int]] = []


def realize(node: LazyNode) -> Buffer:
    """Run the pending work producing ``node`` (asynchronously) and return its buffer."""
    if node.buffer is not None:
        return node.buffer
    with runtime_lock:  # scheduling state (schedule cache, recording) is process-wide
        return _realize_locked(node)


def _realize_locked(node: LazyNode) -> Buffer:
    global _allocs, _param_objs
    if node.buffer is not None:
        return node.buffer
    if _counts_stack:  # a store inside a build: part of the schedule being built
        _realize_one(node, _counts_stack[0])
        return node.buffer  # type: ignore[return-value]
    from zyx.backend import launch as launch_mod

    got = _graph_key(node)
    if got is not None:
        key, nodes, bufs, consts = got
        schedule = _schedules.get(key)
        if schedule is not None:
            schedule_stats["hits"] += 1
            _replay(schedule, nodes, bufs, consts, node.device)
            return node.buffer  # type: ignore[return-value]
    recording = got is not None and launch_mod.recorder is None
    if recording:
        launch_mod.recorder, _allocs, _param_objs = [], [], {}
    schedule_stats["builds"] += 1
    _counts_stack.append(_count_parents(node))
    try:
        _realize_one(node, _counts_stack[0])
        if recording:
            _record(key, nodes, bufs, consts, launch_mod.recorder, _allocs)  # type: ignore[arg-type]
    finally:
        _counts_stack.pop()
        if recording:
            launch_mod.recorder, _allocs, _param_objs = None, None, None
    return node.buffer  # type: ignore[return-value]


def _realize_one(node: LazyNode, counts: dict[int, int]) -> None:
    from zyx.codegen.kernel import launch_kernel

    device = node.device
    numel = math.prod(node.shape)
    out = device.pool.allocate(numel * node.dtype.itemsize)
    if _allocs is not None:
        _allocs.append((node, out))
    if numel:
        kb = _KernelBuilder(node, counts)
        kernel = kb.build()
        args = [out.cl] + [b.cl for b in kb.args[1:]]  # type: ignore[union-attr]
        for c in kb.params:
            value = ops.param_value(c.value, c.dtype)
            if _param_objs is not None:
                _param_objs[id(value)] = c
            args.append(value)
        opts = choose_opts(kernel, device, args)
        launch_kernel(device, kernel, opts, args)
    _set_buffer(node, out)


def _set_buffer(node: LazyNode, buf: Buffer) -> None:
    node.buffer = buf
    node.op = "buffer"
    node.srcs = ()
    node.arg = None
    node.cost = 0
    node.has_reduce = False
    readers = node.readers
    node.readers = None
    if readers:
        for ref in readers:
            r = ref()
            if r is not None and r.buffer is None:
                _register_reader(buf, r)


__all__ = ["LazyNode", "Src", "alu", "cast", "copy", "reduce", "pad", "realize", "from_buffer",
           "pending_readers_flush", "dtypes"]
