"""The direct 2-D convolution kernel (zyx.kernels.conv, templates/conv2d.cl.mako) against PyTorch:
tiles with and without column tests, odd sizes, stride/dilation/groups/padding modes, dtypes,
non-contiguous operands, gradients, and that the kernel really ran."""
from __future__ import annotations

import numpy as np
import pytest

import zyx
import zyx.nn.functional as F
from zyx.backend.launch import recording
from zyx.frontend.tape import plan_stats
from zyx.kernels import conv, conv_tuning

torch = pytest.importorskip("torch")
TF = torch.nn.functional
RNG = np.random.default_rng(1402)
pytestmark = pytest.mark.needs_device


def _arr(*shape, dtype=np.float32):
    return RNG.normal(size=shape).astype(dtype)


def _ran_direct(fn):
    """``fn()``'s result realized, and whether the direct kernel ran for it."""
    with recording() as launches:
        out = fn().realize()
    return out, any(k.name == "zyx_conv2d" for k, *_ in launches)


CASES = [  # (N, C, H, W), O, kernel, stride, padding, dilation, groups, tile (None: the heuristic's)
    ((2, 5, 13, 19), 16, 3, 1, 1, 1, 1, None),  # 19 columns: inner tiles, both border tiles, a tail
    ((1, 8, 9, 11), 32, 3, 1, 1, 1, 1, (3, 2, 2)),  # 2 rows a work item over 9 rows, a 3-pixel tile
    ((2, 6, 10, 9), 12, (2, 3), (2, 1), (1, 0), (1, 2), 3, None),  # Og=4: 4-lane vectors
    ((1, 4, 9, 8), 8, (3, 2), 1, "same", 1, 1, None),  # an even kernel: padding (0, 1)
    ((3, 4, 7, 7), 8, 5, 2, "valid", 1, 2, (1, 1, 1)),
    ((1, 16, 12, 12), 16, 3, 1, 1, 1, 16, None),  # depthwise (Og=1): not eligible, the composed path
]


