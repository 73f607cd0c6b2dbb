"""Traversing kernel IR expressions (``zyx.ir.expr``): ``walk`` reads a tree, ``rewrite``, the one
tree-rewrite helper, changes it; both visit the same children.

Every pass that changes an expression tree (substituting index variables, guarding loads,
hoisting reduces, replacing a subtree) is a function ``fn`` handed to ``rewrite``, so
each visits every child kind the same way: ``Alu`` operands, ``Cast``/``Reduce`` sources
and the gathered values of a ``Load``. ``Const``, ``Param`` and ``Cond`` have no
expression children (a ``Cond``'s and a ``Load``'s index conditions are symbolic nodes,
``fn``'s to change).
"""
from __future__ import annotations

from collections.abc import Callable, Iterator

from zyx.ir import symbolic as sym
from zyx.ir.expr import Alu, Cast, Cond, Expr, Load, Reduce


def walk(e: Expr) -> Iterator[Expr]:
    """Every node of an expression tree, parents before children (with repeats)."""
    stack = [e]
    while stack:
        x = stack.pop()
        yield x
        if isinstance(x, Alu):
            stack.extend(reversed(x.srcs))
        elif isinstance(x, (Cast, Reduce)):
            stack.append(x.src)
        elif isinstance(x, Load) and x.gather:
            stack.extend(v for _, v, _ in reversed(x.gather))


def rewrite(root: Expr, fn: Callable[[Expr], Expr | None]) -> Expr:
    """``root`` rewritten bottom-up: each node's children are rewritten first, then
    ``fn`` gets the node rebuilt on them (the node itself when no child changed) and
    returns its replacement, or None to keep it. A subtree shared by several parents
    (the same object) is visited once per call."""
    memo: dict[int, tuple[Expr, Expr]] = {}  # id -> (node, result): the node kept alive so ids stay unique

    def go(e: Expr) -> Expr:
        got = memo.get(id(e))
        if got is not None:
            return got[1]
        node = e
        if isinstance(e, Alu):
            srcs = tuple(go(s) for s in e.srcs)
            if any(a is not b for a, b in zip(srcs, e.srcs)):
                node = Alu(e.op, srcs, e.dtype)
        elif isinstance(e, Cast):
            src = go(e.src)
            if src is not e.src:
                node = Cast(src, e.dtype)
        elif isinstance(e, Reduce):
            src = go(e.src)
            if src is not e.src:
                node = Reduce(e.op, src, e.dtype)
        elif isinstance(e, Load) and e.gather:
            gather = tuple((nm, go(x), sz) for nm, x, sz in e.gather)
            if any(a[1] is not b[1] for a, b in zip(gather, e.gather)):
                node = Load(e.buf, e.dtype, e.index, e.valid, e.other, gather)
        out = fn(node)
        if out is None:
            out = node
        memo[id(e)] = (e, out)
        return out

    return go(root)


def substitute_indices(e: Expr, mapping: dict) -> Expr:
    """``e`` with the index variables of ``mapping`` substituted in every load's index and condition and
    every ``Cond`` (``sym.substitute``: everything re-simplified)."""
    def fn(x: Expr) -> Expr | None:
        if isinstance(x, Load):
            return Load(x.buf, x.dtype, sym.substitute(x.index, mapping), sym.substitute(x.valid, mapping),
                        x.other, x.gather)
        if isinstance(x, Cond):
            return Cond(sym.substitute(x.valid, mapping), x.dtype)
        return None
    return rewrite(e, fn)
