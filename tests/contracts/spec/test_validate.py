"""Accept-clause enforcement: one test (at least) per constraint the shipped document states."""
from __future__ import annotations

import math
import re
from importlib import resources

import numpy as np
import pytest

import zyx.contracts as zc
from zyx import dtype as zd
from zyx.contracts.spec.model import Operand
from zyx.errors import ContractError


def op(dtype, *shape, **facts) -> Operand:
    return Operand(dtype, tuple(shape), **facts)


def fails(name: str, inputs, params, message: str, op_kind=None) -> None:
    """validate() must raise ContractError with exactly ``name: message``."""
    with pytest.raises(ContractError) as info:
        zc.validate(zc.get(name), inputs, params, op_kind=op_kind)
    assert str(info.value) == f"{name}: {message}"


def ok(name: str, inputs, params, op_kind=None) -> dict:
    return zc.validate(zc.get(name), inputs, params, op_kind=op_kind)


F32 = zd.float32
DOC_TEXT = resources.files("zyx.contracts").joinpath("docs", "opencl_shape_ops.md").read_text(encoding="utf-8")

# ---------------------------------------------------------------- generic: dtype, rank, count, params


def test_dtype_not_accepted():
    fails("cumsum_f32", [op(zd.int32, 4)], {"dim": 0},
          "input dtype int32 is not accepted; accepted: float32")
    fails("cumsum_bf16", [op(zd.float16, 4)], {"dim": 0},
          "input dtype float16 is not accepted; accepted: bfloat16")


@pytest.mark.parametrize("dtype", zd.ALL_DTYPES, ids=lambda d: d.name)
def test_byte_kernels_take_every_dtype(dtype):
    assert ok("flip", [op(dtype, 2, 3)], {"dims": (0,)}) == {"dims": (0,)}
    assert ok("contiguize", [op(dtype, 2, 3, is_contiguous=False, has_negative_strides=True)], {}) == {}


def test_rank_bounds():
    fails("triangular", [op(F32, 5)], {"upper": True}, "input rank 1 (shape (5,)) is outside 2..=8")
    fails("triangular", [op(F32, *[1] * 9)], {"upper": True},
          "input rank 9 (shape (1, 1, 1, 1, 1, 1, 1, 1, 1)) is outside 2..=8")
    fails("write_slice", [op(F32)], {"dest_shape": (), "ranges": ()}, "source rank 0 (shape ()) is outside 1..=8")


def test_input_counts():
    fails("concat", [], {"dim": 0}, "expected at least 1 input(s) (inputs), got 0")
    fails("masked_fill", [op(F32, 3)], {"fill": 0}, "expected 2 input(s) (input, mask), got 1")
    fails("flip", [op(F32, 3), op(F32, 3)], {"dims": ()}, "expected 1 input(s) (input), got 2")


def test_missing_and_unknown_params():
    fails("write_slice", [op(F32, 2)], {"dest_shape": (4,)},
          "missing op param 'ranges' (tuple[tuple[int, int], ...]; len == rank; 0 <= start <= end <= dest_shape[i])")
    fails("flip", [op(F32, 2)], {"dims": (0,), "dim": 0}, "unknown op param 'dim'; expected: dims")
    fails("contiguize", [op(F32, 2)], {"x": 1}, "unknown op param 'x'; expected: none")


def test_operand_must_look_like_a_tensor():
    with pytest.raises(ContractError, match=r"^flip: input = 3 is not a tensor operand \(needs dtype and shape\)$"):
        zc.validate(zc.get("flip"), [3], {"dims": ()})


# ---------------------------------------------------------------- layout


