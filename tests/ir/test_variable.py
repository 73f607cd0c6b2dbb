"""zyx.Variable and bound variables (zyx.ir.variable): ranges, the index algebra, read reports."""
from __future__ import annotations

import pytest

import zyx
from zyx.ir import symbolic as sym
from zyx.ir import variable
from zyx.ir.variable import BoundExpr, BoundVariable, Variable, VariableArg


@pytest.fixture
def seen(monkeypatch: pytest.MonkeyPatch) -> list:
    """The variables whose bound values Python code reads during the test (``taint_hook`` collects them)."""
    got: list = []
    monkeypatch.setattr(variable, "taint_hook", got.append)
    return got


def test_bind_checks_the_range():
    t = Variable("t", 2, 9)
    assert t.bind(2).value == 2 and t.bind(9).value == 9
    for bad in (1, 10, -5):
        with pytest.raises(zyx.ShapeError, match=rf"'t' bound to {bad}, outside its range \[2, 9\]"):
            t.bind(bad)
    with pytest.raises(TypeError, match="expected an int"):
        t.bind(2.5)
    with pytest.raises(TypeError, match="expected an int"):
        t.bind(True)


def test_constructor_errors():
    with pytest.raises(zyx.ShapeError, match="min = 5 > max = 4"):
        Variable("n", 5, 4)
    with pytest.raises(TypeError, match="name must be a non-empty str"):
        Variable("", 0, 1)
    with pytest.raises(TypeError, match="max must be an int"):
        Variable("n", 0, 1.5)
    assert zyx.Variable is Variable


def test_node_carries_the_bounds_into_simplification():
    n = Variable("n", 0, 7).node()
    assert (n.vmin, n.vmax) == (0, 7)
    assert sym.mod(n, 8) == n  # bounds prove the modulo redundant
    assert sym.floordiv(n, 8) == sym.num(0)
    assert Variable("k", 3, 3).node() == sym.num(3)


def test_python_reads_are_reported_and_values_behave_as_ints(seen):
    t = Variable("t", 0, 100)
    b = t.bind(7)
    assert b + 1 == 8 and 10 - b == 3 and int(b) == 7 and [0] * 10 == [0] * 10
    assert list(range(10))[:b] == list(range(7)) and b > 3 and b % 4 == 3
    assert seen and all(v is t for v in seen)
    seen.clear()
    assert b.value == 7 and repr(b) == "t=7" and not seen  # zyx's own reads report nothing
    assert isinstance(b, BoundVariable) and not isinstance(b, int)


def test_two_bound_variables_compare_by_value_and_both_are_reported(seen):
    t, u = Variable("t", 0, 100), Variable("u", 0, 100)
    assert t.bind(3) == t.bind(3) and t.bind(3) != u.bind(4) and t.bind(3) < u.bind(4)
    assert (5, t.bind(3)) == (5, t.bind(3)) and t.bind(3) + u.bind(4) == 7
    assert t in seen and u in seen


def test_variable_args_recompute_from_the_binding():
    t = Variable("t", 0, 100)
    a = VariableArg(t.bind(13))
    assert a == 13 and a.variable is t and a.at(5) == 5
    ring = a.then(lambda v: v % 8)
    assert ring == 5 and ring.at(17) == 1 and ring.variable is t


def test_affine_arithmetic_stays_symbolic_with_its_own_range(seen):
    t = Variable("t", 2, 9)
    b = t.bind(5)
    forms = {"t + 1": (b + 1, 1, 1), "1 + t": (1 + b, 1, 1), "t - 3": (b - 3, 1, -3), "10 - t": (10 - b, -1, 10),
             "2 * t": (2 * b, 2, 0), "t * 3 - 1": (b * 3 - 1, 3, -1), "-t": (-b, -1, 0),
             "2 * (t + 1)": (2 * (b + 1), 2, 2)}
    for name, (e, scale, offset) in forms.items():
        assert type(e) is BoundExpr and (e.variable, e.scale, e.offset) == (t, scale, offset), name
        assert e.value == scale * 5 + offset, name
        lo, hi = sorted((scale * 2 + offset, scale * 9 + offset))
        assert (e.min, e.max) == (lo, hi), name
        arg = e.arg()
        assert arg == e.value and arg.variable is t and arg.at(7) == scale * 7 + offset, name
    assert (b + 1) - 1 is b and +b is b and b * 0 == 0 and type(b * 0) is int
    assert repr(b + 1) == "(t + 1)=6" and repr(10 - b) == "(-t + 10)=5" and repr(2 * b - 1) == "(2*t - 1)=9"
    assert (b.min, b.max) == (2, 9) and b.arg().at(4) == 4
    assert not seen  # forming an expression reads nothing
    assert int(b + 1) == 6 and seen == [t]
    seen.clear()
    assert (b + 1) == 6 and (b + 1) < 7 and list(range(10))[:b - 2] == [0, 1, 2]
    assert seen and all(v is t for v in seen)
    seen.clear()
    assert b + 0.5 == 5.5 and b + True == 6 and (b + 1) // 2 == 3 and seen  # other operands read the value
    assert type(b + 0.5) is float and type((b + 1) + 0.5) is float
    assert not isinstance(b + 1, int)
