"""max_unpool1d/2d/3d and conv_transpose3d against torch 2.13 CPU (values, shapes, gradients, errors)."""
from __future__ import annotations

import numpy as np
import pytest

import zyx
import zyx.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional
RNG = np.random.default_rng(5)
pytestmark = pytest.mark.needs_device


def _arr(*shape):
    return RNG.normal(size=shape).astype(np.float32)


@pytest.mark.parametrize("nd,shape,kw", [
    (1, (2, 3, 10), {"kernel_size": 2}),
    (2, (2, 3, 8, 10), {"kernel_size": 2}),
    (2, (3, 9, 7), {"kernel_size": 3, "stride": 2, "padding": 1}),  # unbatched
    (3, (1, 2, 4, 6, 4), {"kernel_size": 2}),
])
def test_max_unpool(nd, shape, kw):
    pool, unpool = getattr(F, f"max_pool{nd}d"), getattr(F, f"max_unpool{nd}d")
    tpool, tunpool = getattr(TF, f"max_pool{nd}d"), getattr(TF, f"max_unpool{nd}d")
    a = _arr(*shape)
    zv, zi = pool(zyx.tensor(a), return_indices=True, **kw)
    tv, ti = tpool(torch.tensor(a), return_indices=True, **kw)
    size = shape[-nd:]
    for extra in ({}, {"output_size": size}):
        if not extra and any((o - 1) * kw.get("stride", kw["kernel_size"]) - 2 * kw.get("padding", 0)
                             + kw["kernel_size"] < s for o, s in zip(tv.shape[-nd:], size)):
            continue  # the default size cannot hold every index (PyTorch raises there too)
        got, want = unpool(zv, zi, **kw, **extra), tunpool(tv, ti, **kw, **extra)
        assert tuple(got.shape) == tuple(want.shape)
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_max_unpool_gradient_and_errors():
    a = _arr(2, 3, 6, 6)
    zv, zi = F.max_pool2d(zyx.tensor(a), 2, return_indices=True)
    tv, ti = TF.max_pool2d(torch.tensor(a), 2, return_indices=True)
    zx, tx = zyx.tensor(zv.numpy(), requires_grad=True), torch.tensor(tv.numpy(), requires_grad=True)
    w = _arr(2, 3, 6, 6)
    (F.max_unpool2d(zx, zi, 2) * zyx.tensor(w)).sum().backward()
    (TF.max_unpool2d(tx, ti, 2) * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(zx.grad.numpy(), tx.grad.numpy(), rtol=1e-6)
    with pytest.raises(zyx.ShapeError, match="do not match"):
        F.max_unpool2d(zv, zi[:, :, :1], 2)
    with pytest.raises(IndexError):  # an index past the output plane, as PyTorch
        F.max_unpool2d(zv, zi, 2, output_size=(4, 4)).numpy()


@pytest.mark.parametrize("kw", [{}, {"stride": 2, "padding": 1, "output_padding": 1}, {"groups": 2, "dilation": 2}])
def test_conv_transpose3d(kw):
    x, w, b = _arr(2, 4, 3, 4, 5), _arr(4, 3, 3, 2, 2), _arr(6 if kw.get("groups") else 3)
    if kw.get("groups"):
        w = _arr(4, 3, 3, 2, 2)
    got = F.conv_transpose3d(zyx.tensor(x), zyx.tensor(w), zyx.tensor(b), **kw)
    want = TF.conv_transpose3d(torch.tensor(x), torch.tensor(w), torch.tensor(b), **kw)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-4)
