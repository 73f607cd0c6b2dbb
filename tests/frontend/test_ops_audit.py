"""Fixes from a user-perspective audit of the op surface against PyTorch 2.13 CPU: error types PyTorch
code catches, PyTorch keyword arguments and PyTorch-named methods, compared on random data."""
from __future__ import annotations

import numpy as np
import pytest

import zyx

torch = pytest.importorskip("torch")
RNG = np.random.default_rng(7)
pytestmark = pytest.mark.needs_device


def _close(z, t, rtol=1e-6, atol=1e-6):
    got, want = z.numpy(), t.numpy()
    assert got.shape == want.shape, (got.shape, want.shape)
    assert z.dtype.name == str(t.dtype).replace("torch.", ""), (z.dtype.name, t.dtype)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol)


@pytest.mark.parametrize("call", [
    lambda x: x.cumsum(1), lambda x: x.cumprod(-2), lambda x: x.cummax(3), lambda x: x.logcumsumexp(2),
    lambda x: x.flip(2), lambda x: x.roll(1, 5),
], ids=["cumsum", "cumprod", "cummax", "logcumsumexp", "flip", "roll"])
def test_contract_dim_out_of_range_is_index_error(call):
    # API.md: a dim out of range is an IndexError (PyTorch code catches that), still a ContractError
    x = zyx.zeros(3)
    with pytest.raises(IndexError, match="out of range"):
        call(x)
    with pytest.raises(zyx.ContractError):
        call(x)
    with pytest.raises(zyx.ShapeError):
        call(x)


def test_contract_rank0_dim_is_index_error():
    with pytest.raises(IndexError, match="rank 0"):
        zyx.tensor(1.0).flip(1)
    _close(zyx.tensor(1.0).flip(0), torch.tensor(1.0).flip(0))  # dim 0 / -1 of a scalar: allowed, as PyTorch 2.13
    _close(zyx.tensor(2.5).cumsum(0), torch.tensor(2.5).cumsum(0))  # dim 0 of a scalar is allowed, as PyTorch


def test_flip_repeated_dim_is_runtime_error():
    with pytest.raises(RuntimeError, match="names an axis twice"):
        zyx.zeros(3, 4).flip((1, 1))
    with pytest.raises(zyx.ContractError):
        zyx.zeros(3, 4).flip((0, -2))


DIV_VALUES = [[5, 6, 7, 0, -5, -6, -7, 110, -111], [1, -3, 2, -2, 3, -10, 5, 55, -55]]


@pytest.mark.parametrize("mode", [None, "trunc", "floor"])
@pytest.mark.parametrize("dtype", ["int32", "int64", "float32"])
def test_div_rounding_mode(mode, dtype):
    a, b = (np.array(v, dtype=dtype) for v in DIV_VALUES)
    _close(zyx.tensor(a).div(zyx.tensor(b), rounding_mode=mode),
           torch.tensor(a).div(torch.tensor(b), rounding_mode=mode))
    _close(zyx.tensor(a).div(-3, rounding_mode=mode), torch.tensor(a).div(-3, rounding_mode=mode))
    # a non-contiguous (permuted, expanded) int8 dividend with a float16 divisor: promotion as PyTorch
    x = RNG.integers(-100, 100, size=(4, 3)).astype(np.int8)
    y = (RNG.uniform(0.5, 4, size=(4,)) * RNG.choice([-1, 1], size=4)).astype(np.float16)
    _close(zyx.tensor(x).T.div(zyx.tensor(y), rounding_mode=mode),
           torch.tensor(x).T.div(torch.tensor(y), rounding_mode=mode), rtol=1e-3, atol=1e-3)


def test_div_rounding_mode_errors_and_empty():
    with pytest.raises(RuntimeError, match="rounding_mode"):
        zyx.ones(3).div(2, rounding_mode="typo")
    _close(zyx.zeros(0, 3, dtype=zyx.int32).div(2, rounding_mode="trunc"),
           torch.zeros(0, 3, dtype=torch.int32).div(2, rounding_mode="trunc"))
    assert zyx.Tensor.divide is zyx.Tensor.div