@pytest.mark.parametrize("facts,problem", [
    ({"is_contiguous": False}, "is not contiguous"),
    ({"is_broadcast": True}, "is broadcast"),
    ({"has_offset": True}, "has a start offset"),
    ({"has_negative_strides": True}, "has negative strides"),
])
def test_requires_contiguous_means_contiguize_first(facts, problem):
    flip = zc.get("flip")
    x = op(F32, 4, 4, **facts)
    assert zc.needs_contiguize(flip, x)
    assert any(problem in p for p in zc.layout_violations(flip.inputs[0], x))
    assert ok("flip", [x], {"dims": (1,)}) == {"dims": (1,)}  # not an error: the caller contiguizes


def test_contiguous_operands_need_nothing():
    for c in zc.all_contracts():
        assert not zc.needs_contiguize(c, op(c.dtypes[0], 2, 2)), c.name


def test_contiguize_accepts_every_layout():
    c = zc.get("contiguize")
    x = op(F32, 3, 3, is_contiguous=False, is_broadcast=True, has_offset=True, has_negative_strides=True)
    assert not zc.needs_contiguize(c, x)
    assert ok("contiguize", [x], {}) == {}


def test_mask_layout_is_checked_per_operand():
    c = zc.get("masked_fill")
    data, mask = op(F32, 4, 4), op(zd.bool_, 4, 4, is_broadcast=True)
    assert not zc.needs_contiguize(c, data, 0)
    assert zc.needs_contiguize(c, mask, 1)


def test_layout_rejected_when_strategy_is_not_requires_contiguous():
    text = DOC_TEXT.replace("start_offset: accepted, reverse_strides: accepted }",
                        "start_offset: accepted, reverse_strides: rejected }", 1)
    contiguize = zc.parse_document(text, "x.md").contracts[0]
    x = op(F32, 3, has_negative_strides=True)
    assert not zc.needs_contiguize(contiguize, x)
    with pytest.raises(ContractError) as info:
        zc.validate(contiguize, [x], {})
    assert str(info.value) == ("contiguize: input has negative strides (layout.reverse_strides: rejected) and the "
                               "kernel's strategy is handles_strided; pass a layout it accepts")


# ---------------------------------------------------------------- flip / roll / concat


def test_flip_dims():
    assert ok("flip", [op(F32, 2, 3, 4)], {"dims": [-1, 0]}) == {"dims": (0, 2)}
    assert ok("flip", [op(F32, 2, 3)], {"dims": 1}) == {"dims": (1,)}
    assert ok("flip", [op(F32, 2, 3)], {"dims": ()}) == {"dims": ()}
    fails("flip", [op(F32, 2, 3)], {"dims": (0, 2)},
          "dims[1] = 2 is out of range for rank 2; expected -2 <= dims[1] < 2")
    fails("flip", [op(F32, 2, 3)], {"dims": (1, -1)}, "dims = (1, -1) names an axis twice")
    fails("flip", [op(F32)], {"dims": (0,)}, "dims[0] = 0 names an axis but the tensor has rank 0 (no axes)")
    fails("flip", [op(F32, 2)], {"dims": (0.0,)}, "dims[0] = 0.0 is not an int")
    fails("flip", [op(F32, 2)], {"dims": "0"}, "dims = '0' is not a tuple of ints")


def test_roll_params():
    x = op(F32, 2, 3, 4)
    assert ok("roll", [x], {"shift": -7, "outer": 2, "dim_size": 3, "inner": 4}) == {
        "shift": -7, "outer": 2, "dim_size": 3, "inner": 4}
    assert ok("roll", [op(F32, 0)], {"shift": 1, "outer": 1, "dim_size": 0, "inner": 1})["dim_size"] == 0
    fails("roll", [x], {"shift": 1, "outer": 2, "dim_size": 4, "inner": 4},
          "outer * dim_size * inner = 2 * 4 * 4 = 32 but input has 24 elements (shape (2, 3, 4))")
    fails("roll", [x], {"shift": 1, "outer": -2, "dim_size": -3, "inner": 4}, "outer = -2 is negative; expected >= 0")
    fails("roll", [x], {"shift": 1.5, "outer": 2, "dim_size": 3, "inner": 4}, "shift = 1.5 is not an int")
    fails("roll", [x], {"shift": True, "outer": 2, "dim_size": 3, "inner": 4}, "shift = True is not an int")
    assert ok("roll", [x], {"shift": np.int64(3), "outer": 2, "dim_size": 3, "inner": 4})["shift"] == 3


