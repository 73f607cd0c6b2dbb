"""API.md "More elementwise, activations and comparisons": the inverse trig/hyperbolic family, expm1/log1p/log10,
atan2, hypot, fmod vs remainder, copysign, lerp, the finite/close tests and the logical ops, against PyTorch:
values over random and edge inputs (0, -0.0, +-inf, nan, tiny and huge magnitudes), float32/float64, 16-bit
floats and integers, broadcasting, scalars, empty tensors, and gradients."""
from __future__ import annotations

import zlib

import numpy as np
import pytest

import zyx

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.needs_device

RNG = np.random.default_rng(14)
EDGES = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -0.5, 2.0, 1e-38, -1e-30, 1e-45, 88.5, 100.0, 1e20,
         -1e20, 3e38]


def _values(dtype, n=600):
    x = np.concatenate([RNG.uniform(-3, 3, n), 10.0 ** RNG.uniform(-30, 30, n // 3),
                        -(10.0 ** RNG.uniform(-30, 30, n // 3)), RNG.uniform(-1, 1, n // 3) * 1e-4, EDGES])
    return x.astype(dtype)


def _check(z, t, rtol=1e-6, atol=0.0):
    got, want = z.numpy(), t.detach().numpy()
    assert got.shape == want.shape, (got.shape, want.shape)
    assert str(got.dtype) == str(want.dtype).replace("torch.", ""), (got.dtype, want.dtype)
    if got.dtype.kind == "f" or "float" in got.dtype.name:
        got, want = got.astype(np.float64), want.astype(np.float64)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        inf = np.isinf(want)
        np.testing.assert_array_equal(got[inf], want[inf])
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want)


UNARY = ["asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "expm1", "log1p", "log10"]
SHAPE_OPS = {"atan", "cosh", "atanh", "log1p"}  # one of each family: inverse trig, hyperbolic, its inverse, exp/log


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op", UNARY)
def test_unary_values(op, dtype):
    x = _values(dtype)
    z, t = zyx.tensor(x), torch.tensor(x)
    # atol: PyTorch flushes some denormal float32 results to 0 (log1p(1e-45))
    tol = {"rtol": 1e-6, "atol": 1e-37} if dtype == np.float32 else {"rtol": 1e-14}
    _check(getattr(zyx, op)(z), getattr(torch, op)(t), **tol)
    _check(getattr(z, op)(), getattr(t, op)(), **tol)


def test_sinh_cosh_near_overflow():
    # PyTorch's float32 sinh/cosh overflow to inf from 88.73 on its vector path but not on its scalar path (and
    # float64 likewise from 709.8): zyx is finite up to the true overflow, as NumPy
    x = np.array([88.9, -89.0, 89.4, 89.5], np.float32)
    for fn in ("sinh", "cosh"):
        got = getattr(zyx, fn)(zyx.tensor(x)).numpy()
        np.testing.assert_allclose(got[:3], getattr(np, fn)(x[:3].astype(np.float64)), rtol=1e-6)
    assert np.isinf(zyx.sinh(zyx.tensor(np.float32(89.5))).item())
    d = np.array([709.9, -710.0, 710.4])
    np.testing.assert_allclose(zyx.sinh(zyx.tensor(d)).numpy(), np.sinh(d), rtol=1e-14)


@pytest.mark.parametrize("op", UNARY)
def test_unary_dtypes_and_shapes(op):
    for tdt, zdt in ((torch.bfloat16, zyx.bfloat16), (torch.float16, zyx.float16)):
        x = torch.tensor(RNG.uniform(-0.9, 0.9, (3, 4)), dtype=torch.float32).to(tdt)
        if op == "acosh":
            x = x.abs() + 1
        z = zyx.tensor(x.float().numpy()).cast(zdt)
        got = getattr(zyx, op)(z)
        assert got.dtype == zdt
        # PyTorch computes 16-bit floats in float32 and rounds once: so does zyx (within the rounding of one ulp)
        np.testing.assert_allclose(got.cast(zyx.float32).numpy(), getattr(torch, op)(x).float().numpy(), rtol=1e-2)
    ints = np.array([[0, 1, 2], [-1, 3, 4]], dtype=np.int32)
    _check(getattr(zyx, op)(zyx.tensor(ints)), getattr(torch, op)(torch.tensor(ints)))
    if op in SHAPE_OPS:  # rank 0 and empty tensors: a shape question, once per family
        for shape in [(), (0,), (2, 0, 3)]:
            x = RNG.uniform(0.1, 0.9, shape).astype(np.float32)
            _check(getattr(zyx, op)(zyx.tensor(x)), getattr(torch, op)(torch.tensor(x)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_atan2_all_quadrants(dtype):
    v = _values(dtype, 150)
    a, b = np.meshgrid(v[::3], v[1::3])
    z = zyx.atan2(zyx.tensor(a), zyx.tensor(b))
    # atol: tiny quotients have denormal results, a few ulp of 1e-45 apart
    _check(z, torch.atan2(torch.tensor(a), torch.tensor(b)), rtol=1e-6 if dtype == np.float32 else 1e-14,
           atol=1e-37 if dtype == np.float32 else 0.0)
    _check(zyx.tensor(a).atan2(zyx.tensor(b[:1])), torch.tensor(a).atan2(torch.tensor(b[:1])),
           rtol=1e-6 if dtype == np.float32 else 1e-14)
    _check(zyx.atan2(zyx.tensor(a), 2.0), torch.atan2(torch.tensor(a), torch.tensor(2.0, dtype=torch.tensor(a).dtype)),
           rtol=1e-6 if dtype == np.float32 else 1e-14)


def test_atan2_int_promotes():
    a, b = np.array([1, -2, 0, 3]), np.array([[2], [-1]])
    _check(zyx.atan2(zyx.tensor(a), zyx.tensor(b)), torch.atan2(torch.tensor(a), torch.tensor(b)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_hypot(dtype):
    v = _values(dtype, 150)
    a, b = np.meshgrid(v[::3], v[1::3])
    _check(zyx.hypot(zyx.tensor(a), zyx.tensor(b)), torch.hypot(torch.tensor(a), torch.tensor(b)), rtol=1e-6,
           atol=1e-37 if dtype == np.float32 else 0.0)
    _check(zyx.tensor(a).hypot(zyx.tensor(b[:, :1])), torch.tensor(a).hypot(torch.tensor(b[:, :1])), rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fmod_and_remainder_float(dtype):
    a = np.concatenate([RNG.uniform(-10, 10, 200), [0.0, -0.0, 4.0, -4.0, np.inf, -np.inf, np.nan, 5.5, -5.5, 1e30]])
    b = np.concatenate([RNG.uniform(-3, 3, 200), [2.0, 2.0, 2.0, -2.0, 2.0, 3.0, 1.0, np.inf, -np.inf, 0.0]])
    a, b = a.astype(dtype), b.astype(dtype)
    za, zb, ta, tb = zyx.tensor(a), zyx.tensor(b), torch.tensor(a), torch.tensor(b)
    got = zyx.fmod(za, zb)
    _check(got, torch.fmod(ta, tb), rtol=0)
    real = ~np.isnan(got.numpy())  # (NaN's sign is unspecified)
    np.testing.assert_array_equal(np.signbit(got.numpy())[real], np.signbit(torch.fmod(ta, tb).numpy())[real])
    _check(za.fmod(1.5), ta.fmod(1.5), rtol=0)
    _check(za.fmod(-1.5), ta.fmod(-1.5), rtol=0)
    _check(zyx.remainder(za, zb), torch.remainder(ta, tb), rtol=1e-6)
    _check(za.remainder(-1.5), ta.remainder(-1.5), rtol=1e-6)
    # the two differ exactly where the operands' signs differ
    assert (zyx.fmod(zyx.tensor(-7.0), 3.0).item(), zyx.remainder(zyx.tensor(-7.0), 3.0).item()) == (-1.0, 2.0)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8, np.int8])
def test_fmod_and_remainder_int(dtype):
    lo = 0 if dtype == np.uint8 else -20
    a = RNG.integers(lo, 20, (4, 5)).astype(dtype)
    b = RNG.integers(1, 7, (5,)).astype(dtype) * (1 if dtype == np.uint8 else RNG.choice([-1, 1], 5).astype(dtype))
    za, zb, ta, tb = zyx.tensor(a), zyx.tensor(b), torch.tensor(a), torch.tensor(b)
    _check(zyx.fmod(za, zb), torch.fmod(ta, tb))
    _check(za.fmod(3), ta.fmod(3))
    _check(zyx.remainder(za, zb), torch.remainder(ta, tb))
    with pytest.raises(ZeroDivisionError):
        zyx.fmod(za, 0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_copysign(dtype):
    v = _values(dtype, 60)
    a, b = np.meshgrid(v, np.array([1.0, -1.0, 0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan], dtype=dtype))
    got = zyx.copysign(zyx.tensor(a), zyx.tensor(b))
    want = torch.copysign(torch.tensor(a), torch.tensor(b))
    _check(got, want, rtol=0)
    np.testing.assert_array_equal(np.signbit(got.numpy()), np.signbit(want.numpy()))
    _check(zyx.tensor(a).copysign(-2.0), torch.tensor(a).copysign(-2.0), rtol=0)
    i, f = np.array([1, -2, 3]), np.array([-1, 1, -0.0], dtype)
    _check(zyx.copysign(zyx.tensor(i), zyx.tensor(f)), torch.copysign(torch.tensor(i), torch.tensor(f)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_lerp(dtype, request):
    # Data seeded from the test's own id: the module RNG's draw would depend on which tests ran before
    # (xdist distributes them differently each run).
    rng = np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))
    s, e = rng.normal(size=(3, 4)).astype(dtype), rng.normal(size=(4,)).astype(dtype)
    w = rng.uniform(-1, 2, (3, 4)).astype(dtype)
    zs, ze, ts, te = zyx.tensor(s), zyx.tensor(e), torch.tensor(s), torch.tensor(e)
    # Same formula as PyTorch (from the nearer end), but PyTorch's CPU kernel fuses the multiply-add (one
    # rounding) where the kernel rounds the product first: up to an ulp of |w * (e - s)| apart, which rtol
    # alone cannot bound where the result cancels to near zero.
    ew = np.broadcast_to(e, (3, 4))
    bound = 2 * np.finfo(dtype).eps * (np.abs(s) + np.abs(ew) + np.abs(w * (ew - s)))
    got = zyx.lerp(zs, ze.expand(3, 4), zyx.tensor(w)).numpy()
    want = torch.lerp(ts, te.expand(3, 4), torch.tensor(w)).numpy()
    assert got.dtype == want.dtype
    assert (np.abs(got - want) <= 1e-6 * np.abs(want) + bound).all(), (got, want)
    for wv in (0.0, 0.25, 0.5, 0.75, 1.0, 1.5):  # w or 1 - w a power of two: the product is exact, fused or not
        _check(zs.lerp(ze.expand(3, 4), wv), ts.lerp(te.expand(3, 4), wv), rtol=1e-6)


def test_isfinite_nan_to_num():
    for dtype in (np.float32, np.float64):
        x = _values(dtype, 30)
        z, t = zyx.tensor(x), torch.tensor(x)
        _check(zyx.isfinite(z), torch.isfinite(t))
        _check(z.isfinite(), t.isfinite())
        _check(zyx.nan_to_num(z), torch.nan_to_num(t), rtol=0)
        _check(z.nan_to_num(nan=1.5, posinf=7.0, neginf=-8.0), t.nan_to_num(nan=1.5, posinf=7.0, neginf=-8.0), rtol=0)
    b = torch.tensor([np.nan, np.inf, -np.inf, 1.0]).to(torch.bfloat16)
    zb = zyx.tensor(np.array([np.nan, np.inf, -np.inf, 1.0], np.float32)).cast(zyx.bfloat16)
    np.testing.assert_array_equal(zyx.nan_to_num(zb).cast(zyx.float32).numpy(), torch.nan_to_num(b).float().numpy())
    i = np.array([1, -2, 3])
    _check(zyx.isfinite(zyx.tensor(i)), torch.isfinite(torch.tensor(i)))
    _check(zyx.nan_to_num(zyx.tensor(i)), torch.nan_to_num(torch.tensor(i)))
    _check(zyx.isfinite(zyx.tensor(np.zeros((0, 2), np.float32))), torch.isfinite(torch.zeros(0, 2)))


def test_isclose_allclose():
    a = np.array([1.0, 1.0 + 1e-6, 1.0 + 1e-3, np.nan, np.inf, -np.inf, np.inf, 0.0, 1e-9, np.nan], np.float32)
    b = np.array([1.0, 1.0, 1.0, np.nan, np.inf, np.inf, 1e38, 1e-9, 0.0, 1.0], np.float32)
    za, zb, ta, tb = zyx.tensor(a), zyx.tensor(b), torch.tensor(a), torch.tensor(b)
    for kw in ({}, {"equal_nan": True}, {"rtol": 0.0, "atol": 0.0}, {"rtol": 1e-2, "atol": 0.0},
               {"atol": 1e-8, "rtol": 0.0, "equal_nan": True}):
        _check(zyx.isclose(za, zb, **kw), torch.isclose(ta, tb, **kw))
        _check(za.isclose(zb, **kw), ta.isclose(tb, **kw))
    ints = np.array([1, 2, 3]), np.array([1, 3, 3])
    _check(zyx.isclose(zyx.tensor(ints[0]), zyx.tensor(ints[1])), torch.isclose(*map(torch.tensor, ints)))
    _check(zyx.isclose(zyx.tensor(a[:3]), zyx.tensor(b[:1])), torch.isclose(ta[:3], tb[:1]))
    assert zyx.allclose(zyx.tensor(a[:2]), zyx.tensor(b[:2])) is True
    assert zyx.allclose(za, zb) is False
    assert zyx.tensor(a[3:5]).allclose(zyx.tensor(b[3:5]), equal_nan=True) is True
    assert zyx.allclose(zyx.zeros(0), zyx.zeros(0)) is True


def test_logical_ops():
    a = np.array([[0, 1, -2, 0]], np.int32)
    b = np.array([[0.0], [np.nan], [0.5]], np.float32)
    c = np.array([True, False, True, False])
    for fn in ("logical_and", "logical_or", "logical_xor"):
        _check(getattr(zyx, fn)(zyx.tensor(a), zyx.tensor(b)), getattr(torch, fn)(torch.tensor(a), torch.tensor(b)))
        _check(getattr(zyx.tensor(c), fn)(zyx.tensor(a)), getattr(torch.tensor(c), fn)(torch.tensor(a)))
        _check(getattr(zyx, fn)(zyx.tensor(c), zyx.tensor(c[::-1].copy())),
               getattr(torch, fn)(torch.tensor(c), torch.tensor(c[::-1].copy())))
        _check(getattr(zyx, fn)(zyx.zeros(0), zyx.zeros(0)), getattr(torch, fn)(torch.zeros(0), torch.zeros(0)))


# ------------------------------------------------------------------ gradients

GRAD_DOMAIN = {"acosh": (1.1, 4.0), "asin": (-0.95, 0.95), "acos": (-0.95, 0.95), "atanh": (-0.95, 0.95),
               "log1p": (-0.9, 4.0), "log10": (0.1, 4.0)}


def _grad_pair(dtype, shape, lo=-3.0, hi=3.0):
    x = RNG.uniform(lo, hi, shape).astype(dtype)
    return zyx.tensor(x).requires_grad_(), torch.tensor(x, requires_grad=True)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op", UNARY)
def test_unary_gradients(op, dtype):
    z, t = _grad_pair(dtype, (3, 5), *GRAD_DOMAIN.get(op, (-3.0, 3.0)))
    gz = zyx.tensor(RNG.normal(size=(3, 5)).astype(dtype))
    getattr(z, op)().backward(gz)
    getattr(t, op)().backward(torch.tensor(gz.numpy()))
    np.testing.assert_allclose(z.grad.numpy(), t.grad.numpy(), rtol=1e-5 if dtype == np.float32 else 1e-12,
                               atol=1e-6 if dtype == np.float32 else 1e-12)


def test_large_input_gradients_are_finite():
    z = zyx.tensor(np.array([100.0, -100.0, 0.0], np.float32)).requires_grad_()
    t = torch.tensor([100.0, -100.0, 0.0], requires_grad=True)
    zyx.expm1(z).sum().backward()
    torch.expm1(t).sum().backward()
    _check(z.grad, t.grad, rtol=1e-6, atol=1e-37)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op", ["atan2", "hypot", "fmod", "remainder", "copysign", "lerp"])
def test_binary_gradients(op, dtype):
    za, ta = _grad_pair(dtype, (3, 4))
    zb, tb = _grad_pair(dtype, (4,), 0.5, 2.0)
    if op == "copysign":
        zb, tb = _grad_pair(dtype, (4,))
    if op == "lerp":
        zw, tw = _grad_pair(dtype, (3, 4), -0.5, 1.5)
        zo, to = zyx.lerp(za, zb.expand(3, 4), zw), torch.lerp(ta, tb.expand(3, 4), tw)
    else:
        zo, to = getattr(zyx, op)(za, zb), getattr(torch, op)(ta, tb)
    g = RNG.normal(size=(3, 4)).astype(dtype)
    zo.backward(zyx.tensor(g))
    to.backward(torch.tensor(g))
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(za.grad.numpy(), ta.grad.numpy(), rtol=tol, atol=tol)
    # copysign's sign source gets zeros (a tensor, not None), as PyTorch
    np.testing.assert_allclose(zb.grad.numpy(), tb.grad.numpy(), rtol=tol, atol=tol)
    if op == "lerp":
        np.testing.assert_allclose(zw.grad.numpy(), tw.grad.numpy(), rtol=tol, atol=tol)


def test_nan_to_num_gradient():
    x = np.array([1.0, np.nan, np.inf, -np.inf, -2.0], np.float32)
    z, t = zyx.tensor(x).requires_grad_(), torch.tensor(x, requires_grad=True)
    (zyx.nan_to_num(z) * 3.0).sum().backward()
    (torch.nan_to_num(t) * 3.0).sum().backward()
    _check(z.grad, t.grad)


def test_second_derivative_through_custom_rule():
    x = np.array([0.3, -0.2, 0.7])
    z, t = zyx.tensor(x).requires_grad_(), torch.tensor(x, requires_grad=True)
    (gz,) = zyx.autograd.grad(zyx.asinh(z).sum(), z, create_graph=True)
    (gt,) = torch.autograd.grad(torch.asinh(t).sum(), t, create_graph=True)
    gz.sum().backward()
    gt.sum().backward()
    np.testing.assert_allclose(z.grad.numpy(), t.grad.numpy(), rtol=1e-12)
