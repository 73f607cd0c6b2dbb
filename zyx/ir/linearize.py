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
from zyx.dtype import DType
from zyx.ir import ops
from zyx.ir import symbolic as sym
from zyx.ir.kernel import Kernel, Opts, out_var, red_var, vector_plan

PURE = frozenset({"const", "load", "alu", "cast", "cond", "hreduce"})
LANE = "lane"


@dataclass(frozen=True)
class Instr:
    """One statement. ``op``: define | const | load | alu | cast | acc | accum | hreduce | loop | endloop | store."""

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


# ------------------------------------------------------------------ lowering

def _subst_expr(e: ops.Expr, mapping: dict, memo: dict) -> ops.Expr:
    got = memo.get(id(e))
    if got is not None:
        return got[1]
    if isinstance(e, ops.Load):
        out: ops.Expr = ops.Load(e.buf, e.dtype, sym.substitute(e.index, mapping), sym.substitute(e.valid, mapping),
                                 e.other)
    elif isinstance(e, ops.Cond):
        out = ops.Cond(sym.substitute(e.valid, mapping))
    elif isinstance(e, ops.Alu):
        out = ops.Alu(e.op, tuple(_subst_expr(s, mapping, memo) for s in e.srcs), e.dtype)
    elif isinstance(e, ops.Cast):
        out = ops.Cast(_subst_expr(e.src, mapping, memo), e.dtype)
    elif isinstance(e, ops.Reduce):
        out = ops.Reduce(e.op, _subst_expr(e.src, mapping, memo), e.dtype)
    else:
        out = e
    memo[id(e)] = (e, out)
    return out


class _Builder:
    def __init__(self, reduce_vars: set[str], vec_reduce: bool = False) -> None:
        self.vec_reduce = vec_reduce
        self.instrs: list[tuple[int, Instr]] = []  # (section, instr with provisional ids)
        self.reduce_vars = reduce_vars
        self.memo: dict[ops.Expr, tuple[int, int]] = {}
        self.loop_copies: list[dict] = [{}]  # substitutions of the unrolled reduce variable

    def push(self, section: int, ins: Instr) -> int:
        self.instrs.append((section, ins))
        return len(self.instrs) - 1

    def _section_of_index(self, *nodes: sym.Node) -> int:
        for n in nodes:
            if any(v.name in self.reduce_vars for v in sym.variables(n)):
                return 1
        return 0

    def emit(self, e: ops.Expr) -> tuple[int, int]:
        got = self.memo.get(e)
        if got is not None:
            return got
        if isinstance(e, ops.Const):
            res = (self.push(0, Instr("const", e.dtype, (), e.value)), 0)
        elif isinstance(e, ops.Load):
            sec = self._section_of_index(e.index, e.valid)
            res = (self.push(sec, Instr("load", e.dtype, (), (e.buf, e.index, e.valid, e.other))), sec)
        elif isinstance(e, ops.Cond):
            sec = self._section_of_index(e.valid)
            res = (self.push(sec, Instr("cond", e.dtype, (), e.valid)), sec)
        elif isinstance(e, ops.Cast):
            i, sec = self.emit(e.src)
            res = (self.push(sec, Instr("cast", e.dtype, (i,), e.src.dtype)), sec)
        elif isinstance(e, ops.Alu):
            srcs = [self.emit(s) for s in e.srcs]
            sec = max(s for _, s in srcs)
            res = (self.push(sec, Instr("alu", e.dtype, tuple(i for i, _ in srcs), (e.op, tuple(s.dtype for s in e.srcs)))),
                   sec)
        elif isinstance(e, ops.Reduce):
            acc = self.push(0, Instr("acc", e.dtype, (), (e.op, ops.reduce_identity(e.op, e.src.dtype if e.op in (
                "argmax", "argmin") else e.dtype), e.src.dtype)))
            for copy in self.loop_copies:
                src = _subst_expr(e.src, copy, {}) if copy else e.src
                v, _ = self.emit(src)
                pos = copy.get("__pos__", sym.ZERO) if e.op in ("argmax", "argmin") else None
                self.push(1, Instr("accum", e.dtype, (acc, v), (e.op, pos)))
            res = (self.push(2, Instr("hreduce", e.dtype, (acc,), e.op)), 2) if self.vec_reduce else (acc, 2)
        else:  # pragma: no cover
            raise TypeError(f"unknown expression {e!r}")
        self.memo[e] = res
        return res


