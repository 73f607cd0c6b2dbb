"""F.interpolate (every mode), pixel_shuffle/unshuffle and the resampling modules against PyTorch CPU:
sizes and scale factors up and down, align_corners, dtypes, non-contiguous input, errors, gradients."""
from __future__ import annotations

import numpy as np
import pytest

import zyx
import zyx.nn.functional as F
from zyx import nn, settings

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
    with pytest.raises(zyx.ShapeError, match="antialias=True is only for the modes"):
        F.interpolate(z, size=2, mode="nearest", antialias=True)
    with pytest.raises(zyx.ShapeError, match="antialias=True is only for the modes"):
        F.interpolate(zyx.zeros(1, 2, 3), size=2, mode="linear", antialias=True)
    with pytest.raises(zyx.ShapeError, match="'lanczos' needs antialias=True"):
        F.interpolate(z, size=2, mode="lanczos")
    with pytest.raises(zyx.ShapeError, match="'lanczos' does not support align_corners=True"):
        F.interpolate(z, size=2, mode="lanczos", antialias=True, align_corners=True)
    for dtype in ("float16", "bfloat16"):  # PyTorch has no antialiased kernel for them
        with pytest.raises(zyx.DTypeError, match="float32, float64 or uint8 input.*got " + dtype):
            F.interpolate(z.cast(dtype), size=2, mode="bilinear", antialias=True)
    u8 = z.cast("uint8")
    for mode, x in (("linear", zyx.zeros(1, 1, 3, dtype=zyx.uint8)), ("area", u8),
                    ("trilinear", zyx.zeros(1, 1, 2, 2, 2, dtype=zyx.uint8))):  # PyTorch's uint8: not these modes
        with pytest.raises(zyx.DTypeError, match=f"interpolate: mode '{mode}' needs a floating point input"):
            F.interpolate(x, size=2, mode=mode)
    with pytest.raises(zyx.DTypeError, match="'bicubic' needs a floating point input.*got int16"):
        F.interpolate(z.cast("int16"), size=2, mode="bicubic")
    with pytest.raises(zyx.DTypeError, match="float32, float64 or uint8 input.*got int16"):
        F.interpolate(z.cast("int16"), size=2, mode="bicubic", antialias=True)
    with pytest.raises(zyx.ShapeError, match="recompute_scale_factor"):  # was ignored silently
        F.interpolate(z, size=2, recompute_scale_factor=True)


U8_CASES = [  # (input shape, layout, kwargs): uint8 through PyTorch's fixed-point separable kernels
    ((2, 3, 7, 9), "contiguous", dict(size=(12, 5))),
    ((2, 3, 7, 9), "contiguous", dict(scale_factor=2, align_corners=True)),
    ((2, 3, 7, 9), "contiguous", dict(scale_factor=(0.5, 0.3))),
    ((1, 5, 11, 13), "channels_last", dict(size=(6, 17))),  # C > 4: PyTorch's generic (non-AVX) kernel
    ((2, 3, 9, 17), "sliced", dict(scale_factor=1.7, align_corners=False)),
    ((1, 2, 1, 9), "channels_last", dict(scale_factor=2)),  # rows too few to transpose the width pass
    ((2, 3, 7, 9), "sliced", dict(scale_factor=(2, 2.0000001))),  # W: 2x in size, not in scale
    ((2, 3, 20, 40), "sliced", dict(size=(33, 70))),  # rows of whole uchar16 vectors and a tail
    ((1, 2, 64, 48), "contiguous", dict(scale_factor=0.25)),  # many taps with antialias
    ((2, 3, 8, 8), "contiguous", dict(scale_factor=2)),  # 2x: PyTorch's 0.25/0.75 weights at precision 14
    ((0, 3, 7, 9), "contiguous", dict(size=(5, 4))),  # empty batch
]


