"""Cost expressions: the safe evaluator, each shipped contract's numbers, calibration."""
from __future__ import annotations

import pytest

import zyx.contracts as zc
from zyx import dtype as zd
from zyx.contracts import cost as zcost
from zyx.contracts.model import Operand
from zyx.errors import ContractError


# ---------------------------------------------------------------- the grammar


@pytest.mark.parametrize("expr,values,expected", [
    ("0", {}, 0),
    ("2 * n * dtype_bytes", {"n": 10, "dtype_bytes": 4}, 80),
    ("2 + 3 * 4", {}, 14),
    ("(2 + 3) * 4", {}, 20),
    ("n // 3", {"n": 10}, 3),
    ("n / 4", {"n": 10}, 2.5),
    ("-n + 1", {"n": 5}, -4),
    ("+n", {"n": 5}, 5),
    ("min(a, b) + max(a, b, 7)", {"a": 2, "b": 5}, 9),
    ("max(n - 1, 0)", {"n": 0}, 0),
    ("1.5e3 * x", {"x": 2}, 3000.0),
])
def test_evaluate(expr, values, expected):
    result = zc.evaluate(expr, values)
    assert result == expected and type(result) is type(expected)


@pytest.mark.parametrize("expr,why", [
    ("n ** 2", "operator Pow is not allowed"),
    ("n % 2", "operator Mod is not allowed"),
    ("n << 1", "operator LShift is not allowed"),
    ("~n", "unary Invert is not allowed"),
    ("not n", "unary Not is not allowed"),
    ("n > 1", "Compare is not allowed"),
    ("a.b", "Attribute is not allowed"),
    ("a[0]", "Subscript is not allowed"),
    ("'n'", "constant 'n' is not a number"),
    ("True * n", "constant True is not a number"),
    ("abs(n)", "only min(...) and max(...)"),
    ("min()", "only min(...) and max(...)"),
    ("max(a, key=b)", "only min(...) and max(...)"),
    ("min(*a)", "starred arguments are not allowed"),
    ("__import__('os').system('true')", "only min(...) and max(...)"),
    ("(lambda: 1)()", "only min(...) and max(...)"),
    ("[n]", "List is not allowed"),
    ("n; n", "cannot parse cost expression"),
    ("", "must be a non-empty string"),
    ("calibration * 2", "'calibration' is reserved"),
    ("min * 2", "'min' is reserved"),
])
def test_outside_the_grammar_is_rejected(expr, why):
    with pytest.raises(zcost.ExpressionError) as info:
        zc.compile_expr(expr)
    assert why in str(info.value)
    assert isinstance(info.value, ContractError)


def test_expr_names():
    assert zc.expr_names("min(outer, 2) * dim_size + max(inner, n) // 4") == {"outer", "dim_size", "inner", "n"}
    assert zc.expr_names("0") == frozenset()


def test_unknown_name_names_contract_and_expression():
    roll = zc.get("roll")
    with pytest.raises(ContractError) as info:
        roll.cost(outer=2, inner=3, dtype_bytes=4)
    assert str(info.value) == ("roll: cost.bytes_moved '2 * outer * dim_size * inner * dtype_bytes': unknown name "
                               "'dim_size' (pass it as a cost param); given: dtype_bytes, inner, outer")


def test_non_numeric_value_and_division_by_zero():
    with pytest.raises(ContractError, match=r"^flip: cost.bytes_moved '2 \* n \* dtype_bytes': n = '7' is not a "
                                            r"number$"):
        zc.get("flip").cost(n="7", dtype_bytes=4)
    with pytest.raises(ContractError, match=r"^x: 'n / d': division by zero$"):
        zc.evaluate("n / d", {"n": 1, "d": 0}, where="x:")


# ---------------------------------------------------------------- shipped costs


COSTS = [
    # name, cost params, bytes_moved, flops, memory.device_bytes
    ("contiguize", {"n": 100, "dtype_bytes": 2}, 400, 0, 200),
    ("flip", {"n": 24, "dtype_bytes": 4}, 192, 0, 96),
    ("roll", {"outer": 2, "dim_size": 3, "inner": 4, "dtype_bytes": 8}, 384, 0, 192),
    ("concat", {"n": 30, "dtype_bytes": 1}, 60, 0, 30),
    ("write_slice", {"slab_elems": 12, "dtype_bytes": 4}, 96, 0, 0),
    ("write_slice_rotating", {"slab_elems": 12, "dtype_bytes": 2}, 48, 0, 0),
    ("write_slice_doff", {"slab_elems": 12, "dtype_bytes": 4}, 104, 0, 0),
    ("triangular", {"batch_count": 3, "rows": 4, "cols": 5, "dtype_bytes": 4}, 480, 0, 240),
    ("masked_fill", {"n": 10, "dtype_bytes": 4}, 90, 0, 40),
    ("cumsum_f32", {"outer": 2, "dim_size": 5, "inner": 3}, 240, 30, 120),
    ("cumsum_f64", {"outer": 2, "dim_size": 5, "inner": 3}, 480, 30, 240),
    ("cumsum_bf16", {"outer": 2, "dim_size": 5, "inner": 3}, 120, 30, 60),
    ("cumsum_f16", {"outer": 1, "dim_size": 1000, "inner": 1}, 4000, 1000, 2000),
]



