"""Cost expressions: the safe evaluator, each shipped contract's numbers, calibration."""
from __future__ import annotations

import random

import pytest

import zyx.contracts as zc
from zyx import dtype as zd
from zyx.contracts.spec import cost as zcost
from zyx.contracts.spec.model import Operand
from zyx.errors import ContractError

# ---------------------------------------------------------------- the grammar


@pytest.mark.parametrize("expr,values,expected", [
    ("0", {}, 0),
    ("2 * n * dtype_bytes", {"n": 10, "dtype_bytes": 4}, 80),
    ("2 * source.n * dtype_size", {"source_n": 12, "dtype_size": 4}, 96),
    ("2 * outer_count * sum(input_dim_sizes) * inner_count", {"outer_count": 2, "input_dim_sizes": [1, 2, 3],
                                                              "inner_count": 5}, 120),
    ("sum(xs) + 1", {"xs": (1.5, 2)}, 4.5),
    ("sum(xs)", {"xs": []}, 0),
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
    ("a.b", "attribute 'a.b' is not allowed"),
    ("a.n.n", "attribute 'a.n.n' is not allowed"),
    ("f(x).n", "attribute 'f(x).n' is not allowed"),
    ("min.n", "'min' is reserved"),
    ("a[0]", "Subscript is not allowed"),
    ("'n'", "constant 'n' is not a number"),
    ("True * n", "constant True is not a number"),
    ("abs(n)", "only min(...) and max(...) with positional arguments, and sum(<list symbol>)"),
    ("min()", "only min(...) and max(...) with positional arguments, and sum(<list symbol>)"),
    ("max(a, key=b)", "only min(...) and max(...) with positional arguments, and sum(<list symbol>)"),
    ("min(*a)", "starred arguments are not allowed"),
    ("__import__('os').system('true')", "only min(...) and max(...) with positional arguments, and sum(<list symbol>)"),
    ("(lambda: 1)()", "only min(...) and max(...) with positional arguments, and sum(<list symbol>)"),
    ("[n]", "List is not allowed"),
    ("n; n", "cannot parse cost expression"),
    ("", "must be a non-empty string"),
    ("calibration * 2", "'calibration' is reserved"),
    ("min * 2", "'min' is reserved"),
    ("sum * 2", "'sum' is reserved"),
    ("sum(a, b)", "sum(...) takes exactly one list-valued symbol"),
    ("sum(a + b)", "sum(...) takes exactly one list-valued symbol"),
    ("sum()", "sum(...) takes exactly one list-valued symbol"),
    ("sum(xs=a)", "sum(...) takes exactly one list-valued symbol"),
])
def test_outside_the_grammar_is_rejected(expr, why):
    with pytest.raises(zcost.ExpressionError) as info:
        zc.compile_expr(expr)
    assert why in str(info.value)
    assert isinstance(info.value, ContractError)


def test_expr_names():
    assert zc.expr_names("min(outer, 2) * dim_size + max(inner, n) // 4") == {"outer", "dim_size", "inner", "n"}
    assert zc.expr_names("0") == frozenset()
    assert zc.expr_names("2 * source.n * sum(sizes)") == {"source_n", "sizes"}


def test_expr_symbols_in_order_of_first_use():
    assert zcost.expr_symbols("2 * outer * dim_size * inner * dtype_size") == ("outer", "dim_size", "inner",
                                                                               "dtype_size")
    assert zcost.expr_symbols("max(b, a) + source.n * b + sum(c)") == ("b", "a", "source_n", "c")


