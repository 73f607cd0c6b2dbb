"""zyx.nn.utils.clip_grad_norm_ / clip_grad_value_ against torch.nn.utils."""
from __future__ import annotations

import math

import numpy as np
import pytest

import zyx
import zyx.optim
from zyx.nn import utils

pytestmark = pytest.mark.needs_device

SHAPES = [(4, 3), (5,), (2, 2), ()]


def _pairs(torch, seed: int = 0, scale: float = 1.0):
    rng = np.random.default_rng(seed)
    grads = [np.asarray((rng.standard_normal(s) * scale).astype(np.float32)) for s in SHAPES]
    zp = [zyx.zeros(s, requires_grad=True) for s in SHAPES]
    tp = [torch.zeros(s, requires_grad=True) for s in SHAPES]
    for z, t, g in zip(zp, tp, grads):
        z.grad = zyx.from_numpy(g)
        t.grad = torch.from_numpy(g.copy())
    return zp, tp


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, math.inf])
@pytest.mark.parametrize("max_norm", [0.5, 1e3])
def test_clip_grad_norm_matches_torch(torch, norm_type, max_norm):
    zp, tp = _pairs(torch)
    total = utils.clip_grad_norm_(zp, max_norm, norm_type)
    expected = torch.nn.utils.clip_grad_norm_(tp, max_norm, norm_type)
    assert total.shape == () and total.dtype is zyx.float32
    np.testing.assert_allclose(float(total), float(expected), rtol=1e-6)
    for z, t in zip(zp, tp):
        np.testing.assert_allclose(z.grad.numpy(), t.grad.numpy(), rtol=1e-6, atol=1e-7)


def test_clip_grad_norm_skips_missing_grads_and_takes_one_tensor(torch):
    w = zyx.ones(3, requires_grad=True)
    assert float(utils.clip_grad_norm_([w], 1.0)) == 0.0  # no gradient anywhere
    w.grad = zyx.full((3,), 2.0)
    total = utils.clip_grad_norm_(w, 1.0)
    np.testing.assert_allclose(float(total), math.sqrt(12), rtol=1e-6)
    np.testing.assert_allclose(w.grad.numpy(), np.full(3, 2 / (math.sqrt(12) + 1e-6), np.float32), rtol=1e-6)


def test_clip_grad_norm_nonfinite():
    w = zyx.ones(2, requires_grad=True)
    w.grad = zyx.tensor([1.0, float("inf")])
    with pytest.raises(RuntimeError, match="non-finite"):
        utils.clip_grad_norm_([w], 1.0, error_if_nonfinite=True)
    with pytest.raises(ValueError, match="norm_type"):
        utils.clip_grad_norm_([w], 1.0, norm_type=0)


def test_clip_grad_value_matches_torch(torch):
    zp, tp = _pairs(torch, 1, scale=3.0)
    utils.clip_grad_value_(zp, 1.5)
    torch.nn.utils.clip_grad_value_(tp, 1.5)
    for z, t in zip(zp, tp):
        np.testing.assert_array_equal(z.grad.numpy(), t.grad.numpy())


def test_clipping_fuses_into_the_step():
    """The clipped gradient is lazy: an SGD step after clip_grad_norm_ runs the norm's kernels and
    still one kernel per parameter."""
    ws = [zyx.ones(8, 8, requires_grad=True) for _ in range(3)]
    opt = zyx.optim.SGD(ws, lr=0.1)
    for w in ws:
        w.grad = zyx.full((8, 8), 0.5).realize()
    before = zyx.kernel_count()
    utils.clip_grad_norm_(ws, 1.0)
    assert zyx.kernel_count() == before  # nothing ran yet
    opt.step()
    expected = 1 - 0.1 * 0.5 / (math.sqrt(3 * 64 * 0.25) + 1e-6)
    np.testing.assert_allclose(ws[0].numpy(), np.full((8, 8), expected, np.float32), rtol=1e-6)