def test_div_trunc_gradient():
    # trunc/floor quotients are piecewise constant: zero gradient, as PyTorch
    a = RNG.normal(size=(3, 4)).astype(np.float32)
    za, ta = zyx.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    (za.div(0.7, rounding_mode="trunc") + za.div(2.0)).sum().backward()
    (ta.div(0.7, rounding_mode="trunc") + ta.div(2.0)).sum().backward()
    np.testing.assert_allclose(za.grad.numpy(), ta.grad.numpy(), rtol=1e-6)


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int16", "int64"])
def test_bitwise_names(dtype):
    a = RNG.integers(0 if dtype in ("bool", "uint8") else -50, 2 if dtype == "bool" else 100, size=(3, 5)).astype(dtype)
    b = RNG.integers(0 if dtype in ("bool", "uint8") else -50, 2 if dtype == "bool" else 100, size=(5,)).astype(dtype)
    za, zb, ta, tb = zyx.tensor(a), zyx.tensor(b), torch.tensor(a), torch.tensor(b)
    _close(za.bitwise_not(), ta.bitwise_not())
    _close(za.T.bitwise_not(), ta.T.bitwise_not())
    for name in ("bitwise_and", "bitwise_or", "bitwise_xor"):
        _close(getattr(za, name)(zb), getattr(ta, name)(tb))


def test_bitwise_not_float_is_dtype_error():
    with pytest.raises(zyx.DTypeError):
        zyx.ones(3).bitwise_not()


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_logaddexp(dtype):
    a = (RNG.normal(size=(4, 6)) * 30).astype(dtype)
    b = (RNG.normal(size=(6,)) * 30).astype(dtype)
    tol = 2e-3 if dtype == "float16" else 1e-5
    _close(zyx.tensor(a).logaddexp(zyx.tensor(b)), torch.tensor(a).logaddexp(torch.tensor(b)), rtol=tol, atol=tol)
    _close(zyx.tensor(a).T.logaddexp2(zyx.tensor(a).T), torch.tensor(a).T.logaddexp2(torch.tensor(a).T),
           rtol=tol, atol=tol)
    with pytest.raises(zyx.DTypeError, match="floating-point"):
        zyx.tensor([1, 2]).logaddexp(zyx.tensor([3, 4]))


def test_logaddexp_extremes_and_gradient():
    inf, nan = float("inf"), float("nan")
    a = np.array([inf, -inf, inf, -inf, 1e30, -1e30, nan, 0.0, 3.0], dtype=np.float32)
    b = np.array([inf, -inf, -inf, 2.0, 1e30, -1e30, 1.0, -0.0, -4.0], dtype=np.float32)
    _close(zyx.tensor(a).logaddexp(zyx.tensor(b)), torch.tensor(a).logaddexp(torch.tensor(b)))
    _close(zyx.tensor(a).logaddexp2(zyx.tensor(b)), torch.tensor(a).logaddexp2(torch.tensor(b)))
    x, y = RNG.normal(size=(5,)).astype(np.float32), RNG.normal(size=(5,)).astype(np.float32)
    zx, zy = zyx.tensor(x, requires_grad=True), zyx.tensor(y, requires_grad=True)
    tx, ty = torch.tensor(x, requires_grad=True), torch.tensor(y, requires_grad=True)
    zx.logaddexp(zy).sum().backward()
    tx.logaddexp(ty).sum().backward()
    np.testing.assert_allclose(zx.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(zy.grad.numpy(), ty.grad.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["var", "std"])
def test_var_std_correction_at_least_n(name):
    # PyTorch divides by max(0, n - correction): inf where the deviations are non-zero, nan for 0 / 0
    a = RNG.normal(size=(1, 2, 3, 1, 5)).astype(np.float32)
    for dims, correction in (((0, 3), 1), ((0, 3), 5), ((0, 4), 5), ((0, 4), 4.5), ((0, 4), 1), ((2,), 3)):
        got = getattr(zyx.tensor(a), name)(dim=dims, correction=correction)
        want = getattr(torch.tensor(a), name)(dim=dims, correction=correction)
        _close(got, want, rtol=1e-5)
    _close(getattr(zyx.zeros(0, 3), name)(0, correction=0), getattr(torch.zeros(0, 3), name)(0, correction=0))
    _close(getattr(zyx.tensor(a).permute(4, 2, 1, 0, 3), name)(dim=1, correction=3, keepdim=True),
           getattr(torch.tensor(a).permute(4, 2, 1, 0, 3), name)(dim=1, correction=3, keepdim=True), rtol=1e-5)


def test_nested_tuple_index_is_advanced():
    # a tuple inside the index tuple is a sequence of indices, as a list is (PyTorch's rule)
    a = RNG.normal(size=(2, 5, 6, 5, 3)).astype(np.float32)
    t, z = torch.tensor(a), zyx.tensor(a)
    for idx in (((0,),), ((1, 0, -1), [1, 2, 0], slice(None), (-2, 1, 0)), (slice(None), (2, 1, 0), Ellipsis),
                (Ellipsis, ((0, 1), (2, 0)))):
        _close(z[idx], t[idx])
    _close(z.permute(1, 0, 2, 3, 4)[(4, 0), (1, 1)], t.permute(1, 0, 2, 3, 4)[(4, 0), (1, 1)])
    z[(0, 1), (2, 3)] = 7.0
    t[(0, 1), (2, 3)] = 7.0
    _close(z, t)
    with pytest.raises(IndexError):
        z[(0, 2),].numpy()


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "int32", "int64"])
def test_shifts(dtype):
    lo = -100 if dtype[0] == "i" else 0
    a = RNG.integers(lo, 100, size=(3, 4)).astype(dtype)
    b = RNG.integers(0, 8, size=(4,)).astype(dtype)
    za, zb, ta, tb = zyx.tensor(a), zyx.tensor(b), torch.tensor(a), torch.tensor(b)
    for f in (lambda x, y: x << y, lambda x, y: x >> y, lambda x, y: x.T << 3, lambda x, y: x >> 2,
              lambda x, y: 5 << y, lambda x, y: 100 >> y, lambda x, y: x.bitwise_left_shift(y),
              lambda x, y: x.T.bitwise_right_shift(y[:, None].expand(4, 3))):
        _close(f(za, zb), f(ta, tb))