@pytest.mark.parametrize("case", CASES)
def test_conv2d_matches_torch(case):
    shape, o, k, s, p, d, g, til = case
    kk = (k, k) if isinstance(k, int) else k
    x, w, b = _arr(*shape), _arr(o, shape[1] // g, *kk), _arr(o)
    with conv_tuning.forced_tile(til):
        out, direct = _ran_direct(lambda: F.conv2d(zyx.tensor(x), zyx.tensor(w), zyx.tensor(b), s, p, d, g))
    ref = TF.conv2d(torch.tensor(x), torch.tensor(w), torch.tensor(b), s, p, d, g).numpy()
    np.testing.assert_allclose(out.numpy(), ref, rtol=2e-4, atol=2e-4)
    assert direct == ((o // g) % 4 == 0)


@pytest.mark.parametrize("dtype", [zyx.float64, zyx.float16, zyx.bfloat16], ids=lambda d: d.name)
def test_dtypes(dtype):
    x, w, b = _arr(2, 3, 9, 10), _arr(8, 3, 3, 3), _arr(8)
    zt = [zyx.tensor(a).cast(dtype) for a in (x, w, b)]
    out, direct = _ran_direct(lambda: F.conv2d(*zt, padding=1))
    assert out.dtype == dtype and direct
    tt = [torch.tensor(t.cast(zyx.float32).numpy(), dtype=torch.float64) for t in zt]
    ref = TF.conv2d(*tt, padding=1).numpy()
    tol = {zyx.float64: 1e-12, zyx.float16: 2e-3, zyx.bfloat16: 1e-2}[dtype]
    np.testing.assert_allclose(out.cast(zyx.float64).numpy(), ref, rtol=tol, atol=tol * 8)


def test_noncontiguous_offset_operands_batch_one_and_unbatched():
    base, wbase = _arr(3, 11, 12, 4), _arr(3, 3, 8, 6)
    x = zyx.tensor(base)[1:2].permute(0, 3, 1, 2)  # (1, 4, 11, 12): permuted, starting past element 0
    w = zyx.tensor(wbase).permute(3, 2, 0, 1)[:, 1:5]  # (6, 4, 3, 3) non-contiguous; O=6: composed
    w8 = zyx.tensor(_arr(4, 3, 3, 8)).permute(3, 0, 1, 2)  # (8, 4, 3, 3): direct
    tx = torch.tensor(base)[1:2].permute(0, 3, 1, 2)
    for zw in (w, w8):
        tw = torch.tensor(zw.numpy())
        out, direct = _ran_direct(lambda zw=zw: F.conv2d(x, zw, None, 1, 2, 2))
        np.testing.assert_allclose(out.numpy(), TF.conv2d(tx, tw, None, 1, 2, 2).numpy(), rtol=2e-4, atol=2e-4)
        assert direct == (zw.shape[0] == 8)
    out, direct = _ran_direct(lambda: F.conv2d(x[0], w8, padding=1))  # unbatched (C, H, W)
    ref = TF.conv2d(tx[0], torch.tensor(w8.numpy()), padding=1).numpy()
    np.testing.assert_allclose(out.numpy(), ref, rtol=2e-4, atol=2e-4)
    assert direct and out.shape == (8, 11, 12)


def test_empty_batch():
    out = F.conv2d(zyx.zeros(0, 4, 6, 6), zyx.tensor(_arr(8, 4, 3, 3)), padding=1)
    assert out.shape == (0, 8, 6, 6) and out.numpy().size == 0


@pytest.mark.parametrize("s, p, d, g", [(1, 1, 1, 1), (2, (0, 2), (2, 1), 2)])
def test_gradients(s, p, d, g):
    x, w, b = _arr(2, 4, 9, 8), _arr(8, 4 // g, 3, 3), _arr(8)
    zs = [zyx.tensor(a, requires_grad=True) for a in (x, w, b)]
    ts = [torch.tensor(a, requires_grad=True) for a in (x, w, b)]
    zo, to = F.conv2d(*zs, s, p, d, g), TF.conv2d(*ts, s, p, d, g)
    cot = _arr(*to.shape)
    with recording() as launches:
        (zo * zyx.tensor(cot)).sum().backward()
        zs[1].grad.realize()
    assert "zyx_conv2d_wgrad" in {k.name for k, *_ in launches}
    (to * torch.tensor(cot)).sum().backward()
    for z, t in zip(zs, ts):
        np.testing.assert_allclose(z.grad.numpy(), t.grad.numpy(), rtol=3e-4, atol=3e-4)


@pytest.mark.parametrize("case", [CASES[0], CASES[2], CASES[4]])
def test_channels_last_input_read_in_place(case):
    """An input lying channels-last (an NCHW view of an NHWC buffer, as the previous conv's output is) runs
    the kernels at NHWC strides, copied nowhere: the values and all three gradients match PyTorch."""
    shape, o, k, s, p, d, g, til = case
    kk = (k, k) if isinstance(k, int) else k
    x, w, b = _arr(*shape), _arr(o, shape[1] // g, *kk), _arr(o)
    leaf = zyx.tensor(np.ascontiguousarray(x.transpose(0, 2, 3, 1)), requires_grad=True)
    zw, zb = zyx.tensor(w, requires_grad=True), zyx.tensor(b, requires_grad=True)
    ts = [torch.tensor(a, requires_grad=True) for a in (x, w, b)]
    with conv_tuning.forced_tile(til), recording() as launches:
        zo = F.conv2d(leaf.permute(0, 3, 1, 2), zw, zb, s, p, d, g).realize()
    with conv_tuning.forced_tile(til), recording() as dense:
        F.conv2d(zyx.tensor(x), zw, zb, s, p, d, g).realize()
    names = [k.name for k, *_ in launches]
    assert "zyx_conv2d" in names and names == [k.name for k, *_ in dense], names  # the input not copied
    to = TF.conv2d(*ts, s, p, d, g)
    np.testing.assert_allclose(zo.numpy(), to.detach().numpy(), rtol=2e-4, atol=2e-4)
    cot = _arr(*to.shape)
    (zo * zyx.tensor(cot)).sum().backward()
    (to * torch.tensor(cot)).sum().backward()
    np.testing.assert_allclose(leaf.grad.numpy().transpose(0, 3, 1, 2), ts[0].grad.numpy(), rtol=3e-4, atol=3e-4)
    np.testing.assert_allclose(zw.grad.numpy(), ts[1].grad.numpy(), rtol=3e-4, atol=3e-4)
    np.testing.assert_allclose(zb.grad.numpy(), ts[2].grad.numpy(), rtol=3e-4, atol=3e-4)


@pytest.mark.parametrize("shape, p", [((1, 4, 2, 3), 1), ((2, 4, 5, 4), 2), ((1, 4, 6, 7), (0, 3))])
@pytest.mark.parametrize("channels_last", [False, True])
def test_weight_gradient_border_tests(shape, p, channels_last):
    """The weight-gradient kernel reads the unpadded input and tests the border: inputs narrower than the
    kernel's reach, padding wider than the kernel's half, no padding on one side."""
    x, w = _arr(*shape), _arr(8, shape[1], 3, 3)
    zx = zyx.tensor(np.ascontiguousarray(x.transpose(0, 2, 3, 1))).permute(0, 3, 1, 2) if channels_last \
        else zyx.tensor(x)
    zw, tw, tx = zyx.tensor(w, requires_grad=True), torch.tensor(w, requires_grad=True), torch.tensor(x)
    zo, to = F.conv2d(zx, zw, None, 1, p), TF.conv2d(tx, tw, None, 1, p)
    cot = _arr(*to.shape)
    with recording() as launches:
        (zo * zyx.tensor(cot)).sum().backward()
        zw.grad.realize()
    assert "zyx_conv2d_wgrad" in {k.name for k, *_ in launches}
    (to * torch.tensor(cot)).sum().backward()
    np.testing.assert_allclose(zw.grad.numpy(), tw.grad.numpy(), rtol=3e-4, atol=3e-4)


def test_weight_gradient_of_a_large_kernel_composed():
    """7x5 offsets do not fit the weight-gradient kernel's registers: the per-offset reduces."""
    x, w = _arr(1, 2, 9, 8), _arr(4, 2, 7, 5)
    zx, zw = zyx.tensor(x, requires_grad=True), zyx.tensor(w, requires_grad=True)
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    with recording() as launches:
        F.conv2d(zx, zw, padding=(3, 2)).square().sum().backward()
        zw.grad.realize()
    names = {k.name for k, *_ in launches}
    assert "zyx_conv2d" in names and "zyx_conv2d_wgrad" not in names
    TF.conv2d(tx, tw, padding=(3, 2)).square().sum().backward()
    np.testing.assert_allclose(zx.grad.numpy(), tx.grad.numpy(), rtol=3e-4, atol=3e-4)
    np.testing.assert_allclose(zw.grad.numpy(), tw.grad.numpy(), rtol=3e-4, atol=3e-4)


def test_double_backward():
    """A gradient of the weight's gradient: the backward itself recorded (the composed weight gradient)."""
    x, w = _arr(1, 3, 6, 7), _arr(4, 3, 3, 3)
    zx, zw = zyx.tensor(x, requires_grad=True), zyx.tensor(w, requires_grad=True)
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    (zgw,) = zyx.autograd.grad(F.conv2d(zx, zw, padding=1).square().sum(), [zw], create_graph=True)
    (tgw,) = torch.autograd.grad(TF.conv2d(tx, tw, padding=1).square().sum(), [tw], create_graph=True)
    zgw.square().sum().backward()
    tgw.square().sum().backward()
    np.testing.assert_allclose(zx.grad.numpy(), tx.grad.numpy(), rtol=1e-3, atol=1e-3)


def test_gradients_same_padding_even_kernel():
    x, w = _arr(1, 4, 7, 6), _arr(8, 4, 2, 4)
    zx, zw = zyx.tensor(x, requires_grad=True), zyx.tensor(w, requires_grad=True)
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    F.conv2d(zx, zw, padding="same").square().sum().backward()
    TF.conv2d(tx, tw, padding="same").square().sum().backward()
    np.testing.assert_allclose(zx.grad.numpy(), tx.grad.numpy(), rtol=3e-4, atol=3e-4)
    np.testing.assert_allclose(zw.grad.numpy(), tw.grad.numpy(), rtol=3e-4, atol=3e-4)


def test_conv_transpose2d_runs_the_direct_kernel():
    x, w, b = _arr(2, 8, 6, 7), _arr(8, 16, 3, 3), _arr(16)
    for kw in (dict(padding=1), dict(stride=2, padding=1, output_padding=1)):
        out, direct = _ran_direct(lambda kw=kw: F.conv_transpose2d(zyx.tensor(x), zyx.tensor(w), zyx.tensor(b), **kw))
        ref = TF.conv_transpose2d(torch.tensor(x), torch.tensor(w), torch.tensor(b), **kw).numpy()
        np.testing.assert_allclose(out.numpy(), ref, rtol=2e-4, atol=2e-4)
        assert direct


def test_tile_heuristic():
    assert conv.tile(zyx.float32, 64, 56) == (8, 2, 1)
    assert conv.tile(zyx.float32, 64, 5) == (5, 2, 1)
    assert conv.tile(zyx.float64, 12, 20) == (8, 1, 1)
    assert conv.vector_width(zyx.float32, 6) == 0


def test_jitted_forward_and_backward_replay():
    """zyx.jit captures the direct kernels (EXTERN nodes) once and replays them on new data."""

    def step(x, w, b):
        y = F.conv2d(x, w, b, padding=1)
        (gw,) = zyx.autograd.grad(y.square().sum(), [w])
        return y, gw

    jf = zyx.jit(step)
    before = (plan_stats["captures"], plan_stats["replays"])
    for _ in range(3):
        x, w, b = _arr(2, 4, 6, 9), _arr(8, 4, 3, 3), _arr(8)
        got = jf(zyx.tensor(x), zyx.tensor(w, requires_grad=True), zyx.tensor(b))
        tw = torch.tensor(w, requires_grad=True)
        ty = TF.conv2d(torch.tensor(x), tw, torch.tensor(b), padding=1)
        (tgw,) = torch.autograd.grad(ty.square().sum(), [tw])
        np.testing.assert_allclose(got[0].numpy(), ty.detach().numpy(), rtol=2e-4, atol=2e-4)
        np.testing.assert_allclose(got[1].numpy(), tgw.numpy(), rtol=2e-4, atol=2e-3)
    assert (plan_stats["captures"], plan_stats["replays"]) == (before[0] + 1, before[1] + 2)
