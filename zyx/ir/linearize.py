"""Lowering a ``Kernel`` with its ``Opts`` to a linear program, and the passes over it.

The linear program is a tuple of ``Instr`` in SSA form (an instruction's value is
named by its position). Work items are numbered by one global id ``gid`` over the
grid of output tiles; ``g0..`` are the tile coordinates, ``o_i = g_i * U_i + u_i``
the output coordinates of upcast copy ``u``, and ``r0..`` the reduce loop variables
(the innermost one unrolled ``unroll`` times). With a vector width ``V`` (``Opts.vec``)
the vectorized axis gets ``V`` more elements per work item (or per loop step), named by
the symbolic variable ``lane`` (0..V-1): values whose index mentions it are vectors, and
a reduce over a vectorized reduce axis ends with an ``hreduce`` that combines the lanes
of its vector accumulator in lane order (deterministic). Instructions fall into three sections
in program order: before the reduce loops (loop-invariant work, accumulators),
inside them, and after them (the work after a reduce, the stores).

A row kernel (``ir.kernel.row_kernel``: reduces broadcast back along the output's last axis)
is lowered by ``_linearize_row`` instead: one work item per row, the row's reduces hoisted
into loops of their own (in dependency order), then a loop over the row's outputs.

Passes are pure functions ``Program -> Program``: ``fold_constants``, ``cse`` and
``dce``; ``linearize`` runs them in that order.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from zyx import dtype as dtypes
from zyx.dtype import DType, index_type
from zyx.ir import expr
from zyx.ir import symbolic as sym
from zyx.ir.kernel import Kernel, Opts, matmul_axes, out_var, red_var, row_kernel, row_vec, vector_plan
from zyx.ir.rewrite import rewrite, substitute_indices, walk
from zyx.op import ARG_REDUCE, Op

PURE = frozenset({"const", "param", "load", "alu", "cast", "cond", "hreduce"})
LANE = "lane"
SID = "zyx_sid"  # a work item's place in its split group (0..split-1)
TAIL = "rt"  # the scalar tail loop of the innermost reduce axis


@dataclass(frozen=True)
class Instr:
    """One statement. ``op``: define | const | load | alu | cast | acc | accum | hreduce | combine | loop |
    endloop | store. A load's ``arg`` is (buf, index, valid, other, gather (name, size) pairs); its ``srcs``
    are the gathered values, in that order."""

    op: str
    dtype: DType | None
    srcs: tuple[int, ...]
    arg: Any


@dataclass(frozen=True)
class Program:
    instrs: tuple[Instr, ...]
    global_items: int  # work items needed (the launch rounds up to whole work-groups)
    index_t: str  # "int" or "long"
    vec: int = 1  # vector width of the ``lane`` variable (1: none)
    vec_reduce: bool = False  # whether the lanes run along the reduce (vector accumulators)
    split: int = 1  # work items sharing one output tile's reduce (a group of consecutive local ids)
    local: int = 0  # the work-group size the program needs (0: any)


# ------------------------------------------------------------------ lowering

class _Builder:
    def __init__(self, reduce_vars: set[str], vec_reduce: bool = False) -> None:
        self.vec_reduce = vec_reduce
        self.instrs: list[tuple[int, Instr]] = []  # (section, instr with provisional ids)
        self.reduce_vars = reduce_vars
        self.memo: dict[expr.Expr, tuple[int, int]] = {}
        self.loop_copies: list[dict] = [{}]  # substitutions of the unrolled reduce variable (main loop)
        self.tail_copy: dict | None = None  # the substitution of the scalar tail loop (with "__guard__")
        self.loop_section = 1  # where values that depend on the reduce variables go (1 main, 2 tail)
        self.split = 1

    def push(self, section: int, ins: Instr) -> int:
        self.instrs.append((section, ins))
        return len(self.instrs) - 1

    def _section_of_index(self, *nodes: sym.Node) -> int:
        for n in nodes:
            if any(v.name in self.reduce_vars or v.name == TAIL for v in sym.variables(n)):
                return self.loop_section
        return 0

    def emit(self, e: expr.Expr) -> tuple[int, int]:
        got = self.memo.get(e)
        if got is not None:
            return got
        if isinstance(e, expr.Const):
            res = (self.push(0, Instr("const", e.dtype, (), e.value)), 0)
        elif isinstance(e, expr.Param):
            res = (self.push(0, Instr("param", e.dtype, (), e.slot)), 0)
        elif isinstance(e, expr.Load):
            gathered = [self.emit(x) for _, x, _ in e.gather]  # the values a gather's index uses
            sec = max([self._section_of_index(e.index, e.valid)] + [s for _, s in gathered])
            if e.buf == 0:  # a row kernel reading back its output: after the store, never hoisted above it
                sec = max(sec, self.loop_section)
            res = (self.push(sec, Instr("load", e.dtype, tuple(i for i, _ in gathered),
                                        (e.buf, e.index, e.valid, e.other, tuple((nm, sz) for nm, _, sz in e.gather)))),
                   sec)
        elif isinstance(e, expr.Cond):
            sec = self._section_of_index(e.valid)
            res = (self.push(sec, Instr("cond", e.dtype, (), e.valid)), sec)
        elif isinstance(e, expr.Cast):
            i, sec = self.emit(e.src)
            res = (self.push(sec, Instr("cast", e.dtype, (i,), e.src.dtype)), sec)
        elif isinstance(e, expr.Alu):
            srcs = [self.emit(s) for s in e.srcs]
            sec = max(s for _, s in srcs)
            res = (self.push(sec, Instr("alu", e.dtype, tuple(i for i, _ in srcs),
                                        (e.op, tuple(s.dtype for s in e.srcs)))),
                   sec)
        elif isinstance(e, expr.Reduce):
            arg = e.op in ARG_REDUCE
            init = expr.reduce_identity(e.op, e.src.dtype if arg else e.dtype)
            acc = self.push(0, Instr("acc", e.dtype, (), (e.op, init, e.src.dtype)))
            for copy in self.loop_copies:
                sub = {kk: vv for kk, vv in copy.items() if not isinstance(kk, str)}
                v, _ = self.emit(substitute_indices(e.src, sub) if sub else e.src)
                pos = copy["__pos__"] if arg else None
                self.push(1, Instr("accum", e.dtype, (acc, v), (e.op, pos, sym.ONE, False)))
            if self.tail_copy is not None:  # scalar elements past the last whole step, into lane 0
                tc = self.tail_copy
                guard = tc["__guard__"]
                sub = {kk: vv for kk, vv in tc.items() if not isinstance(kk, str)}
                src = substitute_indices(e.src, sub)
                if guard != sym.ONE:
                    src = _guard_loads(src, lambda ld: guard)
                saved, self.memo = self.memo, {kk: vv for kk, vv in self.memo.items() if vv[1] == 0}
                self.loop_section = 2
                v, _ = self.emit(src)
                self.loop_section, self.memo = 1, saved
                self.push(2, Instr("accum", e.dtype, (acc, v), (e.op, tc["__pos__"] if arg else None, guard,
                                                               self.vec_reduce)))
            res = (self.push(3, Instr("hreduce", e.dtype, (acc,), e.op)), 3) if self.vec_reduce else (acc, 3)
            if self.split > 1:  # partials of the split group combined by its first item, in item order
                res = (self.push(3, Instr("combine", e.dtype, (res[0],), (e.op, self.split))), 3)
        else:  # pragma: no cover
            raise TypeError(f"unknown expression {e!r}")
        self.memo[e] = res
        return res


def split_plan(k: Kernel, opts: Opts) -> tuple[int, int]:
    """(split, work-group size) of ``opts`` for ``k``: ``split`` is a power of two from 2 to 256 on a kernel
    with a reduce (else 1); the work-group holds whole groups of ``split`` items (0: any size)."""
    s = opts.split
    if not k.red_shape or s < 2 or s > 256 or s & (s - 1) or k.red_shape[-1] < 2:
        return 1, 0
    return s, s * max(1, min(opts.local, 256) // s)


def _guard_loads(e: expr.Expr, guard_of: Any) -> expr.Expr:
    """``e`` with ``guard_of(load)`` ANDed into the validity of each load (masked lanes, tails)."""
    return rewrite(e, lambda x: expr.Load(x.buf, x.dtype, x.index, sym.land(x.valid, guard_of(x)), x.other, x.gather)
                   if isinstance(x, expr.Load) else None)


def _mentions(e: expr.Load, names: set[str]) -> bool:
    return any(v.name in names for v in sym.variables(e.index) | sym.variables(e.valid))


def linearize(k: Kernel, opts: Opts) -> Program:
    """The kernel lowered to a linear program (constant-folded, CSE'd, dead code removed)."""
    if row_kernel(k):
        return _linearize_row(k, opts)
    n = len(k.out_shape)
    vec, vaxis = vector_plan(k, opts)
    split, local = split_plan(k, opts)
    lane = sym.var(LANE, 0, vec - 1) if vec > 1 else sym.ZERO
    sid = sym.var(SID, 0, split - 1)
    vout = vec > 1 and vaxis < n  # lanes along an output axis
    vred = vec > 1 and vaxis >= n  # lanes along the innermost reduce axis
    vsz = [vec if vout and i == vaxis else 1 for i in range(n)]
    shape = tuple(-(-s // v) for s, v in zip(k.out_shape, vsz))  # the output in vector units (a masked last one)
    up = tuple(opts.upcast) + (1,) * (n - len(opts.upcast))
    up = tuple(max(1, min(u, s)) for s, u in zip(shape, up[:n]))
    grid = tuple(-(-s // u) for s, u in zip(shape, up))  # a partly masked last tile when u does not divide
    items = math.prod(grid)
    gid = sym.var("gid", 0, max(items - 1, 0))
    reduce_vars = {f"r{j}" for j in range(len(k.red_shape))}
    b = _Builder(reduce_vars, vred)

    # tile coordinates g_i from the global id, the last axis fastest (or a matmul's row axis: ``rows_inner``)
    order = list(reversed(range(n)))
    mm = matmul_axes(k) if opts.rows_inner else None
    if mm is not None:
        r, c = order.index(mm[0]), order.index(mm[1])
        order[r], order[c] = order[c], order[r]
    gvars: list[sym.Node] = [sym.ZERO] * n
    acc = 1
    defs = []
    for i in order:
        coord = sym.mod(sym.floordiv(gid, acc), grid[i])
        acc *= grid[i]
        gv = sym.var(f"g{i}", 0, max(grid[i] - 1, 0))
        if isinstance(gv, sym.Var) and not isinstance(coord, sym.Var):
            defs.append(Instr("define", dtypes.int64, (), (gv.name, coord)))
        elif not isinstance(gv, sym.Var):
            gv = sym.ZERO
        else:
            gv = coord
        gvars[i] = gv
    for d in reversed(defs):
        b.push(0, d)

    # reduce loops: outer axes whole; the innermost in main steps of unroll x lanes x split elements
    # (item ``sid`` of a split group takes every ``split``-th block), then a scalar tail loop
    rv = vec if vred else 1
    loops: list[tuple[str, int]] = []
    tail_loop = None
    if k.red_shape:
        last = len(k.red_shape) - 1
        size = k.red_shape[last]
        unroll = max(1, opts.unroll)
        while unroll > 1 and size < unroll * rv * split:
            unroll //= 2
        chunk = unroll * rv * split
        steps, rem = size // chunk, size % chunk
        rstrides = [math.prod(k.red_shape[j + 1:]) for j in range(len(k.red_shape))]
        pos_terms = []
        for j, sz in enumerate(k.red_shape[:last]):
            loops.append((f"r{j}", sz))
            pos_terms.append(sym.mul(sym.var(f"r{j}", 0, max(sz - 1, 0)), rstrides[j]))
        last_orig = red_var(last, size)
        copies: list[dict] = []
        if steps:
            loops.append((f"r{last}", steps))
            last_loop = sym.var(f"r{last}", 0, steps - 1)
            for uu in range(unroll):
                value = sym.add(sym.mul(sym.add(sym.mul(last_loop, unroll), uu), split), sid)
                if rv > 1:
                    value = sym.add(sym.mul(value, rv), lane)
                copies.append({last_orig: value, "__pos__": sym.add(*pos_terms, value)})
        b.loop_copies = [{kk: vv for kk, vv in c.items() if kk != "__pos__" and kk != vv} | {"__pos__": c["__pos__"]}
                         for c in copies]
        if rem:
            tsteps = -(-rem // split)
            tail_var = sym.var(TAIL, 0, tsteps - 1)
            rel = sym.add(sym.mul(tail_var, split), sid)
            value = sym.add(rel, steps * chunk)
            tail_loop = (TAIL, tsteps)
            b.tail_copy = {last_orig: value, "__pos__": sym.add(*pos_terms, value), "__guard__": sym.lt(rel, rem)}
    b.split = split

    # one body per upcast copy; a copy past the end of an axis in the last tile is computed at the axis's last
    # tile coordinate (clamped, so nothing is tested inside the reduce loop) and only its store is masked; an
    # axis whose last vector is partial guards its loads lane by lane instead
    stores = []
    ostrides = [math.prod(k.out_shape[i + 1:]) for i in range(n)]
    for u in itertools.product(*(range(x) for x in up)):
        mapping = {out_var(i, k.out_shape[i]): sym.add(sym.mul(sym.add(sym.mul(gvars[i], up[i]), u[i]), vsz[i]),
                                                       lane if vsz[i] > 1 else 0) for i in range(n)}
        masks = {f"o{i}": sym.lt(mapping[out_var(i, k.out_shape[i])], k.out_shape[i])
                 for i in range(n) if isinstance(out_var(i, k.out_shape[i]), sym.Var)}
        masks = {kk: vv for kk, vv in masks.items() if vv != sym.ONE}
        mapping = {kk: vv for kk, vv in mapping.items() if isinstance(kk, sym.Var)}
        body_map = dict(mapping)
        for i in range(n):
            ov = out_var(i, k.out_shape[i])
            last = shape[i] - (grid[i] - 1) * up[i]  # copies the last tile holds
            if k.out_shape[i] % vsz[i] == 0 and u[i] >= last:  # past the end in the last tile: clamp it there
                at = sym.add(sym.mul(gvars[i], up[i]), last - 1,
                             sym.mul(sym.lt(gvars[i], grid[i] - 1), u[i] - last + 1))
                body_map[ov] = sym.add(sym.mul(at, vsz[i]), lane if vsz[i] > 1 else 0)
        guards = {o: m for o, m in masks.items() if k.out_shape[int(o[1:])] % vsz[int(o[1:])]}  # partial vectors
        body = k.body
        if guards:  # guard the original loads (the masks are already in tile/lane terms), then substitute
            body = _guard_loads(
                body, lambda ld, guards=guards: sym.land(*(m for o, m in guards.items() if _mentions(ld, {o}))))
        body = substitute_indices(body, body_map) if body_map else body
        v, _ = b.emit(body)
        flat = sym.add(*(sym.mul(mapping.get(out_var(i, k.out_shape[i]), sym.ZERO), ostrides[i]) for i in range(n)))
        stores.append((v, flat, sym.land(*masks.values())))
    for v, flat, mask in stores:
        b.push(3, Instr("store", k.out_dtype, (v,), (flat, mask)))

    # order by section: before loops, main loop body, tail loop body, after loops
    order = sorted(range(len(b.instrs)), key=lambda i: b.instrs[i][0])
    inner = 1 if loops and loops[-1][0] == f"r{len(k.red_shape) - 1}" else 0
    outer = loops[:len(loops) - inner]
    remap: dict[int, int] = {}
    out: list[Instr] = []
    section = 0
    reduce_open = bool(loops) or tail_loop is not None

    def enter(sec: int) -> None:
        nonlocal section
        while section < sec:
            section += 1
            if section == 1 and reduce_open:
                out.extend(Instr("loop", None, (), lp) for lp in loops)
            elif section == 2:
                if inner:
                    out.append(Instr("endloop", None, (), None))
                if tail_loop is not None:
                    out.append(Instr("loop", None, (), tail_loop))
            elif section == 3:
                if tail_loop is not None:
                    out.append(Instr("endloop", None, (), None))
                out.extend(Instr("endloop", None, (), None) for _ in outer)

    for old in order:
        sec, ins = b.instrs[old]
        if sec > section and k.red_shape:
            enter(sec)
        remap[old] = len(out)
        out.append(Instr(ins.op, ins.dtype, tuple(remap[s] for s in ins.srcs), ins.arg))
    if k.red_shape:
        enter(3)
    prog = tuple(out)
    prog = dce(cse(fold_constants(prog)))
    biggest = items * split
    for ins in prog:
        if ins.op in ("load", "store"):
            node = ins.arg[1] if ins.op == "load" else ins.arg[0]
            biggest = max(biggest, abs(node.vmax), abs(node.vmin))
    return Program(prog, items, index_type(biggest), vec, vred, split, local)


# ------------------------------------------------------------------ row kernels

_RED = "__zyx_row_reduce"  # placeholder constants standing for a row kernel's hoisted reduces
ROW = "rc"  # the loop over a row's outputs


def _hoist_reduces(e: expr.Expr, table: dict) -> expr.Expr:
    """``e`` with every ``Reduce`` (innermost first) replaced by a placeholder ``Const((_RED, i))``;
    ``table`` maps each distinct reduce (its placeholders inside) to (i, level): level 0 reads no other
    reduce, level L reads one of level L-1."""
    def fn(x: expr.Expr) -> expr.Expr | None:
        if not isinstance(x, expr.Reduce):
            return None
        if x not in table:
            level_of = dict(table.values())
            level = max((level_of[c.value[1]] + 1 for c in walk(x.src)
                         if isinstance(c, expr.Const) and isinstance(c.value, tuple) and c.value[:1] == (_RED,)),
                        default=0)
            table[x] = (len(table), level)
        return expr.Const((_RED, table[x][0]), x.dtype)
    return rewrite(e, fn)


_COSTLY = frozenset({Op.EXP, Op.EXP2, Op.LOG, Op.LOG2, Op.SQRT, Op.RSQRT, Op.SIN, Op.COS, Op.TAN, Op.TANH,
                     Op.SIGMOID, Op.GELU, Op.GELU_TANH, Op.SILU, Op.ERF, Op.POW})


def _replace(e: expr.Expr, old: expr.Expr, new: expr.Expr) -> expr.Expr:
    """``e`` with every subtree equal to ``old`` replaced by ``new``."""
    return rewrite(e, lambda x: new if x == old else None)


def _reused(k: Kernel, body: expr.Expr, srcs: list[expr.Expr], ov: sym.Node, rv: sym.Node) -> expr.Expr | None:
    """The largest costly value (a transcendental op) of the outputs that the last reduce level also computes
    element by element (``exp(x - max)`` in softmax), in terms of ``rv``: that loop stores it into the output
    and the output loop reads it back instead of recomputing it. Only for a float32/float64 output of the
    value's dtype (stored exactly) with as many reduce elements as outputs in a row."""
    if k.red_shape[0] != k.out_shape[-1] or k.out_dtype.name not in ("float32", "float64"):
        return None
    inside = {e for s in srcs for e in walk(s)}
    for e in walk(substitute_indices(body, {ov: rv})):  # parents first: the largest such value wins
        if e not in inside or e.dtype != k.out_dtype or not isinstance(e, (expr.Alu, expr.Cast)):
            continue
        parts = list(walk(e))
        loads = [x for x in parts if isinstance(x, expr.Load)]
        if any(isinstance(x, expr.Alu) and x.op in _COSTLY for x in parts) and not any(x.gather for x in loads) \
                and any(rv in sym.variables(x.index) for x in loads):
            return e
    return None


def _linearize_row(k: Kernel, opts: Opts) -> Program:
    """A row kernel (``row_kernel``): one work item per row (the outer output coordinates); its reduces
    run first, one loop per dependency level (``sum(exp(x - max(x)))`` after ``max(x)``), each computed
    once, then a loop over the row's outputs; the row stays in cache between the loops. Loops step by
    ``row_vec`` lanes (vector accumulators combined in lane order), with a scalar tail loop.
    Sections: 0 before the loops; for phase p (the reduce levels, then the outputs) 4p+1 its main loop,
    4p+2 its tail loop, 4p+3 after it."""
    n = len(k.out_shape)
    size, rsize = k.out_shape[-1], k.red_shape[0]
    vec = row_vec(k, opts)
    lane = sym.var(LANE, 0, vec - 1) if vec > 1 else sym.ZERO
    outer = k.out_shape[:-1]
    items = math.prod(outer)
    gid = sym.var("gid", 0, max(items - 1, 0))
    table: dict[expr.Reduce, tuple[int, int]] = {}
    body = _hoist_reduces(k.body, table)
    levels = max((lv for _, lv in table.values()), default=-1) + 1
    b = _Builder(set(), vec > 1)
    acc = 1
    defs = []
    for i in reversed(range(n - 1)):  # the row's outer coordinates from the global id
        ov = out_var(i, outer[i])
        if isinstance(ov, sym.Var):
            defs.append(Instr("define", dtypes.int64, (), (ov.name, sym.mod(sym.floordiv(gid, acc), outer[i]))))
        acc *= outer[i]
    for d in reversed(defs):
        b.push(0, d)

    unroll = max(1, opts.unroll)
    while unroll > 1 and min(size, rsize) < unroll * vec:
        unroll //= 2
    loops: dict[int, tuple] = {}

    def phase_copies(p: int, var: sym.Node, sz: int, name: str) -> tuple[list[dict], list[dict]]:
        """The substitutions of ``var`` in phase ``p``'s main loop (one per unrolled copy) and tail loop."""
        chunk = unroll * vec
        steps, rem = sz // chunk, sz % chunk
        loops[p] = ((name, steps) if steps else None, (TAIL, rem) if rem else None)
        step = sym.var(name, 0, steps - 1)
        main = [{var: sym.add(sym.mul(sym.add(sym.mul(step, unroll), u), vec), lane)} for u in range(unroll)] \
            if steps else []
        tail = [{var: sym.add(sym.var(TAIL, 0, rem - 1), steps * chunk)}] if rem else []
        return main, tail

    def emit_in(sec: int, e: expr.Expr, sub: dict) -> int:
        b.loop_section = sec
        b.memo = {kk: vv for kk, vv in b.memo.items() if vv[1] % 4 in (0, 3)}  # nothing from another loop
        v, _ = b.emit(substitute_indices(e, sub) if sub else e)
        return v

    rv = red_var(0, rsize)
    ov = out_var(n - 1, size)
    by_index = {i: (r, lv) for r, (i, lv) in table.items()}
    ostrides = [math.prod(k.out_shape[i + 1:]) for i in range(n)]

    def flat_of(sub: dict) -> sym.Node:
        return sym.add(*(sym.mul(sub[ov] if i == n - 1 else out_var(i, k.out_shape[i]), ostrides[i]) for i in range(n)))

    reuse = _reused(k, body, [r.src for r, lv in by_index.values() if lv == levels - 1], ov, rv) if levels else None
    for p in range(levels):
        b.reduce_vars = {"r0"}
        main, tail = phase_copies(p, rv, rsize, "r0")
        for i in sorted(by_index):
            r, lv = by_index[i]
            if lv != p:
                continue
            arg = r.op in ARG_REDUCE
            a = b.push(0, Instr("acc", r.dtype, (), (r.op, expr.reduce_identity(r.op, r.src.dtype if arg else r.dtype),
                                                     r.src.dtype)))
            for sec, sub in [(4 * p + 1, c) for c in main] + [(4 * p + 2, c) for c in tail]:
                v = emit_in(sec, r.src, sub)
                b.push(sec, Instr("accum", r.dtype, (a, v), (r.op, sub[rv] if arg else None, sym.ONE,
                                                            vec > 1 and sec == 4 * p + 2)))
                if reuse is not None and reuse in set(walk(r.src)):  # kept in the output for the last loop
                    keep, _ = b.emit(substitute_indices(reuse, sub))
                    b.push(sec, Instr("store", k.out_dtype, (keep,), (flat_of({ov: sub[rv]}), sym.ONE)))
            if reuse is not None and reuse in set(walk(r.src)):
                body = _replace(body, substitute_indices(reuse, {rv: ov}), expr.Load(0, k.out_dtype, flat_of({ov: ov})))
                reuse = None
            res = b.push(4 * p + 3, Instr("hreduce", r.dtype, (a,), r.op)) if vec > 1 else a
            b.memo[expr.Const((_RED, i), r.dtype)] = (res, 4 * p + 3)
    p = levels
    b.reduce_vars = {ROW}
    main, tail = phase_copies(p, ov, size, ROW)
    for sec, sub in [(4 * p + 1, c) for c in main] + [(4 * p + 2, c) for c in tail]:
        v = emit_in(sec, body, sub)
        b.push(sec, Instr("store", k.out_dtype, (v,), (flat_of(sub), sym.ONE)))

    order = sorted(range(len(b.instrs)), key=lambda i: b.instrs[i][0])
    out: list[Instr] = []
    remap: dict[int, int] = {}
    section = 0

    def enter(sec: int) -> None:
        nonlocal section
        while section < sec:
            section += 1
            ph, kind = divmod(section - 1, 4)
            if ph not in loops:
                continue
            main_lp, tail_lp = loops[ph]
            if kind == 0 and main_lp:
                out.append(Instr("loop", None, (), main_lp))
            elif kind == 1:
                if main_lp:
                    out.append(Instr("endloop", None, (), None))
                if tail_lp:
                    out.append(Instr("loop", None, (), tail_lp))
            elif kind == 2 and tail_lp:
                out.append(Instr("endloop", None, (), None))

    for old in order:
        sec, ins = b.instrs[old]
        enter(sec)
        remap[old] = len(out)
        out.append(Instr(ins.op, ins.dtype, tuple(remap[s] for s in ins.srcs), ins.arg))
    enter(4 * p + 3)
    prog = dce(cse(fold_constants(tuple(out))))
    biggest = items
    for ins in prog:
        if ins.op in ("load", "store"):
            node = ins.arg[1] if ins.op == "load" else ins.arg[0]
            biggest = max(biggest, abs(node.vmax), abs(node.vmin))
    return Program(prog, items, index_type(biggest), vec, vec > 1, 1, 0)


# ------------------------------------------------------------------ passes

def _renumber(prog: tuple[Instr, ...], keep: list[bool], alias: dict[int, int]) -> tuple[Instr, ...]:
    new_id: dict[int, int] = {}
    out: list[Instr] = []
    for i, ins in enumerate(prog):
        if not keep[i]:
            continue
        srcs = []
        for s in ins.srcs:
            while s in alias:
                s = alias[s]
            srcs.append(new_id[s])
        new_id[i] = len(out)
        out.append(Instr(ins.op, ins.dtype, tuple(srcs), ins.arg))
    return tuple(out)


_FOLDABLE = {
    Op.ADD: lambda a, b: a + b, Op.SUB: lambda a, b: a - b, Op.MUL: lambda a, b: a * b,
    Op.EQ: lambda a, b: a == b, Op.NE: lambda a, b: a != b, Op.LT: lambda a, b: a < b,
    Op.LE: lambda a, b: a <= b, Op.GT: lambda a, b: a > b, Op.GE: lambda a, b: a >= b,
    Op.NEG: lambda a: -a,
}


def fold_constants(prog: tuple[Instr, ...]) -> tuple[Instr, ...]:
    """Fold ALU ops and casts of constants (in the op's dtype) and ``where`` on a constant condition."""
    out = list(prog)
    alias: dict[int, int] = {}

    def const_of(i: int) -> Any:
        while i in alias:
            i = alias[i]
        ins = out[i]
        return (True, ins.arg) if ins.op == "const" else (False, None)

    for i, ins in enumerate(out):
        if ins.op == "alu":
            op = ins.arg[0]
            consts = [const_of(s) for s in ins.srcs]
            if op == Op.WHERE and consts[0][0]:
                alias[i] = ins.srcs[1] if consts[0][1] else ins.srcs[2]
                continue
            if op in _FOLDABLE and all(c for c, _ in consts) and not ins.dtype.emulated:
                src_dt = ins.arg[1][0]
                if src_dt.emulated or src_dt.name == "float16":
                    continue
                with np.errstate(all="ignore"):
                    vals = [np.array(v).astype(src_dt.numpy) for _, v in consts]
                    res = _FOLDABLE[op](*vals)
                out[i] = Instr("const", ins.dtype, (), np.asarray(res).astype(ins.dtype.numpy).item())
        elif ins.op == "cast":
            c, v = const_of(ins.srcs[0])
            if (c and not ins.dtype.emulated and not ins.arg.emulated
                    and "float16" not in (ins.dtype.name, ins.arg.name)):
                with np.errstate(all="ignore"):
                    val = np.array(v).astype(ins.arg.numpy)
                    if ins.dtype.is_int and ins.arg.is_float:
                        continue  # saturating float->int conversion stays on the device
                    out[i] = Instr("const", ins.dtype, (), val.astype(ins.dtype.numpy).item())
    keep = [i not in alias for i in range(len(out))]
    return _renumber(tuple(out), keep, alias)


def cse(prog: tuple[Instr, ...]) -> tuple[Instr, ...]:
    """Merge identical pure instructions; an instruction inside a loop is only reused inside it."""
    alias: dict[int, int] = {}
    scopes: list[dict] = [{}]
    keep = [True] * len(prog)
    for i, ins in enumerate(prog):
        if ins.op == "loop":
            scopes.append({})
            continue
        if ins.op == "endloop":
            scopes.pop()
            continue
        if ins.op not in PURE:
            continue
        srcs = []
        for s in ins.srcs:
            while s in alias:
                s = alias[s]
            srcs.append(s)
        key = (ins.op, ins.dtype, tuple(srcs), _hashable(ins.arg))
        for scope in scopes:
            if key in scope:
                alias[i] = scope[key]
                keep[i] = False
                break
        else:
            scopes[-1][key] = i
    return _renumber(prog, keep, alias)


def _hashable(arg: Any) -> Any:
    if isinstance(arg, float) and arg != arg:
        return ("nan",)
    return arg


def dce(prog: tuple[Instr, ...]) -> tuple[Instr, ...]:
    """Drop pure instructions whose values nothing uses."""
    used = [False] * len(prog)
    for i in reversed(range(len(prog))):
        ins = prog[i]
        if ins.op in PURE and not used[i]:
            continue
        for s in ins.srcs:
            used[s] = True
    keep = [not (ins.op in PURE and not used[i]) for i, ins in enumerate(prog)]
    return _renumber(prog, keep, {})
