"""F.interpolate (every mode), pixel_shuffle/unshuffle and the resampling modules against PyTorch CPU:
sizes and scale factors up and down, align_corners, dtypes, non-contiguous input, errors, gradients."""
from __future__ import annotations

import numpy as np
import pytest

import zyx
import zyx.nn.functional as F
from zyx import nn

torch = pytest.importorskip("torch")
TF = torch.nn.functional
RNG = np.random.default_rng(7)
pytestmark = pytest.mark.needs_device


def _close(z, t, rtol=1e-5, atol=2e-6):
    got = z.cast("float32").numpy() if z.dtype is zyx.bfloat16 else z.numpy()
    want = t.detach().float().numpy() if t.dtype is torch.bfloat16 else t.detach().numpy()
    assert got.shape == want.shape, (got.shape, want.shape)
    assert z.dtype.name == str(t.dtype).replace("torch.", ""), (z.dtype.name, t.dtype)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol)


def _pair(shape, dtype=np.float32):
    a = (RNG.normal(size=shape) * 3).astype(dtype)
    return zyx.tensor(a), torch.tensor(a)


CASES = [  # (input shape, kwargs)
    ((2, 3, 5), dict(size=9, mode="linear")),
    ((2, 3, 5), dict(scale_factor=2, mode="linear", align_corners=True)),
    ((1, 2, 7), dict(size=3, mode="linear")),
    ((2, 3, 5, 7), dict(size=(9, 4), mode="bilinear")),
    ((2, 3, 5, 7), dict(scale_factor=2.5, mode="bilinear")),
    ((2, 3, 5, 7), dict(scale_factor=(2, 0.5), mode="bilinear", align_corners=True)),
    ((2, 3, 5, 7), dict(scale_factor=1.3, mode="bilinear", recompute_scale_factor=True)),
    ((2, 3, 5, 7), dict(size=(5, 7), mode="bilinear")),
    ((1, 2, 1, 4), dict(size=(3, 1), mode="bilinear", align_corners=True)),
    ((2, 3, 5, 7), dict(size=(9, 4), mode="bicubic")),
    ((2, 3, 5, 7), dict(size=(9, 13), mode="bicubic", align_corners=True)),
    ((1, 2, 3, 4, 5), dict(size=(5, 6, 7), mode="trilinear")),
    ((1, 2, 3, 4, 5), dict(scale_factor=(1, 0.5, 2), mode="trilinear", align_corners=True)),
    ((2, 3, 5, 7), dict(scale_factor=2, mode="bilinear")),  # exact 2x: the gather-free path
    ((2, 3, 1, 7), dict(size=(2, 7), mode="bilinear")),
    ((2, 3, 5), dict(size=10, mode="linear")),
    ((1, 2, 3, 4, 5), dict(size=(3, 8, 10), mode="trilinear")),
    ((2, 3, 6, 8), dict(size=(3, 4), mode="area")),
    ((2, 3, 7), dict(size=4, mode="area")),
]
NEAREST = [
    ((2, 3, 5, 7), dict(size=(9, 4))),
    ((2, 3, 5, 7), dict(scale_factor=2)),
    ((2, 3, 6, 9), dict(scale_factor=1 / 3)),
    ((2, 3, 6, 9), dict(scale_factor=(0.5, 3))),
    ((2, 3, 5, 7), dict(scale_factor=1.7)),
    ((2, 3, 5), dict(scale_factor=3)),
    ((1, 2, 3, 4, 5), dict(size=(5, 2, 7))),
]


@pytest.mark.parametrize("shape,kw", CASES, ids=[f"{kw['mode']}-{i}" for i, (_, kw) in enumerate(CASES)])
def test_interpolate_modes(shape, kw):
    z, t = _pair(shape)
    _close(F.interpolate(z, **kw), TF.interpolate(t, **kw), atol=1e-5 if kw["mode"] == "bicubic" else 2e-6)


@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
def test_interpolate_nearest_is_exact(mode):
    for shape, kw in NEAREST:
        z, t = _pair(shape)
        np.testing.assert_array_equal(F.interpolate(z, mode=mode, **kw).numpy(),
                                      TF.interpolate(t, mode=mode, **kw).numpy())


def test_interpolate_nearest_integer_factors_are_views():
    z = zyx.tensor(RNG.normal(size=(2, 3, 4, 6)).astype(np.float32)).realize()
    down = F.interpolate(z, scale_factor=0.5)
    assert down._data is z._data  # a strided slice
    before = zyx.kernel_count()
    F.interpolate(z, scale_factor=(2, 3)).realize()
    assert zyx.kernel_count() - before == 1  # one fused copy, no gather tables


