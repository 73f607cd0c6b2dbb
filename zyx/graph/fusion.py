"""Fusion: one IR kernel for a pending node, inlining the pending work it reads.

Realizing a node builds one kernel for it, inlining pending sources (fusion) and storing
those where inlining would recompute work:

* elementwise chains always fuse, through any view (composed by the symbolic index
  algebra), unless the view broadcasts a computed value (expand) or the value is
  shared inside the graph and costly to recompute (in a row kernel a shared value reading a
  row reduce may cost more: its reduce is hoisted, computed once per row);
* a reduce fuses into its consumer when read through an identity view (same flat
  index: keepdim reshapes), with no pad above it, not inside another reduce, and with
  the kernel's reduce shape; so ``(a*b).sum(1) + c`` is one kernel; but two contractions
  (reduces of operands broadcast along an output axis: matmuls) are never siblings in one
  kernel, which no matmul tiling fits (``silu(x @ a) * (x @ b)`` ran ~70x slower so);
* a reduce read through a view that broadcasts it back along the output's last axis
  (``x - x.max(-1, keepdim=True)``) fuses as a *row* reduce when it reads only the outer
  coordinates and reduces as many elements as that axis holds: each row's reduces are
  computed once, then its outputs (``ir.kernel.row_kernel``), so softmax and layer_norm over
  the last dim are one kernel each;
* ``COPY`` nodes from ``clone``/``contiguous`` and ``EXTERN`` kernels are always stored
  (fusion breaks); a gather's table is stored, its index fuses.

A source that is not inlined is stored first through the ``store`` callback (its kernels
are enqueued first on the in-order queue). Every buffer a kernel reads lives on its device: an
operand of another device reaches the graph as a transfer node (``graph.build.on_device``), an
``EXTERN`` node like any other, so no copy happens while a kernel is built.
"""
from __future__ import annotations

import math
from collections.abc import Callable

from zyx import dtype as dtypes
from zyx.backend.pool import Buffer
from zyx.dtype import DType
from zyx.errors import ZyxError
from zyx.graph.node import LazyNode, Src
from zyx.graph.offset_args import offset_arg
from zyx.ir import expr
from zyx.ir import symbolic as sym
from zyx.ir.kernel import Kernel, out_var, red_var
from zyx.ir.merge_axes import merge_axes
from zyx.ir.view import View, contiguous_strides
from zyx.op import ALU, REDUCE, Op

SHARED_RECOMPUTE_LIMIT = 6  # a shared pending value costing more ALU ops than this is stored
ROW_RECOMPUTE_LIMIT = 16  # ... or more than this where it reads a row reduce (see _row_recompute_ok)
# a row kernel runs a row in one work item: rows longer than this fuse only when there are many rows
# (a few long rows reduce faster with work items sharing each reduce, then an elementwise kernel)
ROW_SERIAL_MAX, ROW_MANY = 1 << 15, 64


def _contraction(r: LazyNode) -> bool:
    """Whether reduce ``r`` contracts an operand broadcast along an output axis (a matmul's
    ``(x[:, None] * w[None]).sum(-1)``), looking through the pending elementwise work it reduces."""
    axes = set(r.arg)
    srcs = [r.srcs[0]]
    b = srcs[0].base
    if b is not None and b.buffer is None and b.op in ALU and _identity(srcs[0].view, b.shape):
        srcs = list(b.srcs)
    return any(s.view is not None and any(st == 0 and d > 1 and a not in axes
                                          for a, (d, st) in enumerate(zip(s.view.shape, s.view.strides)))
               for s in srcs)


def _identity(view: View, shape: tuple[int, ...]) -> bool:
    """Whether ``view`` reads a dense value of ``shape`` at the same flat index it produces."""
    if view.offset != 0 or view.numel != math.prod(shape):
        return False
    return all(s == c for s, c, d in zip(view.strides, contiguous_strides(view.shape), view.shape) if d != 1)