@pytest.mark.parametrize("expr,values,why", [
    ("sum(xs)", {"xs": 3}, "xs = 3 is not a list of numbers"),
    ("sum(xs)", {"xs": [1, "2"]}, "xs = [1, '2'] is not a list of numbers"),
    ("sum(xs)", {"xs": [True]}, "xs = [True] is not a list of numbers"),
    ("2 * xs", {"xs": [1, 2]}, "xs = [1, 2] is a list; only sum(xs) may use it"),
    ("source.n", {"source_n": None}, "source_n = None is not a number"),
    ("source.n", {}, "unknown name 'source_n'"),
    ("sum(xs)", {}, "unknown name 'xs'"),
])
def test_bad_values(expr, values, why):
    with pytest.raises(ContractError) as info:
        zc.evaluate(expr, values, where="w:")
    assert str(info.value).startswith(f"w: {expr!r}: ") and why in str(info.value)


def test_non_numeric_value_and_division_by_zero():
    with pytest.raises(ContractError, match=r"^flip: cost.bytes_moved '2 \* outer \* dim_size \* inner \* dtype_size': "
                                            r"outer = '7' is not a number$"):
        zc.get("flip").cost(outer="7", dim_size=1, inner=1, dtype_size=4)
    with pytest.raises(ContractError, match=r"^x: 'n / d': division by zero$"):
        zc.evaluate("n / d", {"n": 1, "d": 0}, where="x:")


# ---------------------------------------------------------------- shipped costs: the FKC reference's symbols


def _fold(p):
    return p["outer"] * p["dim_size"] * p["inner"]


#: Per contract, as the FKC reference (fkc-shape-ops.md) writes its cost: the symbols
#: `.cost()` takes, then bytes_moved, flops and the device bytes one call allocates
#: (zyx's output buffer; the reference's host scratch has no OpenCL counterpart).
#: The cumsums' bytes are the reference's fixed widths; dtype_size may also be given.
FKC = {
    "contiguize": (("n", "dtype_bytes"), lambda p: 2 * p["n"] * p["dtype_bytes"], lambda p: 0,
                   lambda p: p["n"] * p["dtype_bytes"]),
    "flip": (("outer", "dim_size", "inner", "dtype_size"), lambda p: 2 * _fold(p) * p["dtype_size"], lambda p: 0,
             lambda p: _fold(p) * p["dtype_size"]),
    "roll": (("outer", "dim_size", "inner", "dtype_size"), lambda p: 2 * _fold(p) * p["dtype_size"], lambda p: 0,
             lambda p: _fold(p) * p["dtype_size"]),
    "concat": (("outer_count", "input_dim_sizes", "inner_count", "dtype_size"),
               lambda p: 2 * p["outer_count"] * sum(p["input_dim_sizes"]) * p["inner_count"] * p["dtype_size"],
               lambda p: 0,
               lambda p: p["outer_count"] * sum(p["input_dim_sizes"]) * p["inner_count"] * p["dtype_size"]),
    "write_slice": (("source_n", "dtype_size"), lambda p: 2 * p["source_n"] * p["dtype_size"], lambda p: 0,
                    lambda p: 0),
    "write_slice_rotating": (("source_n", "dtype_size"), lambda p: 2 * p["source_n"] * p["dtype_size"],
                             lambda p: 0, lambda p: 0),
    "write_slice_doff": (("source_n", "dtype_size"), lambda p: 2 * p["source_n"] * p["dtype_size"], lambda p: 0,
                         lambda p: 0),
    "triangular": (("batch_count", "rows", "cols", "dtype_size"),
                   lambda p: 2 * p["batch_count"] * p["rows"] * p["cols"] * p["dtype_size"], lambda p: 0,
                   lambda p: p["batch_count"] * p["rows"] * p["cols"] * p["dtype_size"]),
    "masked_fill": (("n", "dtype_size"), lambda p: 2 * p["n"] * p["dtype_size"] + p["n"], lambda p: 0,
                    lambda p: p["n"] * p["dtype_size"]),
    **{f"cumsum_{t}": (("outer", "dim_size", "inner"), lambda p, w=w: 2 * _fold(p) * w, _fold,
                       lambda p, w=w: _fold(p) * w)
       for t, w in (("f32", 4), ("f64", 8), ("bf16", 2), ("f16", 2))},
    # the scans beyond cumsum (zyx's own: not in the reference), in its symbols
    **{name: (("outer", "dim_size", "inner", "dtype_size"), lambda p: _fold(p) * (p["dtype_size"] + 8), _fold,
              lambda p: _fold(p) * 8) for name in ("cumsum_int", "cumprod_int")},
    "cumprod_f32": (("outer", "dim_size", "inner", "dtype_size"), lambda p: 2 * _fold(p) * p["dtype_size"], _fold,
                    lambda p: _fold(p) * p["dtype_size"]),
    "cumprod_f64": (("outer", "dim_size", "inner"), lambda p: 2 * _fold(p) * 8, _fold, lambda p: _fold(p) * 8),
    **{name: (("outer", "dim_size", "inner", "dtype_size"), lambda p: _fold(p) * (2 * p["dtype_size"] + 8), _fold,
              lambda p: _fold(p) * (p["dtype_size"] + 8)) for name in ("cummax", "cummin")},
    "logcumsumexp_f32": (("outer", "dim_size", "inner", "dtype_size"), lambda p: 2 * _fold(p) * p["dtype_size"],
                         lambda p: 4 * _fold(p), lambda p: _fold(p) * p["dtype_size"]),
    "logcumsumexp_f64": (("outer", "dim_size", "inner"), lambda p: 2 * _fold(p) * 8, lambda p: 4 * _fold(p),
                         lambda p: _fold(p) * 8),
}
OPTIONAL = {name: ("dtype_size",) for name in ("cumsum_f32", "cumsum_f64", "cumsum_bf16", "cumsum_f16", "cumprod_f64",
                                                "logcumsumexp_f64")}