@pytest.fixture(autouse=True)
def no_device_calibration():
    """These tests check the document's formulas: a calibration stored in the cache
    directory by another test or an earlier run (CI runs the suite twice) must not leak in."""
    previous = zc.set_calibration_source(None)
    yield
    zc.set_calibration_source(previous)

@pytest.mark.parametrize("name,params,bytes_moved,flops,device", COSTS, ids=[c[0] for c in COSTS])
def test_shipped_costs(name, params, bytes_moved, flops, device):
    c = zc.get(name)
    cost = c.cost(**params)
    assert cost == zc.Cost(bytes_moved, flops, None)
    assert c.memory(**params) == {"device_bytes": device, "host_bytes": 0, "disk_bytes": 0}


def test_every_contract_is_costed():
    assert sorted(c[0] for c in COSTS) == sorted(c.name for c in zc.all_contracts())


def test_declared_symbols_are_derivable():
    doc = zc.default_registry().documents[0]
    assert set(doc.cost_symbols) <= set(zc.DERIVED_SYMBOLS)


# ---------------------------------------------------------------- symbols from a call


def test_symbols_for_cumsum_and_cost_of_call():
    c = zc.get("cumsum_bf16")
    x = Operand(zd.bfloat16, (2, 5, 3))
    syms = zc.symbols_for(c, [x], {"dim": 1})
    assert (syms["outer"], syms["dim_size"], syms["inner"], syms["n"], syms["dtype_bytes"]) == (2, 5, 3, 30, 2)
    assert zc.cost_of_call(c, [x], {"dim": -2}) == zc.Cost(120, 30, None)


def test_symbols_for_concat_sums_inputs():
    c = zc.get("concat")
    xs = [Operand(zd.float16, (2, 3)), Operand(zd.float16, (4, 3)), Operand(zd.float16, (1, 3))]
    syms = zc.symbols_for(c, xs, {"dim": 0})
    assert syms["n"] == 21 and syms["num_inputs"] == 3 and syms["dtype_bytes"] == 2
    assert zc.cost_of_call(c, xs, {"dim": 0}).bytes_moved == 84


def test_symbols_for_triangular_and_write_slice():
    t = zc.symbols_for(zc.get("triangular"), [Operand(zd.int64, (2, 3, 4, 5))], {"upper": True, "diagonal": 1})
    assert (t["batch_count"], t["rows"], t["cols"], t["dtype_bytes"]) == (6, 4, 5, 8)
    assert zc.cost_of_call(zc.get("triangular"), [Operand(zd.int64, (2, 3, 4, 5))], {}).bytes_moved == 2 * 120 * 8
    w = zc.symbols_for(zc.get("write_slice"), [Operand(zd.uint8, (3, 4))], {"dest_shape": (10, 10)})
    assert w["slab_elems"] == 12 and w["dtype_bytes"] == 1
    assert "dest_shape" not in w


def test_roll_params_are_cost_symbols():
    c = zc.get("roll")
    x = Operand(zd.float32, (6, 4))
    params = zc.validate(c, [x], {"shift": -1, "outer": 1, "dim_size": 24, "inner": 1})
    assert zc.cost_of_call(c, [x], params).bytes_moved == 2 * 24 * 4


# ---------------------------------------------------------------- calibration


def test_predicted_seconds_with_a_fit():
    fit = zc.Fit(overhead_s=1e-5, bytes_per_s=1e9, flops_per_s=1e8)
    cost = zc.get("cumsum_f32").cost(fit, outer=1, dim_size=1000, inner=1)
    assert cost.bytes_moved == 8000 and cost.flops == 1000
    assert cost.predicted_s == pytest.approx(1e-5 + 8000 / 1e9 + 1000 / 1e8)
    no_rate = zc.get("flip").cost(zc.Fit(2e-6, 1e10), n=1000, dtype_bytes=4)
    assert no_rate.predicted_s == pytest.approx(2e-6 + 8000 / 1e10)


def test_calibration_source_hook():
    seen = []

    def source(contract):
        seen.append(contract.name)
        return zc.Fit(1e-6, 2e9) if contract.name == "flip" else None

    previous = zc.set_calibration_source(source)
    try:
        assert zc.get("flip").cost(n=500, dtype_bytes=2).predicted_s == pytest.approx(1e-6 + 2000 / 2e9)
        assert zc.get("roll").cost(outer=1, dim_size=1, inner=1, dtype_bytes=1).predicted_s is None
        explicit = zc.get("flip").cost(zc.Fit(0.0, 1e3), n=1, dtype_bytes=1)
        assert explicit.predicted_s == pytest.approx(2e-3)
    finally:
        zc.set_calibration_source(previous)
    assert seen == ["flip", "roll"]
    assert zc.get("flip").cost(n=1, dtype_bytes=1).predicted_s is None


def test_bad_calibration():
    with pytest.raises(ContractError, match="bytes_per_s must be > 0, got 0"):
        zc.get("flip").cost(zc.Fit(0.0, 0), n=1, dtype_bytes=1)