def _stored(n: LazyNode) -> bool:
    """Whether pending ``n`` always gets its own buffer (never inlined into a reader)."""
    return (n.op is Op.COPY and n.arg) or n.op is Op.EXTERN


def _pending_cost_above(n: LazyNode, limit: int) -> bool:
    """Whether more than ``limit`` ALU ops are still pending in ``n`` (``n.cost`` is fixed at creation
    and also counts work realized since); stops as soon as the answer is known."""
    cost, stack = 0, [n]
    while stack:
        m = stack.pop()
        if m.buffer is not None or m.op is Op.EXTERN:
            continue
        if m.op in ALU:
            cost += 1
            if cost > limit:
                return True
        stack.extend(s.base for s in m.srcs if s.base is not None)
    return False


def _row_recompute_ok(n: LazyNode) -> bool:
    """Whether shared ``n``, too costly to recompute by ``SHARED_RECOMPUTE_LIMIT``, is still inlined in a kernel
    that hoists row reduces: it reads a pending row reduce (storing ``n`` would take a row kernel of its own,
    reduce loop and all), recomputes at most ``ROW_RECOMPUTE_LIMIT`` distinct ALU ops per element, and no
    reader stores it anyway. Work read through a broadcasting view is not counted: fusion stores it or hoists
    it as a row reduce computed once per row. So layer_norm's input gradient is one row kernel."""
    cost, row, stack, seen = 0, False, [n], {id(n)}
    while stack:
        m = stack.pop()
        if m.buffer is not None or m.op is Op.EXTERN:
            continue
        if m.op in ALU:
            cost += 1
            if cost > ROW_RECOMPUTE_LIMIT:
                return False
        for s in m.srcs:
            b = s.base
            if b is None or b.buffer is not None or id(b) in seen:
                continue
            if s.view.has_broadcast:
                row = row or b.has_reduce
                continue
            seen.add(id(b))
            stack.append(b)
    return row and _read_in_place(n)


def _read_in_place(n: LazyNode) -> bool:
    """Whether no pending reader of ``n`` broadcasts it: such a reader (a matmul's operand) stores ``n``, row
    reduces and all, so inlining ``n`` here as well would compute them in two kernels."""
    for ref in n.readers or ():
        r = ref()
        if r is not None and r.buffer is None and any(s.base is n and s.view.has_broadcast for s in r.srcs):
            return False
    return True


def count_parents(root: LazyNode) -> dict[int, int]:
    """How many pending nodes of ``root``'s graph read each pending node (by id)."""
    counts: dict[int, int] = {}
    stack = [root]
    seen = {id(root)}
    while stack:
        n = stack.pop()
        if n.op is Op.EXTERN and n is not root:
            continue  # its sources are realized on their own
        for s in n.srcs:
            b = s.base
            if b is None or b.buffer is not None:
                continue
            counts[id(b)] = counts.get(id(b), 0) + 1
            if id(b) not in seen:
                seen.add(id(b))
                stack.append(b)
    return counts