NAMES = list(FKC)


def param_sets(name, count=4):
    """A few cost-param sets of ``name`` (seeded), dtype widths among those it accepts."""
    rng = random.Random(name)
    widths = sorted({d.itemsize for d in zc.get(name).dtypes})
    sets = []
    for _ in range(count):
        p = {}
        for sym in FKC[name][0]:
            if sym in ("dtype_size", "dtype_bytes"):
                p[sym] = rng.choice(widths)
            elif sym == "input_dim_sizes":
                p[sym] = [rng.randint(0, 9) for _ in range(rng.randint(1, 4))]
            else:
                p[sym] = rng.randint(0, 50)
        sets.append(p)
    sets.append({k: ([1] if k == "input_dim_sizes" else 1) for k in FKC[name][0]} | (
        {k: min(widths) for k in FKC[name][0] if k in ("dtype_size", "dtype_bytes")}))
    return sets


def test_every_contract_is_costed():
    assert sorted(FKC) == sorted(c.name for c in zc.all_contracts())


@pytest.mark.parametrize("name", NAMES)
def test_cost_takes_exactly_the_fkc_symbols(name):
    spec = zc.get(name).cost_spec
    assert spec.symbols == FKC[name][0] + OPTIONAL.get(name, ())
    assert spec.optional == OPTIONAL.get(name, ())


@pytest.mark.parametrize("name", NAMES)
def test_cost_gives_the_fkc_value(name):
    c = zc.get(name)
    _, bytes_moved, flops, device = FKC[name]
    for p in param_sets(name):
        assert c.cost(**p) == zc.Cost(bytes_moved(p), flops(p), None), p
        assert c.memory(**p) == {"device_bytes": device(p), "host_bytes": 0, "disk_bytes": 0}, p
        for extra in OPTIONAL.get(name, ()):  # the cumsums' optional dtype_size: their own width
            assert c.cost(**p, **{extra: c.dtypes[0].itemsize}) == c.cost(**p)