def test_concat_dim_and_shapes():
    a, b = op(F32, 2, 3), op(F32, 5, 3)
    assert ok("concat", [a, b], {"dim": 0}) == {"dim": 0}
    assert ok("concat", [a, op(F32, 2, 7)], {"dim": -1}) == {"dim": 1}
    assert ok("concat", [a], {"dim": 1}) == {"dim": 1}
    fails("concat", [a, b], {"dim": 2}, "dim = 2 is out of range for rank 2; expected -2 <= dim < 2")
    fails("concat", [a, b], {"dim": 1},
          "inputs[1].shape[0] = 5 differs from inputs[0].shape[0] = 2; inputs must agree on every axis except dim = 1")
    fails("concat", [a, op(zd.float16, 2, 3)], {"dim": 0},
          "inputs[1] dtype float16 differs from inputs[0] dtype float32; expected one dtype")
    fails("concat", [a, op(F32, 2, 3, 1)], {"dim": 0},
          "inputs[1] has rank 3 (shape (2, 3, 1)) but inputs[0] has rank 2")
    fails("concat", [op(F32), op(F32)], {"dim": 0},
          "inputs[0] has rank 0; a tensor needs at least one axis to be joined")


# ---------------------------------------------------------------- write_slice


def test_write_slice_ok():
    got = ok("write_slice", [op(F32, 2, 4)], {"dest_shape": [6, 10], "ranges": [[1, 3], [5, 9]], "dest_dtype": F32})
    assert got == {"dest_shape": (6, 10), "ranges": ((1, 3), (5, 9)), "dest_dtype": F32}
    assert ok("write_slice", [op(F32, 0, 4)],
              {"dest_shape": (6, 10), "ranges": ((2, 2), (0, 4))})["ranges"][0] == (2, 2)


def test_write_slice_range_exceeds_dest():
    fails("write_slice", [op(F32, 2, 7)], {"dest_shape": (6, 10), "ranges": ((0, 2), (5, 12))},
          "ranges[1] = (5, 12) exceeds dest_shape[1] = 10")


def test_write_slice_range_order_and_sign():
    fails("write_slice", [op(F32, 2, 7)], {"dest_shape": (6, 10), "ranges": ((3, 1), (0, 7))},
          "ranges[0] = (3, 1) has start > end; expected 0 <= start <= end")
    fails("write_slice", [op(F32, 2, 7)], {"dest_shape": (6, 10), "ranges": ((-1, 1), (0, 7))},
          "ranges[0] = (-1, 1) starts below 0; expected 0 <= start <= end")
    fails("write_slice", [op(F32, 2, 7)], {"dest_shape": (6, 10), "ranges": ((0, 2), (0, 7, 1))},
          "ranges[1] = (0, 7, 1) is not a (start, end) pair")


def test_write_slice_ranges_len_equals_rank():
    fails("write_slice", [op(F32, 2, 7)], {"dest_shape": (6, 10), "ranges": ((0, 2),)},
          "ranges has 1 entries but dest has rank 2; expected one (start, end) per axis")


def test_write_slice_source_matches_box():
    fails("write_slice", [op(F32, 2, 4)], {"dest_shape": (6, 10), "ranges": ((0, 2), (2, 5))},
          "source.shape[1] = 4 but ranges[1] = (2, 5) spans 3")