def test_shift_counts_outside_the_width_and_errors():
    # PyTorch saturates: << gives 0, >> sign-fills (OpenCL alone would take the count modulo the width)
    a = np.array([1, -1, 5, -128, 2**30], dtype=np.int32)
    for s in (0, 31, 32, 40, -1):
        n = np.full(5, s, np.int32)
        _close(zyx.tensor(a) << zyx.tensor(n), torch.tensor(a) << torch.tensor(n))
        _close(zyx.tensor(a) >> zyx.tensor(n), torch.tensor(a) >> torch.tensor(n))
    u = np.array([1, 255, 128], dtype=np.uint8)
    _close(zyx.tensor(u) >> 9, torch.tensor(u) >> 9)
    _close(zyx.zeros(0, 2, dtype=zyx.int64) << 1, torch.zeros(0, 2, dtype=torch.int64) << 1)
    _close(zyx.ones(2, dtype=zyx.bool) << 1, torch.ones(2, dtype=torch.bool) << 1)  # promoted to int64
    for bad in (lambda: zyx.ones(2) << 1, lambda: zyx.ones(2, dtype=zyx.int32) >> 1.0,
                lambda: zyx.ones(2, dtype=zyx.bool) << zyx.ones(2, dtype=zyx.bool)):
        with pytest.raises(zyx.DTypeError, match="needs integer tensors"):
            bad()


@pytest.mark.parametrize("call", [
    lambda: zyx.cat([zyx.tensor(1.0), zyx.tensor(2.0)]),
    lambda: zyx.cat([zyx.zeros(2, 3), zyx.zeros(2, 4)], 0),
    lambda: zyx.cat([zyx.zeros(2, 3), zyx.zeros(3)]),
    lambda: zyx.zeros(2, 4).roll((1, 2)),
    lambda: zyx.zeros(2, 4).roll((1, 2), (0,)),
], ids=["cat-rank0", "cat-shape", "cat-rank", "roll-flat", "roll-count"])
def test_contract_shape_errors_are_runtime_errors(call):
    # PyTorch raises RuntimeError for these; they stay ContractErrors (ValueError) too
    with pytest.raises(RuntimeError):
        call()
    with pytest.raises(zyx.ContractError):
        call()


