"""zyx.ir.rewrite: the one tree-rewrite helper (every child kind visited, shared subtrees once) and walk."""
from __future__ import annotations

from zyx import dtype as dt
from zyx.ir import expr
from zyx.ir import symbolic as sym
from zyx.ir.kernel import out_var, red_var
from zyx.ir.rewrite import rewrite, walk


def _every_kind() -> tuple[expr.Expr, dict[type, int]]:
    """A tree holding one node of every kind (a gather's value among them) and how many of each."""
    i, r = out_var(0, 8), red_var(0, 4)
    idx = expr.Load(2, dt.int64, i)
    gathered = expr.Load(1, dt.float32, sym.add(sym.mul(sym.var("g", 0, 9), 4), r), gather=(("g", idx, 10),))
    cond = expr.Cond(sym.lt(i, 5))
    param = expr.Param(0, dt.float32)
    one = expr.Const(1.0, dt.float32)
    red = expr.Reduce("sum", expr.Alu("mul", (gathered, param), dt.float32), dt.float32)
    body = expr.Alu("where", (cond, expr.Cast(red, dt.float32), one), dt.float32)
    return body, {expr.Alu: 2, expr.Load: 2, expr.Cond: 1, expr.Param: 1, expr.Const: 1, expr.Reduce: 1, expr.Cast: 1}


def test_visits_every_node_kind_once_children_first():
    body, counts = _every_kind()
    seen: list[expr.Expr] = []
    out = rewrite(body, lambda x: seen.append(x))
    assert out is body  # nothing replaced: the same object back
    assert {t: sum(type(x) is t for x in seen) for t in counts} == counts
    assert len(seen) == sum(counts.values())
    pos = {id(x): n for n, x in enumerate(seen)}
    for x in seen:  # every child before its parent
        kids = (x.srcs if isinstance(x, expr.Alu) else (x.src,) if isinstance(x, (expr.Cast, expr.Reduce))
                else tuple(v for _, v, _ in x.gather) if isinstance(x, expr.Load) else ())
        assert all(pos[id(c)] < pos[id(x)] for c in kids)


def test_replaces_inside_gathers_and_reduces():
    body, _ = _every_kind()
    i = out_var(0, 8)

    def shift(x: expr.Expr) -> expr.Expr | None:  # o0 -> o0 + 1 in every load and condition
        sub = {i: sym.add(i, 1)}
        if isinstance(x, expr.Load):
            return expr.Load(x.buf, x.dtype, sym.substitute(x.index, sub), x.valid, x.other, x.gather)
        if isinstance(x, expr.Cond):
            return expr.Cond(sym.substitute(x.valid, sub))
        return None

    out = rewrite(body, shift)
    idx = [x for x in walk(out) if isinstance(x, expr.Load) and x.buf == 2]
    assert [x.index for x in idx] == [sym.add(i, 1)]  # the gather's index load, under a Reduce
    assert next(x for x in walk(out) if isinstance(x, expr.Cond)).valid == sym.lt(sym.add(i, 1), 5)
    # the rebuilt parents keep their other fields
    assert isinstance(out, expr.Alu) and out.op == "where" and isinstance(out.srcs[1].src, expr.Reduce)


def test_shared_subtree_visited_once_and_stays_shared():
    x = expr.Load(1, dt.float32, out_var(0, 8))
    sq = expr.Alu("mul", (x, x), dt.float32)
    body = expr.Alu("add", (sq, expr.Alu("exp", (sq,), dt.float32)), dt.float32)
    calls: list[expr.Expr] = []

    def to_double(e: expr.Expr) -> expr.Expr | None:
        calls.append(e)
        return expr.Cast(e, dt.float64) if isinstance(e, expr.Load) else None

    out = rewrite(body, to_double)
    assert sum(isinstance(c, expr.Load) for c in calls) == 1 and len(calls) == 4  # x, x*x, exp, add
    new_sq = out.srcs[0]
    assert new_sq.srcs[0] is new_sq.srcs[1] and out.srcs[1].srcs[0] is new_sq


def test_replacement_is_not_revisited():
    x = expr.Load(1, dt.float32, out_var(0, 8))
    body = expr.Alu("neg", (x,), dt.float32)
    # a replacement containing the matched node is returned as is (no endless rewriting)
    out = rewrite(body, lambda e: expr.Alu("abs", (e,), dt.float32) if isinstance(e, expr.Load) else None)
    assert out == expr.Alu("neg", (expr.Alu("abs", (x,), dt.float32),), dt.float32)
