"""Max pooling and BatchNorm of a channels-last input (a convolution's output, or any (N, *spatial, C) buffer
read as (N, C, *spatial)) run in that layout (``zyx.frontend.layout``): values, indices, running statistics
and gradients against PyTorch for every pooling geometry, ties (the first maximum wins), NaN and a
conv-BatchNorm-ReLU-pool chain."""
from __future__ import annotations

import numpy as np
import pytest

import zyx
import zyx.nn.functional as F
from zyx.frontend.layout import is_channels_last

pytestmark = pytest.mark.needs_device


def _nhwc(a: np.ndarray, requires_grad: bool = False):
    """``a`` (N, C, H, W) as zyx's NCHW view of a channels-last buffer, and that buffer's leaf tensor."""
    leaf = zyx.tensor(np.ascontiguousarray(a.transpose(0, 2, 3, 1)), requires_grad=requires_grad)
    return leaf.permute(0, 3, 1, 2), leaf


def test_layout_of_views_and_pending_work():
    a = np.zeros((2, 3, 4, 5), np.float32)
    x, leaf = _nhwc(a)
    assert is_channels_last(x) and is_channels_last((x * 2 + 1).relu())
    assert not is_channels_last(zyx.tensor(a)) and not is_channels_last(x.contiguous())
    assert not is_channels_last(_nhwc(np.zeros((2, 1, 4, 5), np.float32))[0])  # one channel: either layout
    assert not is_channels_last(_nhwc(np.zeros((0, 3, 4, 5), np.float32))[0])  # empty: no layout
    y = (leaf * 2).permute(0, 3, 1, 2)  # pending work of (N, H, W, C), read as NCHW
    assert is_channels_last(y) and is_channels_last(y - y.mean((0, 2, 3), keepdim=True))


@pytest.mark.parametrize("shape, kw", [
    ((2, 5, 8, 8), dict(kernel_size=2)),                                 # tiled windows
    ((2, 5, 9, 7), dict(kernel_size=2)),                                 # tiled, a dropped tail
    ((2, 5, 8, 8), dict(kernel_size=(2, 4))),
    ((2, 5, 9, 7), dict(kernel_size=3, stride=2, padding=1)),            # overlapping with padding
    ((2, 5, 8, 8), dict(kernel_size=2, stride=1)),
    ((2, 5, 9, 9), dict(kernel_size=3, dilation=2, ceil_mode=True)),
    ((2, 5, 7, 7), dict(kernel_size=2, ceil_mode=True)),                 # ceil mode: a partial last window
])
def test_max_pool2d_channels_last_matches_torch(torch, shape, kw):
    rng = np.random.default_rng(0)
    a = rng.integers(0, 3, shape).astype(np.float32)  # full of ties: the first maximum must win
    a[0, 1, 2, 3] = np.nan
    x, leaf = _nhwc(a, requires_grad=True)
    tx = torch.tensor(a, requires_grad=True)
    zo, zi = F.max_pool2d(x, return_indices=True, **kw)
    to, ti = torch.nn.functional.max_pool2d(tx, return_indices=True, **kw)
    g = rng.standard_normal(tuple(to.shape)).astype(np.float32)
    (zo * zyx.tensor(g)).sum().backward()
    (to * torch.tensor(g)).sum().backward()
    np.testing.assert_array_equal(zo.numpy(), to.detach().numpy())
    np.testing.assert_array_equal(zi.numpy(), ti.numpy())
    np.testing.assert_array_equal(leaf.grad.numpy().transpose(0, 3, 1, 2), tx.grad.numpy())


