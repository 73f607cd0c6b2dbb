"""Property tests of the index algebra: simplified expressions evaluate like the raw ones."""
from __future__ import annotations

import itertools
import random

import pytest

from zyx.ir import symbolic as sym
from zyx.ir.symbolic import Add, Div, Mod, Num, Var, add, floordiv, ge, land, lt, mod, mul, var


def _envs(vs):
    for values in itertools.product(*(range(v.lo, v.hi + 1) for v in vs)):
        yield {v.name: x for v, x in zip(vs, values)}


def _random_expr(rng, vs, depth):
    """A random expression as (simplified node, python evaluator of the raw expression)."""
    if depth == 0 or rng.random() < 0.25:
        if rng.random() < 0.3:
            c = rng.randint(-6, 12)
            return sym.num(c), (lambda env, c=c: c)
        v = rng.choice(vs)
        return v, (lambda env, v=v: env[v.name])
    kind = rng.choice(["add", "add", "mul", "div", "mod", "sub"])
    a, fa = _random_expr(rng, vs, depth - 1)
    if kind in ("add", "sub"):
        b, fb = _random_expr(rng, vs, depth - 1)
        if kind == "add":
            return add(a, b), (lambda env: fa(env) + fb(env))
        return a - b, (lambda env: fa(env) - fb(env))
    c = rng.choice([1, 2, 3, 4, 5, 6, 8, 12, 16])
    if kind == "mul":
        c = rng.choice([-3, -1, 0, 1, 2, 3, 4, 8])
        return mul(a, c), (lambda env: fa(env) * c)
    if kind == "div":
        return floordiv(a, c), (lambda env: fa(env) // c)
    return mod(a, c), (lambda env: fa(env) % c)


@pytest.mark.parametrize("seed", range(40))
def test_random_expressions_evaluate_like_raw(seed):
    rng = random.Random(seed)
    vs = [Var("x", 0, rng.randint(1, 9)), Var("y", rng.randint(-3, 0), rng.randint(1, 7)), Var("z", 0, 4)]
    for _ in range(25):
        node, raw = _random_expr(rng, vs, 4)
        used = sorted(sym.variables(node), key=lambda v: v.name)
        for env in _envs(vs):
            got = sym.evaluate(node, env)
            assert got == raw(env), (node, env)
            assert node.vmin <= got <= node.vmax, (node, env)
        del used


@pytest.mark.parametrize("seed", range(10))
def test_conditions_evaluate_like_raw(seed):
    rng = random.Random(100 + seed)
    vs = [Var("x", 0, 7), Var("y", -2, 5)]
    for _ in range(25):
        a, fa = _random_expr(rng, vs, 3)
        b, fb = _random_expr(rng, vs, 3)
        c1, c2 = rng.randint(-4, 10), rng.randint(-4, 10)
        cond = land(lt(a, c1), ge(b, c2))
        for env in _envs(vs):
            assert sym.evaluate(cond, env) == int(fa(env) < c1 and fb(env) >= c2)


def test_constant_folding():
    assert add(2, 3) == Num(5)
    assert mul(Num(4), 3) == Num(12)
    assert floordiv(Num(-7), 2) == Num(-4)
    assert mod(Num(-7), 3) == Num(2)
    x = var("x", 0, 9)
    assert add(x, 3, -3) == x
    assert (x * 2 - x - x) == Num(0)


def test_mul_div_cancels():
    x = var("x", 0, 100)
    assert floordiv(mul(x, 4), 4) == x
    assert floordiv(mul(x, 8), 4) == mul(x, 2)
    assert floordiv(mul(x, 4), 8) == floordiv(x, 2)
    assert floordiv(floordiv(x, 3), 5) == floordiv(x, 15)


def test_add_mod_drops_multiples():
    a, b = var("a", 0, 1000), var("b", 0, 1000)
    assert mod(add(a, mul(b, 12)), 12) == mod(a, 12)
    assert mod(add(a, mul(b, 24), 36), 12) == mod(a, 12)
    assert mod(mod(a, 24), 12) == mod(a, 12)


def test_bounds_remove_div_and_mod():
    i, j = var("i", 0, 15), var("j", 0, 31)
    flat = add(mul(i, 32), j)
    assert floordiv(flat, 32) == i
    assert mod(flat, 32) == j
    assert mod(i, 16) == i
    assert floordiv(j, 32) == Num(0)
    assert mod(floordiv(flat, 32), 16) == i


def test_merged_index_divides_to_its_outer_coordinate():
    """A reshape of (o0, 2, o1, 2, C) into (H, W, C) read back at (h // 2, w // 2): (d*b + s) // c with
    0 <= s < d and d | c folds to b // (c // d), so a vector of lanes reads consecutive addresses."""
    h, w, q = var("h", 0, 27), var("w", 0, 27), var("q", 0, 1)
    for lane in range(16):
        assert floordiv(add(mul(h, 896), mul(w, 32), mul(q, 16), lane), 1792) == floordiv(h, 2)
        assert floordiv(add(mul(w, 32), mul(q, 16), lane), 64) == floordiv(w, 2)
    x = add(mul(h, 896), mul(w, 34))  # the rest reaches 918 >= 896: not folded
    assert floordiv(x, 1792) != floordiv(h, 2)
    for env in _envs([h, w]):
        assert sym.evaluate(floordiv(x, 1792), env) == (env["h"] * 896 + env["w"] * 34) // 1792


def test_unravel_of_transpose_is_identity_mapping():
    # a (n, m) contiguous buffer read through its transpose view (m, n)
    n, m = 5, 7
    c0, c1 = var("c0", 0, m - 1), var("c1", 0, n - 1)
    flat = add(c0, mul(c1, m))
    assert sym.unravel(flat, (n, m)) == [c1, c0]


def test_gcd_and_shift():
    x, y = var("x", 0, 50), var("y", 0, 50)
    e = floordiv(add(mul(x, 4), mul(y, 2)), 8)
    env = {"x": 7, "y": 9}
    assert sym.evaluate(e, env) == (28 + 18) // 8
    assert isinstance(e, Div) and e.c == 4
    assert mod(add(x, 100), 200) == add(x, 100)
    assert mod(add(var("w", 10, 14), 0), 5) == add(var("w", 10, 14), -10)


def test_conditions_fold_by_bounds():
    x = var("x", 0, 9)
    assert lt(x, 10) == Num(1)
    assert lt(x, 0) == Num(0)
    assert ge(x, 0) == Num(1)
    assert land(lt(x, 10), ge(x, 0)) == Num(1)
    assert land(lt(x, 5), lt(x, 12)) == lt(x, 5)
    assert lt(add(x, 3), 5) == lt(x, 2)


def test_render_is_c_like():
    i, j = var("i", 0, 15), var("j", 0, 31)
    assert sym.render(add(mul(i, 32), j, 5)) == "i*32 + j + 5"
    assert sym.render(mod(add(mul(i, 3), j), 7)) == "(i*3 + j)%7"
    y = var("y", -4, 4)
    assert sym.render(floordiv(add(y, i), 3)).startswith("zyx_floordiv(")
    assert sym.render(land(lt(i, 10), ge(j, 2))) == "(i < 10) && (j > 1)"


def test_nodes_are_hashable_values():
    x = var("x", 0, 9)
    assert add(x, 1) == add(1, x)
    assert hash(add(x, 1)) == hash(add(1, x))
    assert len({mod(x, 3), mod(x, 3)}) == 1
    assert isinstance(add(x, var("y", 0, 3)), Add) and isinstance(mod(add(x, 4), 3), Mod)


def test_substitute():
    x, y = var("x", 0, 9), var("y", 0, 9)
    e = add(mod(x, 4), mul(y, 3))
    assert sym.substitute(e, {x: mul(var("q", 0, 3), 4)}) == mul(y, 3)
    assert sym.substitute(e, {y: Num(2)}) == add(mod(x, 4), 6)


def test_div_mod_recombine():
    g = var("g", 0, 999)
    assert add(mul(floordiv(g, 10), 10), mod(g, 10)) == g
    assert add(mul(floordiv(g, 10), 30), mul(mod(g, 10), 3), 1) == add(mul(g, 3), 1)


def test_lt_of_a_floor_division_compares_the_dividend():
    x = Var("x", -20, 100)
    assert lt(floordiv(x, 8), 5) == lt(x, 40)  # y // k < c  <=>  y < c * k (k > 0, negatives too)
    for v in range(-20, 101):
        assert sym.evaluate(lt(floordiv(x, 8), -2), {"x": v}) == int(v // 8 < -2)