@pytest.mark.parametrize("name", ["std_mean", "var_mean"])
def test_std_var_mean(name):
    a = RNG.normal(size=(3, 4, 5)).astype(np.float32)
    for kw in ({}, {"dim": 1}, {"dim": (0, 2), "keepdim": True, "correction": 0}, {"dim": -1, "correction": 5}):
        got, want = getattr(zyx, name)(zyx.tensor(a), **kw), getattr(torch, name)(torch.tensor(a), **kw)
        assert len(got) == 2
        for g, w in zip(got, want):
            _close(g, w, rtol=1e-5)
    got = getattr(zyx, name)(zyx.tensor(a).permute(2, 0, 1), 0)
    want = getattr(torch, name)(torch.tensor(a).permute(2, 0, 1), 0)
    _close(got[0], want[0], rtol=1e-5)
    _close(got[1], want[1], rtol=1e-5)


def test_reduce_dtype_argument_casts_first():
    a = RNG.integers(-100, 100, size=(6, 7)).astype(np.int8)
    f = RNG.normal(size=(6, 7)).astype(np.float32)
    for dt_z, dt_t in ((zyx.int8, torch.int8), (zyx.float64, torch.float64), (zyx.int16, torch.int16)):
        _close(zyx.tensor(a).sum(1, dtype=dt_z), torch.tensor(a).sum(1, dtype=dt_t))
        _close(zyx.tensor(a).prod(0, dtype=dt_z), torch.tensor(a).prod(0, dtype=dt_t))
    _close(zyx.tensor(f).prod(dtype=zyx.float64), torch.tensor(f).prod(dtype=torch.float64), rtol=1e-12)
    _close(zyx.tensor(f).mean(0, dtype=zyx.float64), torch.tensor(f).mean(0, dtype=torch.float64), rtol=1e-12)
    _close(zyx.tensor(a).mean(dtype=zyx.float32), torch.tensor(a).mean(dtype=torch.float32), rtol=1e-6)


def test_unflatten():
    a = RNG.normal(size=(4, 6, 5)).astype(np.float32)
    z, t = zyx.tensor(a), torch.tensor(a)
    for dim, sizes in ((1, (2, 3)), (-1, (5, 1)), (0, (-1, 2)), (1, [3, -1, 1]), (2, (5,))):
        _close(z.unflatten(dim, sizes), t.unflatten(dim, sizes))
    _close(z.permute(2, 0, 1).unflatten(2, (3, 2)), t.permute(2, 0, 1).unflatten(2, (3, 2)))
    _close(zyx.zeros(0, 6).unflatten(1, (2, 3)), torch.zeros(0, 6).unflatten(1, (2, 3)))
    for bad, msg in (((1, (4, 2)), "multiply to 8"), ((1, (-1, -1)), "only one"), ((1, (-1, 4)), "cannot split"),
                     ((1, ()), "non-empty")):
        with pytest.raises(zyx.ShapeError, match=msg):
            z.unflatten(*bad)
    with pytest.raises(IndexError):
        z.unflatten(3, (1,))


