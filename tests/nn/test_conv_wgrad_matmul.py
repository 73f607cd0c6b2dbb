"""The composed weight gradient of the direct convolution as a matmul per kernel offset (groups of at
least ``WGRAD_MATMUL_MIN_CHANNELS`` input channels: kernels too large for the weight-gradient kernel's
registers, and double backward) against PyTorch: odd sizes, stride, dilation, groups, a channels-last
(permuted) input, and the per-offset reduces below the channel threshold."""
from __future__ import annotations

import numpy as np
import pytest

import zyx
import zyx.nn.functional as F
from zyx.backend.launch import recording
from zyx.nn import functional_conv

torch = pytest.importorskip("torch")
TF = torch.nn.functional
RNG = np.random.default_rng(2024)
pytestmark = pytest.mark.needs_device


def _arr(*shape):
    return RNG.normal(size=shape).astype(np.float32)


@pytest.mark.parametrize("xs, ws, kw", [
    ((1, 32, 9, 8), (16, 16, 6, 5), dict(stride=(2, 1), padding=2, groups=2)),  # 30 offsets: composed
    ((2, 17, 7, 9), (8, 17, 5, 6), dict(dilation=(1, 2), padding=(2, 3))),  # 17 channels: a partial vector
])
def test_large_kernel_weight_gradient_by_matmuls(xs, ws, kw):
    x, w = _arr(*xs), _arr(*ws)
    assert ws[1] >= functional_conv.WGRAD_MATMUL_MIN_CHANNELS
    zx, zw = zyx.tensor(x, requires_grad=True), zyx.tensor(w, requires_grad=True)
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    with recording() as launches:
        F.conv2d(zx, zw, **kw).square().sum().backward()
        zw.grad.realize()
    names = {k.name for k, *_ in launches}
    assert "zyx_conv2d" in names and "zyx_conv2d_wgrad" not in names and "zyx_r_mul_sum" in names
    TF.conv2d(tx, tw, **kw).square().sum().backward()
    np.testing.assert_allclose(zw.grad.numpy(), tw.grad.numpy(), rtol=3e-4, atol=3e-3)
    np.testing.assert_allclose(zx.grad.numpy(), tx.grad.numpy(), rtol=3e-4, atol=3e-3)


def test_channels_last_input():
    x = _arr(2, 7, 8, 16)  # stored (N, H, W, C): the conv reads a permuted view
    w = _arr(8, 16, 7, 3)
    zx = zyx.tensor(x).permute(0, 3, 1, 2)
    zw = zyx.tensor(w, requires_grad=True)
    tw = torch.tensor(w, requires_grad=True)
    F.conv2d(zx, zw, padding=(3, 1)).sum().backward()
    TF.conv2d(torch.tensor(x).permute(0, 3, 1, 2), tw, padding=(3, 1)).sum().backward()
    np.testing.assert_allclose(zw.grad.numpy(), tw.grad.numpy(), rtol=3e-4, atol=3e-3)


def test_double_backward_with_wide_groups():
    """The backward recorded (``create_graph``): the matmul form is differentiated again."""
    x, w = _arr(1, 16, 6, 7), _arr(8, 16, 3, 3)
    zx, zw = zyx.tensor(x, requires_grad=True), zyx.tensor(w, requires_grad=True)
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    (zgw,) = zyx.autograd.grad(F.conv2d(zx, zw, padding=1).square().sum(), [zw], create_graph=True)
    (tgw,) = torch.autograd.grad(TF.conv2d(tx, tw, padding=1).square().sum(), [tw], create_graph=True)
    np.testing.assert_allclose(zgw.numpy(), tgw.detach().numpy(), rtol=3e-4, atol=3e-3)
    zgw.square().sum().backward()
    tgw.square().sum().backward()
    np.testing.assert_allclose(zx.grad.numpy(), tx.grad.numpy(), rtol=1e-3, atol=1e-2)
    np.testing.assert_allclose(zw.grad.numpy(), tw.grad.numpy(), rtol=1e-3, atol=1e-2)


def test_few_channels_keep_the_reduce_in_place(monkeypatch):
    """Below the threshold the per-offset multiply-reduce runs (no channels-last copies of the input)."""
    x, w = _arr(1, 4, 9, 8), _arr(8, 4, 7, 5)
    zx, zw = zyx.tensor(x), zyx.tensor(w, requires_grad=True)
    tw = torch.tensor(w, requires_grad=True)
    with recording() as launches:
        F.conv2d(zx, zw, padding=(3, 2)).sum().backward()
        zw.grad.realize()
    # gy made dense once; the matmul form would also copy each of the 35 offsets' slices
    assert sum(k.name == "zyx_contiguize" for k, *_ in launches) < 7 * 5
    TF.conv2d(torch.tensor(x), tw, padding=(3, 2)).sum().backward()
    np.testing.assert_allclose(zw.grad.numpy(), tw.grad.numpy(), rtol=3e-4, atol=3e-3)