@pytest.mark.parametrize("name", NAMES)
def test_missing_symbol_names_contract_and_symbol(name):
    c = zc.get(name)
    p = param_sets(name)[0]
    for sym in FKC[name][0]:
        partial = {k: v for k, v in p.items() if k != sym}
        with pytest.raises(ContractError) as info:
            c.cost(**partial)
        assert str(info.value).startswith(f"{name}: missing cost symbol {sym!r}; {name}'s cost takes "
                                          f"{', '.join(FKC[name][0])}")
        in_memory = any(sym in zcost.expr_symbols(e) for _, e in c.cost_spec.memory)
        if in_memory:  # memory names them too (the in-place writers' is 0, the int scans' 8 bytes: need none)
            with pytest.raises(ContractError, match=f"^{name}: missing cost symbol {sym!r}"):
                c.memory(**partial)
        else:
            assert c.memory(**partial) == {"device_bytes": FKC[name][3](p), "host_bytes": 0, "disk_bytes": 0}


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("unknown", ["widgets", "n", "dtype_bytes", "slab_elems", "num_inputs"])
def test_unknown_symbol_names_contract_and_symbol(name, unknown):
    c = zc.get(name)
    if unknown in FKC[name][0]:
        return
    with pytest.raises(ContractError) as info:
        c.cost(**param_sets(name)[0], **{unknown: 1})
    assert str(info.value).startswith(f"{name}: unknown cost symbol {unknown!r}; {name}'s cost takes ")
    with pytest.raises(ContractError, match=f"^{name}: unknown cost symbol {unknown!r}"):
        c.memory(**param_sets(name)[0], **{unknown: 1})


def test_error_texts():
    with pytest.raises(ContractError) as info:
        zc.get("flip").cost(n=24, dtype_size=4)
    assert str(info.value) == "flip: unknown cost symbol 'n'; flip's cost takes outer, dim_size, inner, dtype_size"
    with pytest.raises(ContractError) as info:
        zc.get("roll").cost(outer=2, inner=3, dtype_size=4)
    assert str(info.value) == ("roll: missing cost symbol 'dim_size'; roll's cost takes outer, dim_size, inner, "
                               "dtype_size; given: outer, inner, dtype_size")
    with pytest.raises(ContractError) as info:
        zc.get("cumsum_f16").cost(outer=1, dim_size=2)
    assert str(info.value) == ("cumsum_f16: missing cost symbol 'inner'; cumsum_f16's cost takes outer, dim_size, "
                               "inner (optional: dtype_size); given: outer, dim_size")


@pytest.mark.parametrize("name,key,value,widths", [
    ("flip", "dtype_size", 3, "1, 2, 4, 8"),
    ("roll", "dtype_size", 16, "1, 2, 4, 8"),
    ("contiguize", "dtype_bytes", 0, "1, 2, 4, 8"),
    ("cumsum_f32", "dtype_size", 8, "4"),
    ("cumsum_bf16", "dtype_size", 4, "2"),
    ("masked_fill", "dtype_size", True, "1, 2, 4, 8"),
])
def test_dtype_size_must_be_an_accepted_width(name, key, value, widths):
    p = param_sets(name)[0]
    p[key] = value
    with pytest.raises(ContractError) as info:
        zc.get(name).cost(**p)
    assert str(info.value) == (f"{name}: cost symbol {key} = {value!r} is not the width of a dtype {name} accepts "
                               f"({widths})")


def test_concat_takes_a_list():
    c = zc.get("concat")
    assert c.cost(outer_count=3, input_dim_sizes=(2, 5), inner_count=4, dtype_size=2).bytes_moved == 2 * 3 * 7 * 4 * 2
    with pytest.raises(ContractError, match=r"^concat: cost.bytes_moved .*: input_dim_sizes = 7 is not a list of "
                                            r"numbers$"):
        c.cost(outer_count=3, input_dim_sizes=7, inner_count=4, dtype_size=2)


def test_declared_symbols_are_derivable():
    doc = zc.default_registry().documents[0]
    assert set(doc.cost_symbols) <= set(zc.DERIVED_SYMBOLS)


