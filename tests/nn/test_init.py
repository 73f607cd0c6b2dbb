"""zyx.nn.init: fan computations, gains, the distributions' statistics and bounds, in-place
writes that keep the tensor a leaf, and reproducibility under zyx.manual_seed."""
from __future__ import annotations

import math

import numpy as np
import pytest

import zyx
from zyx import nn
from zyx.nn import init

pytestmark = pytest.mark.needs_device


def test_calculate_gain():
    assert init.calculate_gain("linear") == 1 and init.calculate_gain("sigmoid") == 1
    assert init.calculate_gain("relu") == pytest.approx(math.sqrt(2))
    assert init.calculate_gain("tanh") == pytest.approx(5 / 3)
    assert init.calculate_gain("leaky_relu") == pytest.approx(math.sqrt(2 / (1 + 0.01 ** 2)))
    assert init.calculate_gain("leaky_relu", math.sqrt(5)) == pytest.approx(math.sqrt(1 / 3))
    assert init.calculate_gain("selu") == pytest.approx(0.75)
    with pytest.raises(ValueError):
        init.calculate_gain("swish")


@pytest.mark.parametrize("shape,fan_in,fan_out", [((30, 20), 20, 30), ((8, 4, 3, 3), 36, 72), ((6, 5, 7), 35, 42)])
def test_fans(shape, fan_in, fan_out):
    t = zyx.zeros(*shape)
    assert init._calculate_fan_in_and_fan_out(t) == (fan_in, fan_out)
    b = math.sqrt(6 / (fan_in + fan_out))
    assert np.abs(init.xavier_uniform_(t).numpy()).max() <= b
    b = math.sqrt(2) * math.sqrt(3 / fan_out)
    assert np.abs(init.kaiming_uniform_(t, mode="fan_out", nonlinearity="relu").numpy()).max() <= b
    with pytest.raises(zyx.ShapeError):
        init.xavier_uniform_(zyx.zeros(5))


def _stats(t):
    a = t.numpy().astype(np.float64)
    return a.mean(), a.std(), a.min(), a.max()


N = (200, 250)  # 50k samples: mean within ~4/sqrt(n) std


def test_uniform_normal_constant():
    mean, std, lo, hi = _stats(init.uniform_(zyx.zeros(*N), -2.0, 3.0))
    assert lo >= -2 and hi < 3 and abs(mean - 0.5) < 0.05 and abs(std - 5 / math.sqrt(12)) < 0.03
    mean, std, _, _ = _stats(init.normal_(zyx.zeros(*N), 1.5, 0.5))
    assert abs(mean - 1.5) < 0.01 and abs(std - 0.5) < 0.01
    np.testing.assert_array_equal(init.constant_(zyx.zeros(3), 0.25).numpy(), np.full(3, 0.25, np.float32))
    np.testing.assert_array_equal(init.ones_(zyx.zeros(3)).numpy(), np.ones(3, np.float32))
    np.testing.assert_array_equal(init.zeros_(zyx.ones(3)).numpy(), np.zeros(3, np.float32))


def test_xavier_kaiming_statistics():
    fan_in, fan_out = N[1], N[0]
    _, std, _, _ = _stats(init.xavier_normal_(zyx.zeros(*N), gain=2.0))
    assert abs(std - 2.0 * math.sqrt(2 / (fan_in + fan_out))) < 0.01 * std + 1e-4
    _, std, _, _ = _stats(init.xavier_uniform_(zyx.zeros(*N)))
    assert abs(std - math.sqrt(2 / (fan_in + fan_out))) < 0.02 * std
    _, std, _, _ = _stats(init.kaiming_normal_(zyx.zeros(*N), nonlinearity="relu"))
    assert abs(std - math.sqrt(2 / fan_in)) < 0.02 * std
    _, std, lo, hi = _stats(init.kaiming_uniform_(zyx.zeros(*N), a=math.sqrt(5)))
    bound = 1 / math.sqrt(fan_in)  # PyTorch's Linear default
    assert -bound <= lo and hi <= bound and abs(std - bound / math.sqrt(3)) < 0.02 * std


def test_trunc_normal():
    t = init.trunc_normal_(zyx.zeros(*N), mean=0.5, std=2.0, a=-1.0, b=3.0)
    a = t.numpy().astype(np.float64)
    assert a.min() >= -1 and a.max() <= 3
    torch = pytest.importorskip("torch")
    ref = torch.nn.init.trunc_normal_(torch.empty(400000, dtype=torch.float64), 0.5, 2.0, -1.0, 3.0).numpy()
    assert abs(a.mean() - ref.mean()) < 0.02 and abs(a.std() - ref.std()) < 0.02
    # the standard case: N(0, 1) cut at +-2 has std 0.8796
    _, std, lo, hi = _stats(init.trunc_normal_(zyx.zeros(*N)))
    assert lo >= -2 and hi <= 2 and abs(std - 0.8796) < 0.01


def test_erfinv_accuracy():
    torch = pytest.importorskip("torch")
    x = np.linspace(-0.999999, 0.999999, 2001, dtype=np.float32)
    np.testing.assert_allclose(init._erfinv(zyx.tensor(x)).numpy(), torch.erfinv(torch.tensor(x)).numpy(),
                               rtol=2e-6, atol=2e-6)


def test_in_place_keeps_leaf_and_seed_reproducible():
    p = nn.Parameter(zyx.zeros(4, 3))
    zyx.manual_seed(7)
    assert init.kaiming_uniform_(p) is p
    first = p.numpy().copy()
    assert p.requires_grad and p.is_leaf and p.grad_fn is None
    zyx.manual_seed(7)
    init.kaiming_uniform_(p)
    np.testing.assert_array_equal(p.numpy(), first)
    zyx.manual_seed(7)
    a = nn.Linear(6, 5).weight.numpy()
    zyx.manual_seed(7)
    np.testing.assert_array_equal(nn.Linear(6, 5).weight.numpy(), a)


@pytest.mark.parametrize("dtype", ["float64", "float16", "bfloat16"])
def test_dtypes(dtype):
    t = init.normal_(zyx.zeros(100, 100, dtype=dtype))
    assert t.dtype.name == dtype
    _, std, _, _ = _stats(t)
    assert abs(std - 1) < 0.05
    with pytest.raises(zyx.DTypeError):
        init.uniform_(zyx.zeros(3, dtype="int32"))
