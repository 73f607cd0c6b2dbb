"""zyx's float32 exp and erf (templates/common/math.mako) against float64 references."""
from __future__ import annotations

import math

import numpy as np
import pytest

import zyx

pytestmark = pytest.mark.needs_device

SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-30, -1e-30, 88.72, 88.73, 89.5, -87.33, -87.4,
                    -100.0, -103.9, -104.5, -150.0, 1.0, -1.0, 0.5], np.float32)


def _ulp_error(got: np.ndarray, x: np.ndarray, fn=np.exp) -> np.ndarray:
    ref = fn(x.astype(np.float64))
    with np.errstate(over="ignore", invalid="ignore"):
        unit = np.maximum(np.spacing(np.abs(ref.astype(np.float32))), np.float32(2.0**-149)).astype(np.float64)
        err = np.abs(got.astype(np.float64) - ref) / unit
    with np.errstate(over="ignore"):
        rounded = ref.astype(np.float32)  # inf where the true value rounds past float32's largest
    err[(got == rounded) | (np.isnan(got) & np.isnan(ref))] = 0.0
    return err


def _inputs() -> np.ndarray:
    sweep = np.linspace(-110.0, 95.0, 200_003, dtype=np.float32)  # odd length: vector tails too
    normal = np.random.default_rng(7).standard_normal(50_001).astype(np.float32) * 10
    return np.concatenate([SPECIAL, sweep, normal])


@pytest.mark.parametrize("layout", ["contiguous", "strided"])
def test_exp_within_one_ulp(layout: str) -> None:
    x = _inputs()
    if layout == "strided":  # every other element of a twice-as-long tensor: scalar loads
        wide = np.zeros(2 * x.size, np.float32)
        wide[::2] = x
        got = zyx.tensor(wide)[::2].exp().numpy()
    else:
        got = zyx.tensor(x).exp().numpy()
    err = _ulp_error(got, x)
    assert err.max() <= 1.01, f"exp error {err.max():.3f} ulp at x = {x[err.argmax()]!r}"
    assert np.array_equal(np.isnan(got), np.isnan(x))
    special = got[: SPECIAL.size]
    assert special[1] == np.inf and special[2] == 0.0 and special[3] == 1.0
    assert 0.0 < special[12] < 1e-38  # exp(-100) is a denormal, not flushed to zero


def test_sigmoid_and_silu_use_it_consistently() -> None:
    x = _inputs()[np.isfinite(_inputs())]
    z = zyx.tensor(x)
    with np.errstate(over="ignore"):
        ref = 1.0 / (1.0 + np.exp(-x.astype(np.float64)))
    # below x = -88.7, exp(-x) overflows and 1 / (1 + inf) = 0, as in PyTorch
    np.testing.assert_allclose(z.sigmoid().numpy(), ref, rtol=3e-7, atol=3e-38)
    np.testing.assert_allclose(z.silu().numpy(), x * ref, rtol=3e-7, atol=4e-36)


ERF_SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-30, -1e-38, 0.99999994, 1.0, -1.0, 3.9, 4.0, -4.5],
                       np.float32)


@pytest.mark.parametrize("layout", ["contiguous", "strided"])
def test_erf_within_one_and_a_quarter_ulp(layout: str) -> None:
    sweep = np.linspace(-6.0, 6.0, 120_007, dtype=np.float32)
    x = np.concatenate([ERF_SPECIAL, sweep])
    z = zyx.tensor(np.repeat(x, 2))[::2] if layout == "strided" else zyx.tensor(x)
    got = z.erf().numpy()
    err = _ulp_error(got, x, np.vectorize(math.erf, otypes=[np.float64]))
    assert err.max() <= 1.25, f"erf error {err.max():.3f} ulp at x = {x[err.argmax()]!r}"
    assert np.isnan(got[0]) and got[1] == 1.0 and got[2] == -1.0 and got[11] == 1.0 and got[12] == -1.0
    assert np.signbit(got[4]) and got[5] > 0
    np.testing.assert_array_equal(got[ERF_SPECIAL.size:][::-1], -got[ERF_SPECIAL.size:])  # odd