# ---------------------------------------------------------------- symbols from a call

#: One call per contract: operands, validated params, the symbols zyx derives for it.
CALLS = {
    "contiguize": ([Operand(zd.float16, (3, 5), is_contiguous=False)], {}, {"n": 15, "dtype_bytes": 2}),
    "flip": ([Operand(zd.float32, (2, 3, 4))], {"dims": (1, 2)},
             {"outer": 2, "dim_size": 3, "inner": 4, "dtype_size": 4}),
    "roll": ([Operand(zd.int64, (6, 4))], {"shift": -1, "outer": 1, "dim_size": 24, "inner": 1},
             {"outer": 1, "dim_size": 24, "inner": 1, "dtype_size": 8}),
    "concat": ([Operand(zd.float16, (2, 3, 5)), Operand(zd.float16, (2, 1, 5)), Operand(zd.float16, (2, 4, 5))],
               {"dim": 1}, {"outer_count": 2, "input_dim_sizes": [3, 1, 4], "inner_count": 5, "dtype_size": 2}),
    "write_slice": ([Operand(zd.uint8, (3, 4))], {"dest_shape": (10, 10), "ranges": ((0, 3), (2, 6))},
                    {"source_n": 12, "dtype_size": 1}),
    "write_slice_rotating": ([Operand(zd.bfloat16, (2, 7))], {"dest_shape": (5, 7), "axis": 0, "modulus": 5,
                                                              "position": 4}, {"source_n": 14, "dtype_size": 2}),
    "write_slice_doff": ([Operand(zd.float64, (1, 3))], {"dest_shape": (4, 3), "axis": 0},
                         {"source_n": 3, "dtype_size": 8}),
    "triangular": ([Operand(zd.int64, (2, 3, 4, 5))], {"upper": True, "diagonal": 1},
                   {"batch_count": 6, "rows": 4, "cols": 5, "dtype_size": 8}),
    "masked_fill": ([Operand(zd.float32, (4, 6)), Operand(zd.bool_, (4, 6))], {"fill": 2.0},
                    {"n": 24, "dtype_size": 4}),
    "cumsum_f32": ([Operand(zd.float32, (2, 5, 3))], {"dim": 1},
                   {"outer": 2, "dim_size": 5, "inner": 3, "dtype_size": 4}),
    "cumsum_f64": ([Operand(zd.float64, (7,))], {"dim": 0}, {"outer": 1, "dim_size": 7, "inner": 1, "dtype_size": 8}),
    "cumsum_bf16": ([Operand(zd.bfloat16, (2, 5, 3))], {"dim": 2},
                    {"outer": 10, "dim_size": 3, "inner": 1, "dtype_size": 2}),
    "cumsum_f16": ([Operand(zd.float16, ())], {"dim": 0}, {"outer": 1, "dim_size": 1, "inner": 1, "dtype_size": 2}),
    "cumsum_int": ([Operand(zd.int8, (4, 6))], {"dim": 0}, {"outer": 1, "dim_size": 4, "inner": 6, "dtype_size": 1}),
    "cumprod_int": ([Operand(zd.uint32, (4, 6))], {"dim": 1}, {"outer": 4, "dim_size": 6, "inner": 1, "dtype_size": 4}),
    "cumprod_f32": ([Operand(zd.bfloat16, (3, 2, 5))], {"dim": 1},
                    {"outer": 3, "dim_size": 2, "inner": 5, "dtype_size": 2}),
    "cumprod_f64": ([Operand(zd.float64, (9,))], {"dim": 0}, {"outer": 1, "dim_size": 9, "inner": 1, "dtype_size": 8}),
    "cummax": ([Operand(zd.int16, (2, 7))], {"dim": 1}, {"outer": 2, "dim_size": 7, "inner": 1, "dtype_size": 2}),
    "cummin": ([Operand(zd.float32, ())], {"dim": 0}, {"outer": 1, "dim_size": 1, "inner": 1, "dtype_size": 4}),
    "logcumsumexp_f32": ([Operand(zd.float16, (5, 3))], {"dim": 0},
                         {"outer": 1, "dim_size": 5, "inner": 3, "dtype_size": 2}),
    "logcumsumexp_f64": ([Operand(zd.float64, (2, 3))], {"dim": 1},
                         {"outer": 2, "dim_size": 3, "inner": 1, "dtype_size": 8}),
}