def test_write_slice_dest_shape():
    fails("write_slice", [op(F32, 2, 4)], {"dest_shape": (6, 10, 3), "ranges": ((0, 2), (0, 4), (0, 1))},
          "dest_shape = (6, 10, 3) has 3 axes but source has rank 2 (shape (2, 4)); expected equal ranks")
    fails("write_slice", [op(F32, 2)], {"dest_shape": (-6,), "ranges": ((0, 2),)},
          "dest_shape[0] = -6 is negative; expected >= 0")
    fails("write_slice", [op(F32, 2)], {"dest_shape": 6, "ranges": ((0, 2),)},
          "dest_shape = 6 is not a non-empty tuple of ints")


def test_write_slice_dest_dtype():
    fails("write_slice", [op(F32, 2)], {"dest_shape": (4,), "ranges": ((0, 2),), "dest_dtype": zd.float64},
          "dest_dtype = float64 differs from source dtype float32; expected the same dtype")
    assert ok("write_slice", [op(F32, 2)], {"dest_shape": (4,), "ranges": ((0, 2),), "dest_dtype": "float32"})[
        "dest_dtype"] is F32


# ---------------------------------------------------------------- write_slice_rotating


def rot(source, **params):
    base = {"dest_shape": (8, 2, 3), "axis": 0, "position": 5}
    base.update(params)
    return [source], base


def test_rotating_ok_and_defaults():
    got = ok("write_slice_rotating", *rot(op(F32, 3, 2, 3)))
    assert got == {"dest_shape": (8, 2, 3), "axis": 0, "modulus": 8, "position": 5, "dest_dtype": None}
    got = ok("write_slice_rotating", *rot(op(F32, 8, 2, 1), axis=-1, dest_shape=(8, 2, 6), modulus=4, position=-3))
    assert (got["axis"], got["modulus"], got["position"]) == (2, 4, -3)


def test_rotating_modulus_bounds():
    fails("write_slice_rotating", *rot(op(F32, 3, 2, 3), modulus=0),
          "modulus = 0 is outside 0 < modulus <= dest_shape[0] = 8")
    fails("write_slice_rotating", *rot(op(F32, 3, 2, 3), modulus=9),
          "modulus = 9 is outside 0 < modulus <= dest_shape[0] = 8")
    fails("write_slice_rotating", *rot(op(F32, 0, 2, 3), dest_shape=(0, 2, 3)),
          "modulus = 0 is outside 0 < modulus <= dest_shape[0] = 0")


def test_rotating_axis_in_range():
    fails("write_slice_rotating", *rot(op(F32, 3, 2, 3), axis=3),
          "axis = 3 is out of range for dest rank 3; expected -3 <= axis < 3")


def test_rotating_slab_at_most_modulus():
    fails("write_slice_rotating", *rot(op(F32, 5, 2, 3), modulus=4),
          "source.shape[0] = 5 rows exceed modulus = 4")


def test_rotating_other_axes_match_dest():
    fails("write_slice_rotating", *rot(op(F32, 3, 2, 2)),
          "source.shape[2] = 2 differs from dest_shape[2] = 3; only axis 0 may differ")


def test_rotating_position():
    dev = op(zd.uint32)
    assert ok("write_slice_rotating", *rot(op(F32, 3, 2, 3), position=dev))["position"] is dev
    assert ok("write_slice_rotating", *rot(op(F32, 3, 2, 3), position=op(zd.int32, 1)))["position"].shape == (1,)
    fails("write_slice_rotating", *rot(op(F32, 3, 2, 3), position=op(zd.int64)),
          "position dtype int64 is not accepted; expected uint32/int32")
    fails("write_slice_rotating", *rot(op(F32, 3, 2, 3), position=op(zd.uint32, 2)),
          "position has shape (2,); expected exactly one element")
    fails("write_slice_rotating", *rot(op(F32, 3, 2, 3), position=True),
          "position = True is not a host int or a one-element uint32/int32 tensor")
    fails("write_slice_rotating", *rot(op(F32, 3, 2, 3), position=None),
          "missing op param 'position' (int | tensor; host int, or a device tensor with exactly one element)")


# ---------------------------------------------------------------- write_slice_doff


