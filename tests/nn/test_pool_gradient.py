"""Max pooling's gradient goes to each window's first maximum, as PyTorch's (``amax``'s rule would split
it among ties, which are common: integer-valued inputs, zeros after a ReLU). Inputs full of ties, every
pooling geometry (non-overlapping windows take the fused ``where`` path, the rest a scatter), NaN and
-inf, 16-bit floats, an empty batch, a non-contiguous input and double backward, against PyTorch."""
from __future__ import annotations

import numpy as np
import pytest

import zyx
import zyx.nn.functional as F
from zyx.backend import launch as launch_mod

pytestmark = pytest.mark.needs_device


def _both(torch, a: np.ndarray, nd: int, g: np.ndarray | None = None, **kw):
    """(zyx output, zyx input grad, torch output, torch input grad) of ``max_poolNd(a, **kw)``."""
    zfn = getattr(F, f"max_pool{nd}d")
    tfn = getattr(torch.nn.functional, f"max_pool{nd}d")
    zx, tx = zyx.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    zo, to = zfn(zx, **kw), tfn(tx, **kw)
    if g is None:
        g = np.random.default_rng(1).standard_normal(tuple(to.shape)).astype(a.dtype)
    (zo * zyx.tensor(g)).sum().backward()
    (to * torch.tensor(g)).sum().backward()
    return zo.numpy(), zx.grad.numpy(), to.detach().numpy(), tx.grad.numpy()


@pytest.mark.parametrize("shape, kw", [
    ((2, 3, 9, 7), dict(kernel_size=2)),                                 # non-overlapping, a dropped tail
    ((2, 3, 8, 8), dict(kernel_size=(2, 4))),                            # non-overlapping, exact
    ((2, 3, 9, 7), dict(kernel_size=3, stride=2, padding=1)),            # overlapping with padding
    ((2, 3, 8, 8), dict(kernel_size=2, stride=1)),                       # every element in up to 4 windows
    ((2, 3, 9, 9), dict(kernel_size=3, dilation=2, ceil_mode=True)),
    ((3, 9, 7), dict(kernel_size=(2, 3))),                               # unbatched
])
def test_max_pool2d_gradient_with_ties_matches_torch(torch, shape, kw):
    a = np.random.default_rng(0).integers(0, 3, shape).astype(np.float32)
    zo, zg, to, tg = _both(torch, a, 2, **kw)
    np.testing.assert_array_equal(zo, to)
    np.testing.assert_array_equal(zg, tg)


def test_max_pool_1d_3d_nan_inf_and_half(torch):
    rng = np.random.default_rng(2)
    a = rng.standard_normal((2, 3, 10)).astype(np.float32)
    a[0, 0, 3], a[1, 2, :4] = np.nan, -np.inf
    zo, zg, to, tg = _both(torch, a, 1, kernel_size=3, stride=2, padding=1)
    np.testing.assert_array_equal(zo, to)  # NaN where PyTorch has NaN
    np.testing.assert_array_equal(zg, tg)  # the NaN takes its window's gradient
    zo, zg, to, tg = _both(torch, rng.integers(0, 2, (1, 2, 4, 5, 6)).astype(np.float32), 3, kernel_size=2)
    np.testing.assert_array_equal(zg, tg)
    zo, zg, to, tg = _both(torch, rng.integers(0, 3, (2, 3, 8, 8)).astype(np.float16), 2, kernel_size=2)
    np.testing.assert_array_equal(zg, tg)


def test_max_pool_gradient_of_a_permuted_input_and_an_empty_batch(torch):
    a = np.random.default_rng(3).integers(0, 3, (2, 6, 6, 3)).astype(np.float32)
    zx, tx = zyx.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    F.max_pool2d(zx.permute(0, 3, 1, 2), 2).sum().backward()
    torch.nn.functional.max_pool2d(tx.permute(0, 3, 1, 2), 2).sum().backward()
    np.testing.assert_array_equal(zx.grad.numpy(), tx.grad.numpy())
    empty = zyx.zeros(0, 3, 8, 8, requires_grad=True)
    F.max_pool2d(empty, 2).sum().backward()
    assert empty.grad.shape == (0, 3, 8, 8)


def test_max_pool_double_backward(torch):
    a = np.random.default_rng(4).standard_normal((1, 2, 6, 6)).astype(np.float32)
    zx, tx = zyx.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    zo, to = F.max_pool2d(zx, 3, 1), torch.nn.functional.max_pool2d(tx, 3, 1)
    zg = zyx.tensor(np.linspace(-1, 1, zo.numel(), dtype=np.float32).reshape(zo.shape), requires_grad=True)
    tg = torch.tensor(zg.numpy(), requires_grad=True)
    (zgx,) = zyx.autograd.grad([zo], [zx], [zg], create_graph=True)
    (tgx,) = torch.autograd.grad([to], [tx], [tg], create_graph=True)
    (zgx * zgx).sum().backward()
    (tgx * tgx).sum().backward()
    np.testing.assert_allclose(zg.grad.numpy(), tg.grad.numpy(), rtol=1e-6)


def test_non_overlapping_backward_fuses_without_a_scatter():
    x = zyx.tensor(np.random.default_rng(5).standard_normal((2, 4, 8, 8)).astype(np.float32), requires_grad=True)
    y = F.max_pool2d(x, 2)
    y.realize()
    with launch_mod.recording() as launches:
        y.sum().backward()
        x.grad.realize()
    names = [ck.name for ck, *_ in launches]
    assert not any("scatter" in name for name in names), names