def test_gelu_uses_the_same_erf() -> None:
    x = np.linspace(-8.0, 8.0, 10_001, dtype=np.float32)
    ref = 0.5 * x.astype(np.float64) * (1 + np.vectorize(math.erf)(x.astype(np.float64) / math.sqrt(2)))
    # far left, 1 + erf(x) cancels (as in PyTorch's float32 gelu): absolute error about |x| * 2^-24
    np.testing.assert_allclose(zyx.tensor(x).gelu().numpy(), ref, rtol=4e-7, atol=5e-7)


LOG_SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, -1.0, 1e-45, 1e-40, 1.17549435e-38, 1.0, 2.0, 0.5,
                        3.4e38], np.float32)


@pytest.mark.parametrize("fn", ["log", "log2"])
@pytest.mark.parametrize("layout", ["contiguous", "strided"])
def test_log_within_one_ulp(layout: str, fn: str) -> None:
    sweep = np.exp(np.linspace(-103.0, 88.0, 200_003)).astype(np.float32)  # denormals to near the largest
    x = np.concatenate([LOG_SPECIAL, sweep, np.random.default_rng(3).random(50_001).astype(np.float32)])
    z = zyx.tensor(np.repeat(x, 2))[::2] if layout == "strided" else zyx.tensor(x)
    got = getattr(z, fn)().numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        err = _ulp_error(got, x, getattr(np, fn))
    assert err.max() <= 1.0, f"{fn} error {err.max():.3f} ulp at x = {x[err.argmax()]!r}"
    special = got[: LOG_SPECIAL.size]
    assert np.isnan(special[[0, 2, 5]]).all() and special[1] == np.inf
    assert special[3] == -np.inf and special[4] == -np.inf and special[9] == 0.0
    if fn == "log2":  # exact at powers of two
        assert special[10] == 1.0 and special[11] == -1.0 and special[6] == -149.0


TRIG_SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-30, -1e-38, 65535.9, 65536.0, 1e10, -3e38],
                        np.float32)


@pytest.mark.parametrize("fn", ["sin", "cos"])
@pytest.mark.parametrize("layout", ["contiguous", "strided"])
def test_sin_cos_within_one_and_a_half_ulp(layout: str, fn: str) -> None:
    sweep = np.linspace(-70000.0, 70000.0, 200_003, dtype=np.float32)  # past the fast path's 65536
    small = np.random.default_rng(11).standard_normal(50_001).astype(np.float32) * 10
    x = np.concatenate([TRIG_SPECIAL, sweep, small])
    z = zyx.tensor(np.repeat(x, 2))[::2] if layout == "strided" else zyx.tensor(x)
    got = getattr(z, fn)().numpy()
    with np.errstate(invalid="ignore"):
        err = _ulp_error(got, x, getattr(np, fn))
    fast = np.abs(x) < 65536
    assert err[fast].max() <= 1.5, f"{fn} error {err[fast].max():.3f} ulp at x = {x[fast][err[fast].argmax()]!r}"
    assert err[~fast & np.isfinite(x)].max() <= 2.0  # the device's built-in function beyond
    special = got[: TRIG_SPECIAL.size]
    assert np.isnan(special[:3]).all()  # NaN and +-inf: NaN, even beside finite lanes of a vector
    if fn == "sin":
        assert special[3] == 0.0 and np.signbit(special[4]) and special[5] == np.float32(1e-30)
    else:
        assert special[3] == 1.0 and special[4] == 1.0 and special[5] == 1.0


@pytest.mark.parametrize("fn", ["sin", "cos", "tan", "tanh", "exp2", "sqrt", "sigmoid", "erf", "exp", "log"])
def test_an_inf_or_nan_lane_spoils_no_other_lane(fn: str) -> None:
    """PoCL's vector sin/cos/tan returned wrong values in every lane of a vector holding an inf or NaN."""
    x = np.tile(np.array([np.inf, 0.5, 1e-30, 2.0, -np.inf, np.nan, 3.0, 0.25], np.float32), 8)
    got = getattr(zyx.tensor(x), fn)().numpy()
    with np.errstate(all="ignore"):
        special = {"sigmoid": lambda v: 1 / (1 + np.exp(-v)), "erf": np.vectorize(math.erf)}
        ref = (special[fn] if fn in special else getattr(np, fn))(x.astype(np.float64))
    np.testing.assert_allclose(got, ref, rtol=2e-6, atol=1e-37, equal_nan=True)
