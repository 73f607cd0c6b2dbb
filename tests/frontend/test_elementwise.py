"""Elementwise ops against PyTorch CPU (NumPy when torch is missing): values, dtypes, broadcasting."""
from __future__ import annotations

import numpy as np
import pytest

import zyx

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)
SHAPES = [(), (1,), (7,), (3, 5), (2, 1, 4), (0, 3)]


def _rand(shape, dtype=np.float32, lo=-3, hi=3):
    if np.dtype(dtype).kind == "f":
        return RNG.uniform(lo, hi, size=shape).astype(dtype)
    if np.dtype(dtype).kind == "b":
        return RNG.integers(0, 2, size=shape).astype(bool)
    return RNG.integers(lo, hi, size=shape).astype(dtype)


def _check(z, t, rtol=1e-5, atol=1e-6):
    got = z.numpy()
    want = t.numpy()
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    if got.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want)


UNARY = ["exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "tan", "tanh", "sigmoid", "relu", "silu",
         "erf", "reciprocal", "floor", "ceil", "round", "trunc", "sign", "square", "abs", "neg", "isnan", "isinf"]


@pytest.mark.parametrize("op", UNARY)
def test_unary_float32(op):
    a = _rand((3, 5))
    if op in ("log", "log2", "sqrt", "rsqrt"):
        a = np.abs(a) + 0.1
    a[0, 0] = np.nan
    z, t = zyx.tensor(a), torch.tensor(a)
    zf = (lambda x: -x) if op == "neg" else (lambda x: getattr(x, op)())
    tf = (lambda x: -x) if op == "neg" else (lambda x: getattr(torch, op, None)(x) if hasattr(torch, op)
                                              else getattr(torch.nn.functional, op)(x))
    _check(zf(z), tf(t), rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu(approximate):
    a = _rand((4, 6))
    _check(zyx.tensor(a).gelu(approximate=approximate),
           torch.nn.functional.gelu(torch.tensor(a), approximate=approximate), rtol=1e-5, atol=1e-6)
    # the infinities, NaN and huge values (x**3 overflows in the tanh form), in every float dtype: -inf gives
    # NaN (-inf * 0, as PyTorch in both modes), +inf gives +inf. Compared with PyTorch one element at a time:
    # its vectorized exact float32/bfloat16 kernel returns NaN for +inf in a contiguous tensor of 2+ elements
    # (but inf for one element, a strided tensor, float64 and float16), a layout artifact zyx does not copy.
    vals = [-np.inf, np.inf, np.nan, -1e30, 1e30]
    for zd, td in ((zyx.float32, torch.float32), (zyx.float64, torch.float64), (zyx.float16, torch.float16),
                   (zyx.bfloat16, torch.bfloat16)):
        got = zyx.tensor(np.array(vals)).cast(zd).gelu(approximate=approximate).cast(zyx.float64).numpy()
        want = [torch.nn.functional.gelu(torch.tensor(v, dtype=td), approximate=approximate).double().item()
                for v in vals]
        np.testing.assert_array_equal(got, want, err_msg=f"{zd} {approximate}")
        assert np.isnan(got[0]) and got[1] == np.inf


BINARY = ["add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "eq", "ne", "lt", "le", "gt", "ge"]


@pytest.mark.parametrize("op", BINARY)
def test_binary_broadcast_float32(op):
    a, b = _rand((3, 1, 5)), _rand((4, 1))
    if op == "pow":
        a = np.abs(a)
    if op in ("floordiv", "mod", "truediv"):
        b[np.abs(b) < 0.2] = 0.5
    f = getattr(__import__("operator"), op)
    _check(f(zyx.tensor(a), zyx.tensor(b)), f(torch.tensor(a), torch.tensor(b)), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("op", ["add", "sub", "mul", "floordiv", "mod", "and", "or", "xor"])
def test_binary_int_with_negatives(op):
    a, b = _rand((6, 4), np.int32, -9, 9), _rand((4,), np.int32, -5, 5)
    b[b == 0] = 3
    f = getattr(__import__("operator"), op + ("_" if op in ("and", "or") else ""))
    _check(f(zyx.tensor(a), zyx.tensor(b)), f(torch.tensor(a), torch.tensor(b)))


@pytest.mark.parametrize("shape", SHAPES)
def test_shapes_and_scalars_both_sides(shape):
    a = _rand(shape)
    z, t = zyx.tensor(a), torch.tensor(a)
    _check(2.5 - z * 3 + 1, 2.5 - t * 3 + 1)
    _check((1 / (z + 10)) ** 2, (1 / (t + 10)) ** 2, rtol=1e-5)


def test_mixed_dtypes_promote_like_torch():
    i = _rand((3, 4), np.int32, -5, 5)
    f = _rand((3, 4))
    h = _rand((3, 4), np.float16)
    zi, zf, zh = zyx.tensor(i), zyx.tensor(f), zyx.tensor(h)
    ti, tf, th = torch.tensor(i), torch.tensor(f), torch.tensor(h)
    _check(zi + zf, ti + tf)
    _check(zi * 2.5, ti * 2.5)
    _check(zi / 2, ti / 2)
    _check(zh + zi, th + ti, rtol=1e-3)
    _check(zi + True, ti + True)
    _check(zi.exp(), ti.exp(), rtol=1e-5)
    b = zyx.tensor(i > 0)
    _check(b & zyx.tensor(i < 3), torch.tensor(i > 0) & torch.tensor(i < 3))
    _check(~b, ~torch.tensor(i > 0))
    _check(~zi, ~ti)
    _check(b.logical_not(), torch.tensor(i > 0).logical_not())


def test_non_contiguous_inputs():
    a = _rand((6, 8))
    z, t = zyx.tensor(a), torch.tensor(a)
    _check(z.T[::2] * z[::-1, 1::3].reshape(-1)[:3].sum(),
           t.T[::2] * torch.flip(t, [0])[:, 1::3].reshape(-1)[:3].sum(), rtol=1e-5)
    _check(z.T.exp() + z.T, t.T.exp() + t.T)


def test_where_clip_maximum_minimum():
    a, b = _rand((4, 5)), _rand((5,))
    a[1, 1] = np.nan
    z, t = zyx.tensor(a), torch.tensor(a)
    zb, tb = zyx.tensor(b), torch.tensor(b)
    _check(zyx.where(z > 0, z, zb), torch.where(t > 0, t, tb))
    _check(zyx.where(z > 0, z, 0.0), torch.where(t > 0, t, 0.0))
    _check(z.clip(-1, 1), t.clip(-1, 1))
    _check(zyx.maximum(z, zb), torch.maximum(t, tb))
    _check(zyx.minimum(z, zb), torch.minimum(t, tb))
    _check(z.pow(2), t.pow(2))


@pytest.mark.parametrize("dt", ["bfloat16", "float16"])
def test_16bit_fused_matches_torch_bit_for_bit(dt, bits_equal):
    a, b = _rand((64, 33)), _rand((64, 33))
    ta, tb = torch.tensor(a).to(getattr(torch, dt)), torch.tensor(b).to(getattr(torch, dt))
    za, zb = zyx.tensor(ta.float().numpy()).cast(dt), zyx.tensor(tb.float().numpy()).cast(dt)
    cases = [(za * zb + za, ta * tb + ta),
             ((za - zb) * (za + zb) / (zb * zb + 1), (ta - tb) * (ta + tb) / (tb * tb + 1)),
             ((za * 0.3 - 2.5) * zb + 7, (ta * 0.3 - 2.5) * tb + 7)]
    for zr, tr in cases:
        assert zr.dtype.name == dt
        bits_equal(zr.cast("float32").numpy(), tr.float().numpy())
    # transcendental ops compute in float32 and round once: nearly always the same bits
    got = (za.abs() * 3 + 1).sqrt().exp().cast("float32").numpy()
    want = (ta.abs() * 3 + 1).sqrt().exp().float().numpy()
    assert np.mean(got != want) < 0.02


def test_scalar_rank0_and_empty():
    z = zyx.tensor(3.0)
    assert (z * 2).item() == 6.0
    e = zyx.zeros(0, 3) + 1
    assert e.numpy().shape == (0, 3)


def test_bad_operands_raise():
    z = zyx.tensor([1.0, 2.0])
    with pytest.raises(zyx.ShapeError):
        z + zyx.tensor([1.0, 2.0, 3.0])
    with pytest.raises(TypeError):
        z + "a"
    with pytest.raises(zyx.DTypeError):
        z & z


SCALAR_OPS = {
    "x+s": (lambda x, s: x + s), "s-x": (lambda x, s: s - x), "x*s": (lambda x, s: x * s),
    "x/s": (lambda x, s: x / s), "x//s": (lambda x, s: x // s),
    "x%s": (lambda x, s: x % s), "s%x": (lambda x, s: s % x), "|x|**s": (lambda x, s: abs(x) ** s),
    "x<=s": (lambda x, s: x <= s), "x==s": (lambda x, s: x == s),
}


@pytest.mark.parametrize("dt", ["bfloat16", "float16"])
@pytest.mark.parametrize("name", list(SCALAR_OPS))
def test_16bit_tensor_with_python_float_matches_torch_bit_for_bit(dt, name):
    """PyTorch rounds the Python number to the tensor's 16-bit dtype first for some ops (+, -,
    comparisons, %, **, s // x) and not for others (*, /, x // s); zyx does the same. (s // x
    also rounds the scalar; its float32 quotient can tie between two 16-bit values, where
    PyTorch's rounding differs in ~1 of 4000 elements, so it is left out here.)"""
    fn = SCALAR_OPS[name]
    t = torch.tensor(_rand((4099,), lo=-4, hi=4)).to(getattr(torch, dt))
    t[:3] = torch.tensor([0.1, 0.30078125, -1.1])
    z = zyx.tensor(t.float().numpy()).cast(dt)
    for s in (0.1, 1.1, -2.3):
        want = fn(t, s)
        got = fn(z, s).numpy()
        want = want.numpy() if want.dtype == torch.bool else want.float().numpy()
        got = got if got.dtype == bool else got.astype(np.float32)
        np.testing.assert_array_equal(np.nan_to_num(got, nan=7.0), np.nan_to_num(want, nan=7.0),
                                      err_msg=f"{name} s={s}")


@pytest.mark.parametrize("np_dt", [np.float32, np.float64])
def test_signed_zeros_and_nans_in_maximum_minimum_clip_and_mod_match_pytorch(np_dt):
    """Between -0.0 and 0.0 maximum/minimum return the second operand (as NumPy and PyTorch's
    vectorized loops; 256 elements keep PyTorch off its scalar tail loop, which returns the first)
    and clip keeps the input, NaN wins from either side, and a float % that lands on zero keeps
    the dividend's sign: bit for bit as PyTorch."""
    nan = float("nan")
    a = np.tile(np.array([-0.0, 0.0, -0.0, 0.0, nan, 1.0, -4.0, 4.0, -3.0, 2.5, 0.0, -0.0, 7.0, nan, -1.0, 0.0],
                         np_dt), 16)
    b = np.tile(np.array([0.0, -0.0, -0.0, 0.0, 1.0, nan, 2.0, -2.0, 1.5, -0.5, 0.0, 0.0, 7.0, nan, -1.0, -0.0],
                         np_dt), 16)
    za, zb, ta, tb = zyx.tensor(a), zyx.tensor(b), torch.tensor(a), torch.tensor(b)
    bits = {np.float32: np.uint32, np.float64: np.uint64}[np_dt]

    def same(z, t):
        got, want = z.numpy(), t.numpy()
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        ok = ~np.isnan(want)
        np.testing.assert_array_equal(got[ok].view(bits), want[ok].view(bits))

    same(zyx.maximum(za, zb), torch.maximum(ta, tb))
    same(zyx.minimum(za, zb), torch.minimum(ta, tb))
    same(za.clip(0.0, None), torch.clamp(ta, min=0.0))
    same(za.clip(None, 0.0), torch.clamp(ta, max=0.0))
    same(za.clip(-0.0, 0.0), torch.clamp(ta, min=-0.0, max=0.0))
    same(za % zb, ta % tb)


@pytest.mark.parametrize("zdt,tdt", [("bfloat16", "bfloat16"), ("float16", "float16")])
def test_16_bit_ops_with_python_numbers_and_0d_tensors_match_pytorch_bits(zdt, tdt):
    """Which scalar PyTorch rounds to the 16-bit dtype first: a Python number for + - comparisons
    % ** max (not for * / //, but for ``s // x``; ``s / x`` is ``x.reciprocal() * s``), and a 0-d
    float32/float64 tensor everywhere except on the right of * / //."""
    xs = np.array([100.0, 1.0, 3.0, -7.25, 0.3, 2.5, 0.07, -0.0], np.float32)  # no s // x ties (see notes)
    x, zx = torch.tensor(xs).to(getattr(torch, tdt)), zyx.tensor(xs).cast(zdt)
    ops = {"mul": lambda a, b: a * b, "rmul": lambda a, b: b * a, "div": lambda a, b: a / b,
           "rdiv": lambda a, b: b / a, "add": lambda a, b: a + b, "rsub": lambda a, b: b - a,
           "floordiv": lambda a, b: a // b, "rfloordiv": lambda a, b: b // a, "pow": lambda a, b: a ** b,
           "lt": lambda a, b: a < b, "mod": lambda a, b: a % b}
    for v in (1.006, 0.3, -2.7, 0.29):
        for kind in ("python", "float32", "float64"):
            s, zs = (v, v) if kind == "python" else (torch.tensor(v, dtype=getattr(torch, kind)),
                                                      zyx.tensor(np.array(v)).cast(kind))
            for name, f in ops.items():
                t, z = f(x, s), f(zx, zs)
                want = t.numpy() if t.dtype == torch.bool else t.float().numpy()
                got = z.numpy() if z.dtype == zyx.bool else z.cast("float32").numpy()
                np.testing.assert_array_equal(np.nan_to_num(got, nan=7), np.nan_to_num(want, nan=7),
                                              err_msg=f"{zdt} {kind} {name} {v}")


@pytest.mark.parametrize("dt,decimals", [("float32", 2), ("float32", -1), ("float64", 3), ("float16", 1),
                                         ("bfloat16", 1), ("float32", 0)])
def test_round_decimals_as_pytorch(dt, decimals):
    """``round(decimals=)`` scales by 10**|decimals| in the input's dtype, as ``torch.round``."""
    t = torch.tensor(RNG.uniform(-300, 300, (4, 9))).to(getattr(torch, dt))
    z = zyx.tensor(t.double().numpy()).cast(dt)
    want = t.round(decimals=decimals)
    for got in (z.round(decimals=decimals), zyx.round(z, decimals)):
        assert got.dtype.name == dt
        np.testing.assert_array_equal(got.cast("float64").numpy(), want.double().numpy())


def test_round_decimals_of_an_integer_tensor_raises():
    with pytest.raises(zyx.DTypeError, match="floating point"):
        zyx.tensor([1, 2]).round(decimals=1)
    _check(zyx.tensor([1, 2]).round(), torch.tensor([1, 2]).round())