@pytest.mark.parametrize("dtype", ["float64", "float16", "bfloat16", "uint8"])
def test_interpolate_dtypes(dtype):
    a = np.abs(RNG.normal(size=(2, 2, 5, 6)) * 20)
    t = torch.tensor(a).to(getattr(torch, dtype))
    z = zyx.tensor(a).cast(dtype)
    _close(F.interpolate(z, size=(7, 4)), TF.interpolate(t, size=(7, 4)))  # nearest: every dtype
    if dtype.startswith("float") or dtype == "bfloat16":
        tol = 1e-12 if dtype == "float64" else 2e-2
        for mode, size in (("bilinear", (7, 4)), ("bicubic", (7, 4)), ("bilinear", (10, 12))):
            got = F.interpolate(z, size=size, mode=mode)
            want = TF.interpolate(t, size=size, mode=mode)
            assert got.dtype.name == dtype
            np.testing.assert_allclose(got.cast("float64").numpy(), want.double().numpy(), rtol=tol, atol=tol * 20)


def test_interpolate_nearest_integer_dtypes():
    """PyTorch's nearest takes uint8 only among the integers; zyx moves any dtype's elements alike."""
    a = np.round(RNG.normal(size=(2, 2, 5, 6)) * 1000)
    want = TF.interpolate(torch.tensor(a), size=(7, 4)).numpy()
    for dtype in ("int64", "int16", "float8_e4m3"):
        got = F.interpolate(zyx.tensor(a).cast(dtype), size=(7, 4))
        np.testing.assert_array_equal(got.cast("float64").numpy(), zyx.tensor(want).cast(dtype).cast("float64").numpy())


def test_interpolate_noncontiguous_and_empty_batch():
    z, t = _pair((5, 4, 3, 2))
    zp, tp = z.permute(3, 2, 1, 0), t.permute(3, 2, 1, 0)  # (2, 3, 4, 5), strided
    _close(F.interpolate(zp, scale_factor=2, mode="bilinear"), TF.interpolate(tp, scale_factor=2, mode="bilinear"))
    _close(F.interpolate(zp, size=(6, 7), mode="bilinear"), TF.interpolate(tp, size=(6, 7), mode="bilinear"))
    _close(F.interpolate(zp[:, :, ::2], scale_factor=1.5, mode="bicubic"),
           TF.interpolate(tp[:, :, ::2], scale_factor=1.5, mode="bicubic"), atol=1e-5)
    _close(F.interpolate(zp * 2, size=(3, 9), mode="nearest"), TF.interpolate(tp * 2, size=(3, 9), mode="nearest"))
    ze, te = _pair((0, 2, 3, 4))
    _close(F.interpolate(ze, size=(5, 5), mode="bilinear"), TF.interpolate(te, size=(5, 5), mode="bilinear"))


def test_interpolate_errors():
    z = zyx.zeros(1, 2, 3, 4)
    with pytest.raises(zyx.ShapeError, match="exactly one of size and scale_factor"):
        F.interpolate(z)
    with pytest.raises(zyx.ShapeError, match="exactly one of size and scale_factor"):
        F.interpolate(z, size=2, scale_factor=2)
    with pytest.raises(zyx.ShapeError, match="mode must be one of"):
        F.interpolate(z, size=2, mode="cubic")
    with pytest.raises(zyx.ShapeError, match="expects a 3-D input"):
        F.interpolate(z, size=2, mode="linear")
    with pytest.raises(zyx.ShapeError, match="align_corners can only be set"):
        F.interpolate(z, size=2, mode="nearest", align_corners=True)
    with pytest.raises(zyx.ShapeError, match="3-D, 4-D or 5-D"):
        F.interpolate(zyx.zeros(2, 3), size=2)
    with pytest.raises(zyx.ShapeError, match="must have 2 entries"):
        F.interpolate(z, size=(2, 3, 4))
    with pytest.raises(zyx.ShapeError, match="greater than 0"):
        F.interpolate(z, size=(0, 3))
    with pytest.raises(zyx.ShapeError, match="positive and finite"):
        F.interpolate(z, scale_factor=-1.0)
    with pytest.raises(zyx.DTypeError, match="floating point"):
        F.interpolate(zyx.zeros(1, 1, 3, dtype=zyx.int32), size=5, mode="linear")
    with pytest.raises(NotImplementedError, match="antialias"):
        F.interpolate(z, size=2, mode="bilinear", antialias=True)
    with pytest.raises(zyx.ShapeError, match="recompute_scale_factor"):  # was ignored silently
        F.interpolate(z, size=2, recompute_scale_factor=True)


GRAD_CASES = [
    ((2, 3, 5, 7), dict(size=(9, 4), mode="bilinear")),
    ((2, 3, 5, 7), dict(scale_factor=3, mode="bilinear", align_corners=True)),
    ((2, 3, 5, 7), dict(scale_factor=2, mode="bilinear")),
    ((1, 2, 5, 6), dict(size=(11, 13), mode="bicubic")),
    ((1, 2, 8, 9), dict(size=(3, 4), mode="bicubic")),
    ((2, 3, 5), dict(size=12, mode="linear")),
    ((1, 1, 3, 4, 5), dict(size=(4, 2, 7), mode="trilinear")),
    ((2, 3, 5, 7), dict(scale_factor=1.7, mode="nearest")),
    ((2, 3, 5, 7), dict(size=(3, 4), mode="nearest-exact")),
    ((2, 3, 4, 4), dict(scale_factor=2, mode="nearest")),
]