def doff(source, **params):
    base = {"dest_shape": (16, 4), "axis": 0, "offset": op(zd.int64)}
    base.update(params)
    return [source], base


def test_doff_ok_and_default_ranges():
    got = ok("write_slice_doff", *doff(op(F32, 3, 4)))
    assert got["ranges"] == ((0, 3), (0, 4)) and got["axis"] == 0
    got = ok("write_slice_doff", *doff(op(F32, 3, 2), ranges=((100, 103), (1, 3))))
    assert got["ranges"] == ((100, 103), (1, 3))  # the start on axis is read from offset at run time


def test_doff_axis_in_range():
    fails("write_slice_doff", *doff(op(F32, 3, 4), axis=-3),
          "axis = -3 is out of range for dest rank 2; expected -2 <= axis < 2")


def test_doff_axis_width_at_most_dest():
    fails("write_slice_doff", *doff(op(F32, 17, 4)),
          "ranges[0] = (0, 17) is 17 wide on axis 0, wider than dest_shape[0] = 16")


def test_doff_off_axis_ranges_within_dest():
    fails("write_slice_doff", *doff(op(F32, 3, 2), ranges=((0, 3), (3, 5))),
          "ranges[1] = (3, 5) exceeds dest_shape[1] = 4")
    fails("write_slice_doff", *doff(op(F32, 3, 2), ranges=((0, 3), (0, 3))),
          "source.shape[1] = 2 but ranges[1] = (0, 3) spans 3")


def test_doff_offset_is_one_int64_element():
    fails("write_slice_doff", *doff(op(F32, 3, 4), offset=5),
          "offset = 5 is not a one-element int64 tensor")
    fails("write_slice_doff", *doff(op(F32, 3, 4), offset=op(zd.int32)),
          "offset dtype int32 is not accepted; expected int64")
    fails("write_slice_doff", *doff(op(F32, 3, 4), offset=op(zd.int64, 1, 2)),
          "offset has shape (1, 2); expected exactly one element")


# ---------------------------------------------------------------- triangular


def test_triangular_params_and_arms():
    x = op(F32, 3, 4, 5)
    assert ok("triangular", [x], {"upper": True}) == {"upper": True, "diagonal": 0}
    assert ok("triangular", [x], {"diagonal": -2}, op_kind="Tril") == {"upper": False, "diagonal": -2}
    assert ok("triangular", [x], {"upper": True, "diagonal": 1}, op_kind="Triu")["upper"] is True
    fails("triangular", [x], {"upper": True}, "upper = True contradicts op kind Tril (upper = False)", op_kind="Tril")
    fails("triangular", [x], {}, "op kind 'CumSum' is not served; serves ['Triangular', 'Triu', 'Tril']",
          op_kind="CumSum")
    fails("triangular", [x], {"upper": 1}, "upper = 1 is not a bool; expected True (triu) or False (tril)")
    fails("triangular", [x], {"upper": False, "diagonal": 0.5}, "diagonal = 0.5 is not an int")
    fails("triangular", [x], {}, "missing op param 'upper' (bool; true: triu keeps j >= i + diagonal; false: tril "
                                 "keeps j <= i + diagonal)")


# ---------------------------------------------------------------- masked_fill


def test_masked_fill_mask_dtype_and_shape():
    x = op(F32, 2, 3)
    assert ok("masked_fill", [x, op(zd.bool_, 2, 3)], {"fill": -1.5}) == {"fill": -1.5}
    fails("masked_fill", [x, op(zd.uint8, 2, 3)], {"fill": 0}, "mask dtype uint8 is not accepted; accepted: bool")
    fails("masked_fill", [x, op(zd.bool_, 3)], {"fill": 0},
          "mask shape (3,) differs from input shape (2, 3); broadcast the mask to the input's shape first")