def test_every_contract_has_a_call():
    assert sorted(CALLS) == sorted(FKC)


@pytest.mark.parametrize("name", NAMES)
def test_symbols_for_gives_exactly_the_fkc_symbols(name):
    c = zc.get(name)
    inputs, params, expected = CALLS[name]
    syms = zc.symbols_for(c, inputs, params)
    assert syms == expected
    assert list(syms) == [s for s in c.cost_spec.symbols if s in syms]
    _, bytes_moved, flops, _ = FKC[name]
    assert zc.cost_of_call(c, inputs, params) == zc.Cost(bytes_moved(syms), flops(syms), None)


def test_symbols_for_flip_folds_at_the_first_flipped_axis():
    flip = zc.get("flip")
    x = Operand(zd.uint16, (2, 3, 4))
    assert zc.symbols_for(flip, [x], {"dims": (2, 0)}) == {"outer": 6, "dim_size": 4, "inner": 1, "dtype_size": 2}
    assert zc.symbols_for(flip, [x], {"dims": ()}) == {"outer": 1, "dim_size": 24, "inner": 1, "dtype_size": 2}
    assert zc.cost_of_call(flip, [x], {"dims": (-2,)}).bytes_moved == 2 * 24 * 2


def test_symbols_for_validated_params():
    c = zc.get("cumsum_bf16")
    x = Operand(zd.bfloat16, (2, 5, 3))
    assert zc.cost_of_call(c, [x], zc.validate(c, [x], {"dim": -2})) == zc.Cost(120, 30, None)
    roll = zc.get("roll")
    y = Operand(zd.float32, (6, 4))
    params = zc.validate(roll, [y], {"shift": -1, "outer": 1, "dim_size": 24, "inner": 1})
    assert zc.cost_of_call(roll, [y], params).bytes_moved == 2 * 24 * 4


# ---------------------------------------------------------------- calibration


def test_predicted_seconds_with_a_fit():
    fit = zc.Fit(overhead_s=1e-5, bytes_per_s=1e9, flops_per_s=1e8)
    cost = zc.get("cumsum_f32").cost(fit, outer=1, dim_size=1000, inner=1)
    assert cost.bytes_moved == 8000 and cost.flops == 1000
    assert cost.predicted_s == pytest.approx(1e-5 + 8000 / 1e9 + 1000 / 1e8)
    no_rate = zc.get("flip").cost(zc.Fit(2e-6, 1e10), outer=1, dim_size=1000, inner=1, dtype_size=4)
    assert no_rate.predicted_s == pytest.approx(2e-6 + 8000 / 1e10)


FLIP_1 = {"outer": 1, "dim_size": 1, "inner": 1, "dtype_size": 1}


def test_cost_predicts_only_with_a_fit_passed_in():
    """The spec layer looks up no device calibration (``zyx.contracts.calibrate.cost`` does)."""
    assert zc.get("flip").cost(**FLIP_1).predicted_s is None
    explicit = zc.get("flip").cost(zc.Fit(0.0, 1e3), **FLIP_1)
    assert explicit.predicted_s == pytest.approx(2e-3)


def test_bad_calibration():
    with pytest.raises(ContractError, match="bytes_per_s must be > 0, got 0"):
        zc.get("flip").cost(zc.Fit(0.0, 0), **FLIP_1)