def test_max_pool_channels_last_without_indices_and_1d(torch):
    a = np.random.default_rng(1).standard_normal((3, 4, 10)).astype(np.float32)
    leaf = zyx.tensor(np.ascontiguousarray(a.transpose(0, 2, 1)), requires_grad=True)
    tx = torch.tensor(a, requires_grad=True)
    zo = F.max_pool1d(leaf.permute(0, 2, 1) * 1.5, 3, 2, 1)
    to = torch.nn.functional.max_pool1d(tx * 1.5, 3, 2, 1)
    zo.sum().backward()
    to.sum().backward()
    np.testing.assert_allclose(zo.numpy(), to.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(leaf.grad.numpy().transpose(0, 2, 1), tx.grad.numpy(), rtol=1e-6)


@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_channels_last_matches_torch(torch, affine):
    rng = np.random.default_rng(2)
    a = (rng.standard_normal((4, 6, 5, 3)) * 2 + 1).astype(np.float32)
    x, leaf = _nhwc(a, requires_grad=True)
    zm, tm = zyx.nn.BatchNorm2d(6, affine=affine), torch.nn.BatchNorm2d(6, affine=affine)
    if affine:
        w, b = rng.standard_normal(6).astype(np.float32), rng.standard_normal(6).astype(np.float32)
        tm.load_state_dict({**tm.state_dict(), "weight": torch.tensor(w), "bias": torch.tensor(b)})
        zm.load_state_dict({k: v.numpy() for k, v in tm.state_dict().items()})
    tx = torch.tensor(a, requires_grad=True)
    zo, to = zm(x), tm(tx)
    assert is_channels_last(zo)  # the layout carries on to the next layer
    g = rng.standard_normal(tuple(to.shape)).astype(np.float32)
    (zo * zyx.tensor(g)).sum().backward()
    (to * torch.tensor(g)).sum().backward()
    np.testing.assert_allclose(zo.numpy(), to.detach().numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(leaf.grad.numpy().transpose(0, 3, 1, 2), tx.grad.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(zm.running_mean.numpy(), tm.running_mean.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(zm.running_var.numpy(), tm.running_var.numpy(), rtol=1e-5, atol=1e-6)
    if affine:
        np.testing.assert_allclose(zm.weight.grad.numpy(), tm.weight.grad.numpy(), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(zm.bias.grad.numpy(), tm.bias.grad.numpy(), rtol=1e-5, atol=1e-5)
    zm.eval(), tm.eval()
    np.testing.assert_allclose(zm(x).numpy(), tm(tx).detach().numpy(), rtol=1e-5, atol=1e-5)


def test_batch_norm_channels_last_double_backward(torch):
    a = np.random.default_rng(3).standard_normal((3, 4, 3, 2)).astype(np.float32)
    x, leaf = _nhwc(a, requires_grad=True)
    tx = torch.tensor(a, requires_grad=True)
    zo = F.batch_norm(x, None, None, training=True)
    to = torch.nn.functional.batch_norm(tx, None, None, training=True)
    (zg,) = zyx.autograd.grad([(zo * zo * zo).sum()], [leaf], create_graph=True)
    (tg,) = torch.autograd.grad([(to * to * to).sum()], [tx], create_graph=True)
    (zg * zg).sum().backward()
    (tg * tg).sum().backward()
    np.testing.assert_allclose(leaf.grad.numpy().transpose(0, 3, 1, 2), tx.grad.numpy(), rtol=1e-3, atol=1e-4)


def test_conv_batch_norm_relu_pool_chain_matches_torch(torch):
    """The bench CNN's block: the direct convolution's channels-last output through BatchNorm, ReLU and a
    tiled max pool; then an in-place ReLU and an overlapping padded pool (ResNet's stem); the input and
    weight gradients against PyTorch."""
    rng = np.random.default_rng(4)
    a = rng.standard_normal((4, 1, 12, 12)).astype(np.float32)
    zyx.manual_seed(0)
    zn = zyx.nn
    zm = zn.Sequential(zn.Conv2d(1, 8, 3, padding=1), zn.BatchNorm2d(8), zn.ReLU(), zn.MaxPool2d(2),
                       zn.Conv2d(8, 16, 3, padding=1), zn.BatchNorm2d(16), zn.ReLU(inplace=True), zn.MaxPool2d(3, 2, 1))
    tn = torch.nn
    tm = tn.Sequential(tn.Conv2d(1, 8, 3, padding=1), tn.BatchNorm2d(8), tn.ReLU(), tn.MaxPool2d(2),
                       tn.Conv2d(8, 16, 3, padding=1), tn.BatchNorm2d(16), tn.ReLU(inplace=True), tn.MaxPool2d(3, 2, 1))
    tm.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in zm.state_dict().items()})
    zx, tx = zyx.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    zo, to = zm(zx), tm(tx)
    g = rng.standard_normal(tuple(to.shape)).astype(np.float32)
    (zo * zyx.tensor(g)).sum().backward()
    (to * torch.tensor(g)).sum().backward()
    np.testing.assert_allclose(zo.numpy(), to.detach().numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(zx.grad.numpy(), tx.grad.numpy(), rtol=1e-3, atol=1e-4)
    for (name, zp), tp in zip(zm.named_parameters(), tm.parameters()):
        np.testing.assert_allclose(zp.grad.numpy(), tp.grad.numpy(), rtol=1e-3, atol=1e-4, err_msg=name)


@pytest.mark.parametrize("channels_last", [False, True])
def test_batch_norm_input_written_in_place_after_forward_raises(channels_last):
    a = np.random.default_rng(5).standard_normal((4, 3, 5, 5)).astype(np.float32)
    x, leaf = _nhwc(a, requires_grad=True) if channels_last else (None, zyx.tensor(a, requires_grad=True))
    y = (x if channels_last else leaf) * 1.0
    out = F.batch_norm(y, None, None, training=True)
    with zyx.no_grad():
        y.add_(1.0)
    with pytest.raises(zyx.errors.AutogradError, match="modified"):
        out.sum().backward()