@pytest.mark.parametrize("dtype,fill", [
    (zd.int8, -128), (zd.uint8, 255), (zd.uint64, 2 ** 64 - 1), (zd.int32, 2.9), (zd.bool_, 7),
    (zd.float16, 65504.0), (zd.float32, math.inf), (zd.float8_e5m2, -math.inf), (zd.bfloat16, math.nan),
    (zd.float8_e4m3, 448), (zd.float64, True), (zd.int16, np.int16(3)), (zd.float32, np.float32(0.25)),
])
def test_masked_fill_representable_fills(dtype, fill):
    got = ok("masked_fill", [op(dtype, 4), op(zd.bool_, 4)], {"fill": fill})["fill"]
    assert got == fill or (math.isnan(got) and math.isnan(fill))


@pytest.mark.parametrize("dtype,fill,message", [
    (zd.int8, 128, "fill = 128 is outside the int8 range [-128, 127]"),
    (zd.uint8, -1, "fill = -1 is outside the uint8 range [0, 255]"),
    (zd.int32, math.nan, "fill = nan cannot be stored in int32; expected a finite value"),
    (zd.int64, math.inf, "fill = inf cannot be stored in int64; expected a finite value"),
    (zd.float16, 70000.0, "fill = 70000.0 overflows float16 (largest finite value 65504.0)"),
    (zd.float8_e4m3, 500, "fill = 500 overflows float8_e4m3 (largest finite value 448.0)"),
    (zd.float8_e4m3, math.inf, "fill = inf cannot be stored in float8_e4m3, which has no infinity"),
    (zd.float32, 10 ** 400, f"fill = {10 ** 400} overflows float32 (largest finite value 3.4028234663852886e+38)"),
    (zd.float32, "1", "fill = '1' is not a bool, int or float scalar"),
    (zd.float32, None, "missing op param 'fill' (bool | int | float; representable in the input dtype)"),
])
def test_masked_fill_unrepresentable_fills(dtype, fill, message):
    fails("masked_fill", [op(dtype, 4), op(zd.bool_, 4)], {"fill": fill}, message)


# ---------------------------------------------------------------- cumsum


@pytest.mark.parametrize("name,dtype", [("cumsum_f32", zd.float32), ("cumsum_f64", zd.float64),
                                        ("cumsum_bf16", zd.bfloat16), ("cumsum_f16", zd.float16)])
def test_cumsum_dim(name, dtype):
    assert ok(name, [op(dtype, 2, 3, 4)], {"dim": -1}) == {"dim": 2}
    assert ok(name, [op(dtype)], {"dim": 0}) == {"dim": 0}
    assert ok(name, [op(dtype)], {"dim": -1}) == {"dim": 0}
    fails(name, [op(dtype, 2, 3)], {"dim": 2}, "dim = 2 is out of range for rank 2; expected -2 <= dim < 2")
    fails(name, [op(dtype)], {"dim": 1}, "dim = 1 is out of range for rank 1; expected -1 <= dim < 1")
    fails(name, [op(dtype, 2)], {}, "missing op param 'dim' (int; -rank <= dim < rank (rank 0 counts as 1))")


# ---------------------------------------------------------------- the check registry


def test_every_message_names_the_contract():
    # A sample from each kernel's error path starts with "<kernel>: ".
    for c in zc.all_contracts():
        with pytest.raises(ContractError) as info:
            zc.validate(c, [op(c.dtypes[0], 2, 2)] * 3, {"bogus": 1})
        assert re.match(rf"^{c.name}: ", str(info.value))


def test_missing_check_is_reported():
    text = DOC_TEXT.replace("      dims: {", "      other: { kind: int }\n      dims: {", 1)
    flip = next(c for c in zc.parse_document(text, "x.md").contracts if c.name == "flip")
    assert zc.missing_checks(flip) == ["op_params.other"]
    with pytest.raises(ContractError, match=r"^flip: op param 'other' has no check registered"):
        zc.validate(flip, [op(F32, 2)], {"other": 1, "dims": ()})
