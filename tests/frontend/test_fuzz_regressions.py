"""Minimal regressions for discrepancies against PyTorch found by differential fuzzing.

Each expected value is what PyTorch CPU (and, where it applies, NumPy / Python) gives.
"""
from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

import zyx

pytestmark = pytest.mark.needs_device


@pytest.mark.parametrize("fn", ["sin", "cos", "tan"])
def test_float32_trig_small_lane_next_to_huge_lane(fn):
    # A lane with |x| >= ~1e8 in the same vector sends the whole vector to PoCL's built-in,
    # which spoils the small lanes: sin(1e-3) came back as 0.0079999, cos(1e-3) as 0.999968.
    x = np.array([1e-3, 1e10], dtype=np.float32)
    got = getattr(zyx.tensor(x), fn)().numpy().astype(np.float64)
    expected = np.array([getattr(math, fn)(float(v)) for v in x])
    np.testing.assert_allclose(got, expected, rtol=1e-6)


@pytest.mark.parametrize("dt", [ml_dtypes.bfloat16, np.float16])
def test_16bit_compare_with_python_float_rounds_scalar_to_dtype(dt):
    # PyTorch: the Python scalar takes the tensor's dtype, so bf16(0.1) == 0.1 is True.
    x = zyx.tensor(np.array([0.1, 1.0], dtype=dt))
    assert (x == 0.1).numpy().tolist() == [True, False]


def test_bfloat16_add_python_float_matches_torch():
    # torch: x + 0.1 == round_bf16(x + bf16(0.1)) = -0.02880859375; zyx adds float32 0.1 -> -0.0289306640625.
    x = zyx.tensor(np.array([-0.12890625], dtype=ml_dtypes.bfloat16))
    assert float((x + 0.1).numpy()[0]) == -0.02880859375


def test_bfloat16_matmul_does_not_round_products():
    # PyTorch accumulates the exact products in float32 and rounds once: 3 * 1.0625 * 1.0703125
    # = 3.41162109375 -> 3.40625. Rounding every product to bfloat16 first gives 3.421875.
    a = zyx.tensor(np.full((1, 3), 1.0625, dtype=ml_dtypes.bfloat16))
    b = zyx.tensor(np.full((3, 1), 1.0703125, dtype=ml_dtypes.bfloat16))
    assert float((a @ b).numpy()[0, 0]) == 3.40625


def test_float_floor_divide_of_infinity_is_nan():
    # torch, NumPy and Python all give nan for inf // finite.
    x = zyx.tensor(np.array([np.inf, -np.inf], dtype=np.float32))
    assert np.isnan((x // 2.0).numpy()).all()


def test_sum_of_empty_padded_then_sliced_view():
    # An empty view (0 rows) of a padded tensor, sliced on the padded axis: the reduction
    # raised a raw ValueError("mod by a non-positive constant 0") from the IR builder.
    x = zyx.tensor(np.zeros((0, 3), dtype=np.float32)).pad([1, 0])[:, 1:]
    assert x.shape == (0, 3)
    assert float(x.sum().numpy()) == 0.0


def test_float32_tanh_saturates_to_one():
    # tanh(10) = 1 - 4.1e-9 rounds to 1.0 in float32 (PyTorch: 1.0); zyx gave 0.99999994.
    x = zyx.tensor(np.array([-10.0, 10.0, -100.0], dtype=np.float32))
    assert x.tanh().numpy().tolist() == [-1.0, 1.0, -1.0]


def test_gelu_tanh_vanishes_for_large_negative_inputs():
    # With tanh stuck at -0.99999994, 0.5*x*(1+tanh(.)) grows like -3e-8*|x|:
    # gelu(-1e5, approximate='tanh') came back as -0.003 (PyTorch: -0.0).
    x = zyx.tensor(np.array([-10.0, -1e3, -1e5], dtype=np.float32))
    got = x.gelu(approximate="tanh").numpy()
    assert np.all(np.abs(got) < 1e-20), got


def test_relu_keeps_the_sign_of_negative_zero():
    # Low severity: torch.relu(-0.0) is -0.0 (clamp_min keeps x when not below 0); zyx gives +0.0.
    x = zyx.tensor(np.array([-0.0], dtype=np.float32))
    assert np.signbit(x.relu().numpy()[0])


def test_pad_of_a_zero_pad_keeps_the_inner_zeros():
    # found by tests/fuzz (seed 6257): the outer pad's value replaced the inner pad's 0s ([2 2 2 5 6 2 2 2])
    x = zyx.tensor(np.array([5, 6], dtype=np.int32))
    assert zyx.nn.functional.pad(x.pad([1, 1]), (2, 2), value=2).numpy().tolist() == [2, 2, 0, 5, 6, 0, 2, 2]
    y = zyx.tensor(np.array([[5.0]], dtype=np.float32)).pad([1, 0, 0, 1]).pad([0, 1], value=-1.0)
    assert y.numpy().tolist() == [[0.0, 5.0, -1.0], [0.0, 0.0, -1.0]]