def _u8_pair(shape, layout):
    a = RNG.integers(0, 256, size=shape).astype(np.uint8)
    if a.size:
        a[0, 0, ::2] = 255  # hard edges: bicubic and lanczos overshoot, exercising the clamp
        a[0, 0, 1::2] = 0
    z, t = zyx.tensor(a), torch.tensor(a)
    if layout == "channels_last":
        return z.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2), t.contiguous(memory_format=torch.channels_last)
    if layout == "sliced":
        return z[:, :, 1:, ::2], t[:, :, 1:, ::2]
    return z, t


@pytest.mark.parametrize("antialias", [False, True])
@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_interpolate_uint8_bit_exact(mode, antialias):
    for shape, layout, kw in U8_CASES:
        z, t = _u8_pair(shape, layout)
        got = F.interpolate(z, mode=mode, antialias=antialias, **kw)
        want = TF.interpolate(t, mode=mode, antialias=antialias, **kw)
        assert got.dtype is zyx.uint8
        np.testing.assert_array_equal(got.numpy(), want.numpy(), err_msg=f"{shape} {layout} {kw}")


def test_interpolate_uint8_is_fixed_point_not_rounded_float():
    """PyTorch's uint8 result is not the float result rounded (int16 weights, a uint8 store between the
    two passes); zyx must reproduce those differences, not the float computation."""
    z, t = _u8_pair((2, 3, 13, 11), "contiguous")
    for mode, antialias in (("bilinear", False), ("bicubic", True), ("lanczos", True)):
        got = F.interpolate(z, size=(5, 19), mode=mode, antialias=antialias).numpy()
        want = TF.interpolate(t, size=(5, 19), mode=mode, antialias=antialias).numpy()
        rounded = TF.interpolate(t.double(), size=(5, 19), mode=mode, antialias=antialias).round().clamp(0, 255)
        np.testing.assert_array_equal(got, want)
        assert (got != rounded.numpy().astype(np.uint8)).any()
    same = F.interpolate(z, size=(13, 11), mode="bilinear")
    np.testing.assert_array_equal(same.numpy(), z.numpy())
    assert same._data is not z._data  # a copy, as PyTorch's