def linearize(k: Kernel, opts: Opts) -> Program:
    """The kernel lowered to a linear program (constant-folded, CSE'd, dead code removed)."""
    n = len(k.out_shape)
    vec, vaxis = vector_plan(k, opts)
    lane = sym.var(LANE, 0, vec - 1) if vec > 1 else sym.ZERO
    vout = vec > 1 and vaxis < n  # lanes along an output axis
    vred = vec > 1 and vaxis >= n  # lanes along the innermost reduce axis
    vsz = [vec if vout and i == vaxis else 1 for i in range(n)]
    shape = tuple(s // v for s, v in zip(k.out_shape, vsz))  # the output in vector units
    up = tuple(opts.upcast) + (1,) * (n - len(opts.upcast))
    grid = tuple(s // u if u > 1 and s % u == 0 else s for s, u in zip(shape, up))
    up = tuple(u if u > 1 and s % u == 0 else 1 for s, u in zip(shape, up))
    items = math.prod(grid)
    gid = sym.var("gid", 0, max(items - 1, 0))
    reduce_vars = {f"r{j}" for j in range(len(k.red_shape))}
    b = _Builder(reduce_vars, vred)

    # tile coordinates g_i from the global id
    gvars: list[sym.Node] = []
    acc = 1
    defs = []
    for i in reversed(range(n)):
        expr = sym.mod(sym.floordiv(gid, acc), grid[i])
        acc *= grid[i]
        gv = sym.var(f"g{i}", 0, max(grid[i] - 1, 0))
        if isinstance(gv, sym.Var) and not isinstance(expr, sym.Var):
            defs.append(Instr("define", dtypes.int64, (), (gv.name, expr)))
        elif not isinstance(gv, sym.Var):
            gv = sym.ZERO
        else:
            gv = expr
        gvars.append(gv)
    gvars.reverse()
    for d in reversed(defs):
        b.push(0, d)

    # reduce loops, the innermost unrolled
    rv = vec if vred else 1
    unroll = opts.unroll if k.red_shape and opts.unroll > 1 and k.red_shape[-1] % (opts.unroll * rv) == 0 else 1
    loops = []
    copies: list[dict] = [{}]
    if k.red_shape:
        last = len(k.red_shape) - 1
        rstrides = [math.prod(k.red_shape[j + 1:]) for j in range(len(k.red_shape))]
        pos_terms = []
        for j, size in enumerate(k.red_shape):
            steps = size // (unroll * rv) if j == last else size
            lv = sym.var(f"r{j}", 0, max(steps - 1, 0)) if steps > 0 else sym.var(f"r{j}", 0, 0)
            loops.append((f"r{j}", steps))
            if j != last:
                pos_terms.append(sym.mul(lv, rstrides[j]))
        copies = []
        last_orig = red_var(last, k.red_shape[last])
        last_loop = sym.var(f"r{last}", 0, max(k.red_shape[last] // (unroll * rv) - 1, 0))
        for uu in range(unroll):
            value = sym.add(sym.mul(last_loop, unroll), uu) if unroll > 1 else last_loop
            if rv > 1:
                value = sym.add(sym.mul(value, rv), lane)
            m: dict[Any, Any] = {last_orig: value} if last_orig != value else {}
            m["__pos__"] = sym.add(*pos_terms, value)
            copies.append(m)
    b.loop_copies = [{kk: vv for kk, vv in c.items()} for c in copies]
    # _subst_expr must not see the "__pos__" key as a variable
    for c in b.loop_copies:
        pos = c.pop("__pos__", None)
        c_sub = dict(c)
        c.clear()
        c.update(c_sub)
        if pos is not None:
            c["__pos__"] = pos

    # one body per upcast copy
    stores = []
    ostrides = [math.prod(k.out_shape[i + 1:]) for i in range(n)]
    for u in itertools.product(*(range(x) for x in up)):
        mapping = {out_var(i, k.out_shape[i]): sym.add(sym.mul(sym.add(sym.mul(gvars[i], up[i]), u[i]), vsz[i]),
                                                       lane if vsz[i] > 1 else 0) for i in range(n)}
        mapping = {kk: vv for kk, vv in mapping.items() if isinstance(kk, sym.Var)}
        body = _subst_expr(k.body, mapping, {}) if mapping else k.body
        v, _ = b.emit(body)
        flat = sym.add(*(sym.mul(mapping.get(out_var(i, k.out_shape[i]), sym.ZERO), ostrides[i]) for i in range(n)))
        stores.append((v, flat))
    for v, flat in stores:
        b.push(2, Instr("store", k.out_dtype, (v,), flat))

    # order by section: before loops, loop body, after loops
    order = sorted(range(len(b.instrs)), key=lambda i: b.instrs[i][0])
    remap: dict[int, int] = {}
    out: list[Instr] = []
    section = 0
    for old in order:
        sec, ins = b.instrs[old]
        if loops and section == 0 and sec >= 1:
            out.extend(Instr("loop", None, (), (name, steps)) for name, steps in loops)
        if loops and section <= 1 and sec == 2:
            out.extend(Instr("endloop", None, (), None) for _ in loops)
        section = sec
        remap[old] = len(out)
        out.append(Instr(ins.op, ins.dtype, tuple(remap[s] for s in ins.srcs), ins.arg))
    prog = tuple(out)
    prog = dce(cse(fold_constants(prog)))
    biggest = items
    for ins in prog:
        if ins.op in ("load", "store"):
            node = ins.arg[1] if ins.op == "load" else ins.arg
            biggest = max(biggest, abs(node.vmax), abs(node.vmin))
    return Program(prog, items, "int" if biggest < 2**31 - 1 else "long", vec, vred)


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
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b,
    "le": lambda a, b: a <= b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b,
    "neg": lambda a: -a,
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
            if op == "where" and consts[0][0]:
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
            if c and not ins.dtype.emulated and not ins.arg.emulated and "float16" not in (ins.dtype.name, ins.arg.name):
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