class KernelBuilder:
    """Builds the kernel of one pending ``root`` node (``build``); ``args`` are its input buffers
    (slot 0: the output) and ``params`` its scalar arguments.

    ``keyed``: ids of the constants of the schedule key this build is recorded under (None: no key).
    A read of a realized buffer passes its offset as an argument (``graph.offset_args``) exactly when
    the key holds that argument, i.e. when the buffer was realized as the key was made: a source
    stored during the build was keyed as a pending node, by its offset."""

    def __init__(self, root: LazyNode, counts: dict[int, int], store: Callable[[LazyNode], Buffer],
                 keyed: set[int] | None = None) -> None:
        self.root = root
        self.keyed = keyed
        self.counts = counts
        self.store = store
        self.bufs: list[DType] = [root.dtype]
        self.args: list[Buffer | None] = [None]
        self.index: dict[tuple[int, str], int] = {}
        self.red_shape: tuple[int, ...] | None = None
        self.contraction = False  # a fused reduce contracts a broadcast operand (see _contraction)
        self.in_reduce = False
        self.row = False  # a reduce broadcast along the output's last axis was fused (a row kernel)
        self.plain = False  # a reduce reading the output's last axis was fused (no row kernel)
        self.outer = {f"o{i}" for i in range(len(root.shape) - 1)}
        self.fusable: dict[int, bool] = {}
        self.params: list[Src] = []  # constants passed as scalar arguments (expr.Param slots)
        self.param_slot: dict[int, int] = {}
        self.gathers = 0

    def build(self) -> Kernel:
        coords = [out_var(i, d) for i, d in enumerate(self.root.shape)]
        root = self.root
        if root.op is Op.COPY and root.srcs[0].base is not None and root.srcs[0].base.buffer is not None:
            # a stored copy of stored values moves raw bits (NaN payloads, bool bytes kept)
            bits = dtypes.UINT_OF_SIZE[root.dtype.itemsize]
            src = root.srcs[0]
            self.bufs[0] = bits
            body = self.load_expr(src, coords, sym.ONE, bits, True)
            return merge_axes(Kernel(tuple(root.shape), (), tuple(self.bufs), body, self.param_dtypes()))
        body = self.node_expr(self.root, coords, sym.ONE)
        if body.dtype != self.root.dtype:
            body = expr.Cast(body, self.root.dtype)
        return merge_axes(Kernel(tuple(self.root.shape), self.red_shape or (), tuple(self.bufs), body,
                                 self.param_dtypes()))

    def param_dtypes(self) -> tuple[DType, ...]:
        return tuple(s.dtype for s in self.params)

    def buf_index(self, buf: Buffer, dtype: DType) -> int:
        if buf.pool is not None and buf.pool.device is not self.root.device:  # graph.build moves operands
            raise ZyxError(f"internal: a kernel on {self.root.device} reads a buffer of {buf.pool.device}")
        key = (id(buf), dtype.name)
        i = self.index.get(key)
        if i is None:
            i = self.index[key] = len(self.bufs)
            self.bufs.append(dtype)
            self.args.append(buf)
        return i

    def can_inline(self, n: LazyNode, view: View, valid: sym.Node, inner: list[sym.Node]) -> bool:
        if _stored(n):
            return False
        if self.fusable_reduce(n):
            if not _identity(view, n.shape):
                return self.row_fusable(n, valid, inner)
            if n.op not in REDUCE and self.store_shared_reduces(n):
                return self.can_inline(n, view, valid, inner)  # now plain elementwise work
            if self.in_reduce or valid != sym.ONE or self.counts.get(id(n), 0) > 1:
                return False
            if self.row and not self.row_coords(inner):
                return False
            reduce = self.fused_reduce(n)
            if self.contraction and reduce is not None and _contraction(reduce):
                return False
            return self.red_shape is None or self.red_shape == self.red_sizes(n)
        if n.cost > 0 and view.has_broadcast:
            return False
        return not (self.counts.get(id(n), 0) > 1 and n.cost > SHARED_RECOMPUTE_LIMIT
                    and _pending_cost_above(n, SHARED_RECOMPUTE_LIMIT)
                    and not (self.may_hoist() and _row_recompute_ok(n)))

    def may_hoist(self) -> bool:
        """Whether a row reduce read in this kernel can be hoisted (computed once per row): no plain reduce
        fused (a reduce root of shape (N, 1) cannot hoist one), and the output has a last axis to loop over."""
        shape = self.root.shape
        return not self.plain and bool(shape) and shape[-1] >= 2

    def store_shared_reduces(self, n: LazyNode) -> bool:
        """Store the pending reduces ``n`` would fuse when each is (or sits inside) a value read by several
        nodes: such values are stored whichever kernel reaches them first, and storing them now lets ``n``
        be judged as the elementwise work it then is (softmax of a matmul: one row kernel, not two)."""
        found: list[LazyNode] = []
        self.inner_reduces(n, found)
        if not found or any(self.counts.get(id(r), 0) < 2 for r in found):
            return False
        for r in found:
            self.store(r)
        self.fusable.clear()
        return True

    def inner_reduces(self, n: LazyNode, out: list[LazyNode]) -> None:
        """The first nodes holding a pending reduce that inlining ``n`` would fuse (along the sources
        ``fusable_reduce`` follows): each a reduce, or a shared value with a reduce inside."""
        for s in n.srcs:
            b = s.base
            if b is None or b.buffer is not None or _stored(b) or not _identity(s.view, b.shape):
                continue
            if not self.fusable_reduce(b):
                continue
            if b.op in REDUCE:
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
            got = n.op in REDUCE or any(
                s.base is not None and s.base.buffer is None and not _stored(s.base)
                and _identity(s.view, s.base.shape) and self.fusable_reduce(s.base) for s in n.srcs)
            self.fusable[id(n)] = got
        return got

    def fused_reduce(self, n: LazyNode) -> LazyNode | None:
        """The pending reduce that inlining ``n`` fuses (``n`` itself or one below its identity reads), if any."""
        if n.op in REDUCE:
            return n
        for s in n.srcs:
            if s.base is not None and _identity(s.view, s.base.shape) and self.fusable_reduce(s.base):
                return self.fused_reduce(s.base)
        return None

    def red_sizes(self, n: LazyNode) -> tuple[int, ...] | None:
        """The reduce sizes of the pending reduce that inlining ``n`` fuses."""
        r = self.fused_reduce(n)
        return None if r is None else tuple(r.srcs[0].view.shape[a] for a in r.arg)

    def param(self, s: Src) -> int:
        """The scalar argument slot of constant ``s`` (one per constant per kernel)."""
        slot = self.param_slot.get(id(s))
        if slot is None:  # self.params keeps s alive, so its id is not reused during the build
            slot = self.param_slot[id(s)] = len(self.params)
            self.params.append(s)
        return slot

    def offset(self, s: Src, realized: bool) -> sym.Node:
        """The offset of read ``s`` of a realized buffer: an index variable standing for its scalar
        argument (``align * arg``) when ``realized`` (the buffer was realized before this build reached the
        read) and the schedule key holds the argument, else a literal."""
        got = offset_arg(s) if realized else None
        if got is None or (self.keyed is not None and id(got[0]) not in self.keyed):
            return sym.num(s.view.offset)
        arg, align, lo, hi = got
        return sym.mul(expr.param_var(self.param(arg), lo, hi), align)

    def buffer_index(self, s: Src, coords: list[sym.Node], realized: bool) -> sym.Node:
        """The flat element index read ``s`` of a realized buffer takes at ``coords``."""
        v = s.view
        return sym.add(self.offset(s, realized), *(sym.mul(c, st) for c, st, d in zip(coords, v.strides, v.shape)
                                                   if d != 1))

    def load_expr(self, s: Src, coords: list[sym.Node], valid: sym.Node, dtype: DType, realized: bool) -> expr.Expr:
        """A load of read ``s`` of a realized buffer as ``dtype``; ``realized``: see ``offset``."""
        if valid == sym.ZERO:
            return expr.Const(0, dtype)
        index = self.buffer_index(s, coords, realized)
        return expr.Load(self.buf_index(s.base.buffer, dtype), dtype, index, valid)

    def src_expr(self, s: Src, coords: list[sym.Node], valid: sym.Node) -> expr.Expr:
        n = s.base
        if n is None:
            return expr.Param(self.param(s), s.dtype) if s.param else expr.Const(s.value, s.dtype)
        v = s.view
        realized = n.buffer is not None
        if not realized:
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
            self.store(n)
        return self.load_expr(s, coords, valid, s.dtype, realized)

    def node_expr(self, n: LazyNode, coords: list[sym.Node], valid: sym.Node) -> expr.Expr:
        op = n.op
        if op in ALU:
            srcs = tuple(self.src_expr(s, coords, valid) for s in n.srcs)
            return expr.Alu(op, srcs, n.dtype)
        if op is Op.CAST:
            inner = self.src_expr(n.srcs[0], coords, valid)
            return inner if inner.dtype == n.dtype else expr.Cast(inner, n.dtype)
        if op is Op.COPY:
            return self.src_expr(n.srcs[0], coords, valid)
        if op is Op.CONST:
            return self.src_expr(n.arg, coords, valid)
        if op is Op.PAD:
            return self.pad_expr(n, coords, valid)
        if op in REDUCE:
            return self.reduce_expr(n, coords, valid)
        if op is Op.GATHER:
            return self.gather_expr(n, coords, valid)
        raise ZyxError(f"internal: lazy op {op!r} reached node_expr")

    def pad_expr(self, n: LazyNode, coords: list[sym.Node], valid: sym.Node) -> expr.Expr:
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
        inner_valid = sym.land(valid, cond)
        inner = self.src_expr(src, inner_coords, inner_valid)
        if cond == sym.ONE:
            return inner
        # a load guarded by this pad alone takes its value; one guarded by an inner pad as well keeps
        # that pad's value (its 0 is not the default)
        if isinstance(inner, expr.Load) and inner.other == 0 and inner.valid == inner_valid:
            return expr.Load(inner.buf, inner.dtype, inner.index, inner.valid, value, inner.gather)
        return expr.Alu(Op.WHERE, (expr.Cond(cond), inner, expr.Const(value, n.dtype)), n.dtype)

    def reduce_expr(self, n: LazyNode, coords: list[sym.Node], valid: sym.Node) -> expr.Expr:
        axes = n.arg
        src = n.srcs[0]
        sizes = tuple(src.view.shape[a] for a in axes)
        if self.red_shape is None:
            self.red_shape = sizes
        self.contraction = self.contraction or _contraction(n)
        if not self.row_coords(coords):
            self.plain = True
        inner = list(coords)
        for j, a in enumerate(axes):
            inner[a] = red_var(j, sizes[j])
        saved, self.in_reduce = self.in_reduce, True
        body = self.src_expr(src, inner, valid)
        self.in_reduce = saved
        return expr.Reduce(n.op, body, n.dtype)

    def gather_expr(self, n: LazyNode, coords: list[sym.Node], valid: sym.Node) -> expr.Expr:
        """``table[t(coords)]`` (``GatherSpec``): each gathered table coordinate is a per-element value (a
        bounds-checked gather variable) computed from its fused index source; the table is read from its
        buffer."""
        spec = n.arg
        table, indices = n.srcs[0], n.srcs[1:]
        base = table.base
        realized = base.buffer is not None
        if not realized:
            self.store(base)
        v = table.view
        tcoords: list[sym.Node] = []
        gathers = []
        for a, size in zip(spec.axes, v.shape):
            if a >= 0:
                tcoords.append(coords[a])
                continue
            j = ~a
            value = self.src_expr(indices[j], [coords[k] for k in spec.reads[j]], valid)
            if spec.wrap[j] and value.dtype.kind == "int":  # x[-1]: counts from the end, as PyTorch
                if value.dtype is not dtypes.int64:
                    value = expr.Cast(value, dtypes.int64)
                neg = expr.Alu(Op.LT, (value, expr.Const(0, dtypes.int64)), dtypes.bool_)
                value = expr.Alu(Op.WHERE, (neg, expr.Alu(Op.ADD, (value, expr.Const(size, dtypes.int64)),
                                                          dtypes.int64), value), dtypes.int64)
            name = f"zyx_g{self.gathers}"
            self.gathers += 1
            gathers.append((name, value, size))
            tcoords.append(sym.var(name, 0, size - 1))
        flat = self.buffer_index(table, tcoords, realized)
        return expr.Load(self.buf_index(base.buffer, table.dtype), table.dtype, flat, valid, gather=tuple(gathers))