AA_CASES = [  # float antialias: (shape, kwargs); (1, 2, 60, 7) -> (3, 7) needs 41 taps (the reduce path)
    ((2, 3, 7, 9), dict(size=(12, 5))),
    ((2, 3, 16, 15), dict(scale_factor=0.4, align_corners=True)),
    ((1, 2, 60, 7), dict(size=(3, 7))),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_interpolate_antialias_float(dtype):
    tol = 1e-12 if dtype == "float64" else 2e-6
    for mode in ("bilinear", "bicubic", "lanczos"):
        for shape, kw in AA_CASES:
            if mode == "lanczos" and kw.get("align_corners"):
                continue
            z, t = _pair(shape, dtype)
            _close(F.interpolate(z, mode=mode, antialias=True, **kw),
                   TF.interpolate(t, mode=mode, antialias=True, **kw), rtol=tol, atol=tol * 10)


def test_interpolate_antialias_gradient():
    a = RNG.normal(size=(1, 2, 9, 8)).astype(np.float32)
    for mode in ("bilinear", "bicubic"):
        zx, tx = zyx.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
        zo = F.interpolate(zx, size=(4, 11), mode=mode, antialias=True)
        to = TF.interpolate(tx, size=(4, 11), mode=mode, antialias=True)
        g = RNG.normal(size=tuple(to.shape)).astype(np.float32)
        zo.backward(zyx.tensor(g))
        to.backward(torch.tensor(g))
        _close(zx.grad, tx.grad, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_interpolate_16bit_weights_as_pytorch(dtype):
    """PyTorch's generic kernel stores the weights in the 16-bit dtype; with them rounded alike the
    results agree bit for bit in 1-D, and in 2-D and 3-D up to the float32 summation order (a few elements
    one 16-bit step apart: seen on a trilinear element near zero, where the terms cancel)."""
    a = RNG.normal(size=(1, 2, 9, 8)) * 10
    z, t = zyx.tensor(a).cast(dtype), torch.tensor(a).to(getattr(torch, dtype))
    np.testing.assert_array_equal(F.interpolate(z[:, :, 0], size=150, mode="linear").cast("float32").numpy(),
                                  TF.interpolate(t[:, :, 0], size=150, mode="linear").float().numpy())
    eps = 2.0 ** (-10 if dtype == "float16" else -7)
    cases = [(z, t, dict(size=(70, 80), mode="bicubic")),
             (z, t, dict(size=(70, 80), mode="bilinear", align_corners=True)),
             (z.reshape(1, 2, 3, 3, 8), t.reshape(1, 2, 3, 3, 8), dict(size=(4, 5, 11), mode="trilinear"))]
    for zi, ti, kw in cases:
        got = F.interpolate(zi, **kw).cast("float32").numpy()
        want = TF.interpolate(ti, **kw).float().numpy()
        assert np.abs(got - want).max() <= eps * np.abs(a).max(), kw
        assert (got != want).mean() < 0.02, kw  # with unrounded weights ~40% of the elements differed


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


@pytest.mark.parametrize("inline_max", [0, 1 << 30])
def test_uint8_tables_in_the_program_or_uploaded(monkeypatch, inline_max):
    """A uint8 pass carries its index and weight tables as program constants up to ``INLINE_MAX`` entries (on
    CPUs) and uploads them with each call past it: both bit for bit PyTorch's, and a repeated resize allocates nothing
    but its output when the tables are constants."""
    from zyx.kernels import resample as resample_kernel
    from zyx.nn import functional_resample_separable as separable

    monkeypatch.setattr(resample_kernel, "INLINE_MAX", inline_max)
    a = RNG.integers(0, 256, size=(2, 3, 19, 23)).astype(np.uint8)
    x = zyx.tensor(a).realize()
    for kw in ({"size": (7, 40), "mode": "bilinear"}, {"size": (9, 11), "mode": "bicubic", "antialias": True}):
        want = TF.interpolate(torch.tensor(a), **kw).numpy()
        np.testing.assert_array_equal(F.interpolate(x, **kw).numpy(), want)
    F.interpolate(x, size=(7, 40), mode="bilinear").realize()
    zyx.synchronize()
    live = zyx.memory_stats(x.device)["live_buffers"]
    upload, uploads = separable.from_host, []
    monkeypatch.setattr(separable, "from_host", lambda *args: uploads.append(args) or upload(*args))
    F.interpolate(x, size=(7, 40), mode="bilinear").realize()
    inlined = inline_max and settings.heuristics_kind(x.device) == "cpu"
    assert len(uploads) == (0 if inlined else 4)  # two passes, two tables each
    zyx.synchronize()
    assert zyx.memory_stats(x.device)["live_buffers"] == live


def test_no_buffers_left_behind():
    """The uploaded index and weight tables live only as long as the kernels that read them."""
    x = zyx.tensor(RNG.normal(size=(1, 2, 5, 6)).astype(np.float32)).realize()
    u = zyx.tensor(RNG.integers(0, 256, size=(1, 2, 5, 6)).astype(np.uint8)).realize()
    zyx.synchronize()
    start = zyx.memory_stats()["live_buffers"]
    for _ in range(5):
        F.interpolate(x, size=(7, 9), mode="bicubic").realize()
        F.interpolate(x, scale_factor=2, mode="bilinear").realize()
        F.pad(x, (2, 2, 1, 1), mode="reflect").realize()
        x.repeat_interleave(zyx.tensor([1, 2, 0, 1, 3, 1]), 3).realize()
        F.interpolate(u, size=(7, 9), mode="bilinear", antialias=True).realize()  # uint8 passes
    zyx.synchronize()
    assert zyx.memory_stats()["live_buffers"] == start