def test_softmin():
    import zyx.nn.functional as F
    a = RNG.normal(size=(3, 7)).astype(np.float32)
    for dim in (0, 1, -1):
        _close(F.softmin(zyx.tensor(a), dim), torch.nn.functional.softmin(torch.tensor(a), dim), rtol=1e-5)
    za, ta = zyx.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    (F.softmin(za, 1) * zyx.tensor(a)).sum().backward()
    (torch.nn.functional.softmin(ta, 1) * torch.tensor(a)).sum().backward()
    np.testing.assert_allclose(za.grad.numpy(), ta.grad.numpy(), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("mode", ["reflect", "replicate"])
def test_pad_negative_amounts_mirror_about_the_uncropped_input(mode):
    # PyTorch reflects/clamps about the input's own ends and then drops the negative amounts
    import zyx.nn.functional as F
    a = RNG.normal(size=(2, 3, 5, 6)).astype(np.float32)
    for pads in ((-1, 2, 2, -1), (3, -5, 1, -5), (0, 0, 0, -5), (-5, 4, 0, 0), (2, -1, 0, 0)):
        _close(F.pad(zyx.tensor(a), pads, mode=mode), torch.nn.functional.pad(torch.tensor(a), pads, mode=mode))
    big = RNG.normal(size=(2, 4, 120, 150)).astype(np.float32)  # past the cat path's size: still exact
    _close(F.pad(zyx.tensor(big), (3, -2, -1, 2), mode=mode),
           torch.nn.functional.pad(torch.tensor(big), (3, -2, -1, 2), mode=mode))
    za, ta = zyx.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    w = RNG.normal(size=(2, 3, 6, 7)).astype(np.float32)
    (F.pad(za, (-1, 2, 2, -1), mode=mode) * zyx.tensor(w)).sum().backward()
    (torch.nn.functional.pad(ta, (-1, 2, 2, -1), mode=mode) * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(za.grad.numpy(), ta.grad.numpy(), rtol=1e-5, atol=1e-6)
    with pytest.raises(zyx.ShapeError, match="expected at least 0"):
        F.pad(zyx.tensor(a), (0, 0, -3, -3), mode=mode)


@pytest.mark.parametrize("call", [
    lambda a: a[zyx.tensor(1.1)], lambda a: a[[1.1]], lambda a: a[zyx.tensor([1.5]), 0], lambda a: a[0, [0.5, 1.0]],
], ids=["float-tensor", "float-list", "float-tensor-mixed", "float-list-mixed"])
def test_float_index_is_index_error(call):
    # PyTorch raises IndexError ("tensors used as indices must be long, int, byte or bool tensors")
    a = zyx.ones(4, 5)
    with pytest.raises(IndexError, match="integer"):
        call(a)
    with pytest.raises(zyx.DTypeError):
        call(a)


def test_two_ellipses_is_index_error():
    for index in ((Ellipsis, Ellipsis), (Ellipsis, 0, Ellipsis), (Ellipsis, [0], Ellipsis)):
        with pytest.raises(IndexError, match="single ellipsis"):
            zyx.ones(4, 3)[index]
        with pytest.raises(zyx.ShapeError):
            zyx.ones(4, 3)[index]


def test_linspace_bool_refused():
    with pytest.raises(zyx.DTypeError, match="bool"):
        zyx.linspace(5, 10, 3, dtype=zyx.bool)
    _close(zyx.linspace(5, -5, 20, dtype=zyx.int32), torch.linspace(5, -5, 20, dtype=torch.int32))


@pytest.mark.parametrize("call", [
    lambda: zyx.ones(2) << 2,
    lambda: zyx.ones(2, dtype=zyx.int32) >> zyx.ones(2),
    lambda: zyx.ones(2, dtype=zyx.int32) << 1.0,
    lambda: zyx.linspace(0, 1, 3, dtype=zyx.bool),
    lambda: zyx.zeros(3, 4, dtype=zyx.float16).scatter(1, zyx.zeros(3, 4, dtype=zyx.int64), zyx.ones(3, 4)),
    lambda: zyx.zeros(3, 4).scatter_reduce(0, zyx.zeros(3, 4, dtype=zyx.int64), zyx.ones(3, 4, dtype=zyx.float64),
                                           "sum"),
    lambda: zyx.zeros(3, 4).scatter_add(0, zyx.zeros(3, 4, dtype=zyx.int64), zyx.ones(3, 4, dtype=zyx.float16)),
], ids=["shl-float", "shr-float-count", "shl-float-scalar", "linspace-bool", "scatter-dtypes", "scatter_reduce-dtypes",
        "scatter_add-dtypes"])
def test_unsupported_dtype_is_runtime_error(call):
    # PyTorch raises RuntimeError ("not implemented for 'Float'", "expected self and src of the same dtype")
    with pytest.raises(RuntimeError, match="dtype|integer"):
        call()
    with pytest.raises(zyx.DTypeError):
        call()


def test_pad_unknown_mode_is_not_implemented_error():
    import zyx.nn.functional as F
    with pytest.raises(NotImplementedError, match="mode must be one of"):
        F.pad(zyx.ones(3, 3, 3), (3, 0), mode="typo")
    with pytest.raises(zyx.ShapeError):
        zyx.ones(3, 3).pad((1, 1), mode="Reflect")
