"""The 3-D pooling, ConvTranspose3d, BatchNorm3d, InstanceNorm1d/2d/3d, LocalResponseNorm, AdaptiveMaxPool1d,
Fold and Unfold modules against torch.nn's: reprs, state_dict keys, outputs and input gradients."""
from __future__ import annotations

import numpy as np
import pytest

import zyx

torch = pytest.importorskip("torch")
RNG = np.random.default_rng(2121)
pytestmark = pytest.mark.needs_device

CASES = [
    ("MaxPool3d", (2,), dict(stride=(1, 2, 2), padding=1, ceil_mode=True), (2, 3, 4, 5, 6)),
    ("AvgPool3d", (2,), dict(stride=1, padding=1, ceil_mode=True, count_include_pad=False, divisor_override=None),
     (2, 3, 4, 5, 3)),
    ("AdaptiveMaxPool1d", (3,), {}, (2, 3, 7)),
    ("ConvTranspose3d", (2, 4, 2), dict(stride=2, padding=1, output_padding=1), (1, 2, 3, 3, 2)),
    ("BatchNorm3d", (3,), dict(momentum=0.2), (2, 3, 2, 3, 2)),
    ("InstanceNorm1d", (3,), {}, (3, 7)),
    ("InstanceNorm2d", (3,), dict(affine=True, track_running_stats=True, momentum=0.3), (2, 3, 4, 5)),
    ("InstanceNorm3d", (2,), dict(affine=True), (1, 2, 3, 2, 4)),
    ("LocalResponseNorm", (3,), dict(alpha=0.1, beta=0.6, k=2.0), (2, 5, 4, 3)),
    ("Unfold", ((2, 3),), dict(dilation=(1, 2), padding=1, stride=2), (2, 3, 6, 7)),
    ("Fold", ((5, 6), 2), dict(stride=1), (2, 8, 20)),
]


@pytest.mark.parametrize("name, args, kw, shape", CASES, ids=[c[0] for c in CASES])
def test_layer_matches_torch(name, args, kw, shape):
    zm, tm = getattr(zyx.nn, name)(*args, **kw), getattr(torch.nn, name)(*args, **kw)
    assert repr(zm) == repr(tm)
    assert sorted(zm.state_dict()) == sorted(tm.state_dict())
    zm.load_state_dict({k: v.detach().numpy() for k, v in tm.state_dict().items()})
    x = RNG.normal(size=shape).astype(np.float32)
    zx, tx = zyx.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    zo, to = zm(zx), tm(tx)
    np.testing.assert_allclose(zo.numpy(), to.detach().numpy(), rtol=1e-4, atol=1e-5)
    g = RNG.normal(size=tuple(to.shape)).astype(np.float32)
    zo.backward(zyx.tensor(g))
    to.backward(torch.tensor(g))
    np.testing.assert_allclose(zx.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-5)
    if name in ("BatchNorm3d", "InstanceNorm2d"):  # running statistics updated alike; eval reads them
        np.testing.assert_allclose(zm.running_var.numpy(), tm.running_var.numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(zm.running_mean.numpy(), tm.running_mean.numpy(), rtol=1e-5, atol=1e-6)
        zm.eval()
        tm.eval()
        np.testing.assert_allclose(zm(zyx.tensor(x)).numpy(), tm(torch.tensor(x)).detach().numpy(), rtol=1e-4,
                                   atol=1e-5)