@pytest.mark.parametrize("shape,kw", GRAD_CASES, ids=[f"{kw['mode']}-{i}" for i, (_, kw) in enumerate(GRAD_CASES)])
def test_interpolate_gradients(shape, kw):
    a = RNG.normal(size=shape).astype(np.float32)
    zx, tx = zyx.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    zo, to = F.interpolate(zx, **kw), TF.interpolate(tx, **kw)
    g = RNG.normal(size=tuple(to.shape)).astype(np.float32)
    zo.backward(zyx.tensor(g))
    to.backward(torch.tensor(g))
    _close(zx.grad, tx.grad, rtol=1e-5, atol=1e-5)


def test_interpolate_second_derivative():
    a = RNG.normal(size=(1, 1, 3, 4)).astype(np.float32)
    zx, tx = zyx.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    (zg,) = zyx.autograd.grad((F.interpolate(zx, size=(5, 6), mode="bilinear") ** 2).sum(), zx, create_graph=True)
    (tg,) = torch.autograd.grad((TF.interpolate(tx, size=(5, 6), mode="bilinear") ** 2).sum(), tx, create_graph=True)
    (zg ** 2).sum().backward()
    (tg ** 2).sum().backward()
    _close(zx.grad, tx.grad, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", ["float32", "int16", "bool"])
def test_pixel_shuffle_unshuffle(dtype):
    a = RNG.normal(size=(2, 3, 8, 3, 4)) * 9
    a = a > 0 if dtype == "bool" else a.astype(dtype)
    z, t = zyx.tensor(a), torch.tensor(a)
    _close(F.pixel_shuffle(z, 2), TF.pixel_shuffle(t, 2))
    _close(F.pixel_unshuffle(F.pixel_shuffle(z, 2), 2), t)
    _close(F.pixel_unshuffle(z.transpose(-1, -2)[..., :2], 2), TF.pixel_unshuffle(t.transpose(-1, -2)[..., :2], 2))
    with pytest.raises(zyx.ShapeError, match="not divisible by upscale_factor"):
        F.pixel_shuffle(z, 3)
    with pytest.raises(zyx.ShapeError, match="must be divisible by downscale_factor"):
        F.pixel_unshuffle(z, 3)
    with pytest.raises(zyx.ShapeError, match="positive int"):
        F.pixel_shuffle(z, 0)


def test_pixel_shuffle_gradient():
    a = RNG.normal(size=(2, 8, 3, 4)).astype(np.float32)
    zx, tx = zyx.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    g = RNG.normal(size=(2, 2, 6, 8)).astype(np.float32)
    F.pixel_shuffle(zx, 2).backward(zyx.tensor(g))
    TF.pixel_shuffle(tx, 2).backward(torch.tensor(g))
    _close(zx.grad, tx.grad)


def test_modules():
    z, t = _pair((1, 4, 3, 5))
    pairs = [
        (nn.Upsample(scale_factor=2, mode="bilinear"), torch.nn.Upsample(scale_factor=2, mode="bilinear")),
        (nn.Upsample(size=(4, 7)), torch.nn.Upsample(size=(4, 7))),
        (nn.UpsamplingNearest2d(scale_factor=3), torch.nn.UpsamplingNearest2d(scale_factor=3)),
        (nn.UpsamplingBilinear2d(size=(6, 6)), torch.nn.UpsamplingBilinear2d(size=(6, 6))),
        (nn.PixelShuffle(2), torch.nn.PixelShuffle(2)),
        (nn.PixelUnshuffle(1), torch.nn.PixelUnshuffle(1)),
    ]
    for zm, tm in pairs:
        _close(zm(z), tm(t))
        assert repr(zm) == repr(tm)
        assert not list(zm.parameters())


def test_no_buffers_left_behind():
    """The uploaded index and weight tables live only as long as the kernels that read them."""
    x = zyx.tensor(RNG.normal(size=(1, 2, 5, 6)).astype(np.float32)).realize()
    zyx.synchronize()
    start = zyx.memory_stats()["live_buffers"]
    for _ in range(5):
        F.interpolate(x, size=(7, 9), mode="bicubic").realize()
        F.interpolate(x, scale_factor=2, mode="bilinear").realize()
        F.pad(x, (2, 2, 1, 1), mode="reflect").realize()
        x.repeat_interleave(zyx.tensor([1, 2, 0, 1, 3, 1]), 3).realize()
    zyx.synchronize()
    assert zyx.memory_stats()["live_buffers"] == start
