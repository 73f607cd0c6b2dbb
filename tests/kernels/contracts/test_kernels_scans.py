"""The scans beyond cumsum (cumprod, cummax/cummin, logcumsumexp) and integer cumsum/cumprod,
against PyTorch 2.13: every dtype each accepts, both strategies (one work-item per lane and
the block scan with carries), every axis, views, edge shapes, NaN/tie rules and the
precision and determinism claims of their contracts."""
from __future__ import annotations

import numpy as np
import pytest

import zyx
from zyx.kernels import contracts as kernels

from contract_data import make, on_device

FLOATS = [zyx.float32, zyx.float64, zyx.float16, zyx.bfloat16]
INTS = [zyx.bool, zyx.uint8, zyx.int8, zyx.uint16, zyx.int16, zyx.uint32, zyx.int32, zyx.uint64, zyx.int64]
EXTREMUM_INTS = [zyx.bool, zyx.uint8, zyx.int8, zyx.int16, zyx.int32, zyx.int64]  # PyTorch's cummax takes these
# Relative error against PyTorch per dtype: float32 rounding over a deep scan, or a rounding on store.
REL = {"float32": 3e-5, "float64": 1e-12, "bfloat16": 2.0 ** -6, "float16": 2.0 ** -9}
# (5, 1300) along 1 is a block scan on CPUs (1300 > 4 x 256) and on GPUs; along 0, strided lanes.
SHAPE = (5, 1300)


def _torch_of(torch, a: np.ndarray):
    if a.dtype == np.uint16 or a.dtype == np.uint32 or a.dtype == np.uint64:
        return torch.from_numpy(a.astype(np.int64)).to(getattr(torch, a.dtype.name))
    if a.dtype.name == "bfloat16":
        return torch.from_numpy(a.astype(np.float32)).to(torch.bfloat16)
    return torch.from_numpy(np.ascontiguousarray(a))


def _np(t) -> np.ndarray:
    import torch

    if t.dtype == torch.bfloat16:
        return t.float().numpy()
    return t.numpy()


def _close(out: np.ndarray, expected: np.ndarray, dtype: zyx.DType) -> None:
    got, ref = out.astype(np.float64), expected.astype(np.float64)
    np.testing.assert_allclose(got, ref, rtol=REL[dtype.name], atol=1e-30, equal_nan=True)


def _near_one(shape, dtype, seed=0) -> np.ndarray:
    """Factors near 1, of both signs: a long running product neither overflows nor vanishes."""
    rng = np.random.default_rng(seed)
    a = 1.0 + (rng.random(shape) - 0.5) * 0.02
    return (a * np.where(rng.random(shape) < 0.01, -1.0, 1.0)).astype(dtype.numpy)


# ---------------------------------------------------------------- floats


@pytest.mark.parametrize("dtype", FLOATS, ids=[d.name for d in FLOATS])
def test_float_scans_match_torch(device, torch, dtype):
    """cumprod and logcumsumexp within rounding of PyTorch, cummax/cummin exactly (values and
    indices), along both axes, with the dtype kept."""
    if dtype is zyx.float64 and not device.info.has_fp64:
        pytest.skip("no float64 on this device")
    prod_in = _near_one(SHAPE, dtype)
    rng = np.random.default_rng(1)
    data = (rng.standard_normal(SHAPE) * 3).astype(dtype.numpy)
    data.reshape(-1)[::7] = data.reshape(-1)[3]  # repeated values: ties
    xp, xd = on_device(prod_in, device), on_device(data, device)
    tp, td = _torch_of(torch, prod_in), _torch_of(torch, data)
    # both strategies in float32 and float64; the 16-bit dtypes (the float32 kernels, loaded and stored
    # as another type) one each: the block scan (along 1) in bfloat16, strided lanes in float16
    for dim in (1, 0) if dtype.itemsize > 2 else (1,) if dtype is zyx.bfloat16 else (0,):
        out = xp.cumprod(dim)
        assert out.dtype is dtype
        _close(out.numpy(), _np(torch.cumprod(tp.float() if dtype.itemsize == 2 else tp, dim)), dtype)
        lse = xd.logcumsumexp(dim)
        assert lse.dtype is dtype
        _close(lse.numpy(), _np(torch.logcumsumexp(td.float() if dtype.itemsize == 2 else td, dim)), dtype)
        for op in ("cummax", "cummin"):
            values, indices = getattr(xd, op)(dim)
            ev, ei = getattr(torch, op)(td, dim)
            assert values.dtype is dtype and indices.dtype is zyx.int64
            np.testing.assert_array_equal(values.numpy().astype(np.float64), _np(ev).astype(np.float64))
            np.testing.assert_array_equal(indices.numpy(), ei.numpy())


def test_16bit_scans_fold_in_float32(device, values_equal):
    """The precision claim (accumulate: F32): a 16-bit running product is the float32 one rounded
    once per output, not a product rounded to the dtype at every step (which drifts)."""
    for dtype in (zyx.bfloat16, zyx.float16):
        a = np.full(300, 1.0 + 2.0 ** -7, dtype=dtype.numpy)  # exactly representable in both
        out = on_device(a, device).cumprod(0).numpy()
        expected = np.cumprod(a.astype(np.float32)).astype(dtype.numpy)
        values_equal(out, expected)
        stepwise = a.copy()
        for i in range(1, a.size):
            stepwise[i] = (stepwise[i - 1].astype(np.float32) * a[i].astype(np.float32)).astype(dtype.numpy)
        assert (stepwise != expected).any()
        lse = on_device(np.zeros(300, dtype.numpy), device).logcumsumexp(0).numpy().astype(np.float64)
        np.testing.assert_allclose(lse, np.log(np.arange(1, 301)), rtol=2.0 ** -7)


def test_float_scans_repeat_their_bits(device, bits_equal):
    """same_hardware_bitwise: the fixed operation order gives the same bits on every run."""
    a = _near_one((3, 5000), zyx.float32, seed=2)
    x = on_device(a, device)
    first_p, first_l = x.cumprod(1).numpy(), x.logcumsumexp(1).numpy()
    for _ in range(2):
        bits_equal(x.cumprod(1).numpy(), first_p)
        bits_equal(x.logcumsumexp(1).numpy(), first_l)


# ---------------------------------------------------------------- integers


@pytest.mark.parametrize("dtype", INTS, ids=[d.name for d in INTS])
def test_int_cumsum_cumprod_are_int64_like_torch(device, torch, dtype):
    """Every integer dtype (and bool) accumulates into an int64 result that wraps as PyTorch's."""
    rng = np.random.default_rng(3)
    if dtype.is_bool:
        a = rng.integers(0, 2, size=(3, 1100)).astype(np.bool_)
    else:
        info = np.iinfo(dtype.numpy)
        a = rng.integers(info.min, info.max, size=(3, 1100), dtype=dtype.numpy, endpoint=True)
    a.reshape(-1)[::5] = 3 if not dtype.is_bool else True  # products that do not all overflow to 0 at once
    x, t = on_device(a, device), _torch_of(torch, a)
    # both ops in bool and int32 (strided lanes too); the other dtypes load another integer type into the
    # same int64 kernels: one op each, taking turns (kernel builds are slow)
    both = dtype in (zyx.bool, zyx.int32)
    for dim in (1, 0) if both else (1,):  # strided lanes once
        for op in ("cumsum", "cumprod") if both else (("cumsum", "cumprod")[INTS.index(dtype) % 2],):
            out = getattr(x, op)(dim)
            assert out.dtype is zyx.int64
            np.testing.assert_array_equal(out.numpy(), getattr(torch, op)(t, dim).numpy())


@pytest.mark.parametrize("dtype", EXTREMUM_INTS, ids=[d.name for d in EXTREMUM_INTS])
def test_int_cummax_cummin_match_torch(device, torch, dtype):
    """Few distinct values, so ties everywhere: the index is the last of equal extrema."""
    a = np.random.default_rng(4).integers(0, 2 if dtype.is_bool else 4, size=(4, 1500)).astype(dtype.numpy)
    if dtype.is_int and np.iinfo(dtype.numpy).min < 0:
        a = a - 2
    x, t = on_device(a, device), _torch_of(torch, a)
    both = dtype in (zyx.bool, zyx.int32)  # as above: both ops there, one each, taking turns, elsewhere
    for dim in (1, 0) if both else (1,):
        for op in ("cummax", "cummin") if both else (("cummax", "cummin")[EXTREMUM_INTS.index(dtype) % 2],):
            values, indices = getattr(x, op)(dim)
            ev, ei = getattr(torch, op)(t, dim)
            assert values.dtype is dtype
            np.testing.assert_array_equal(values.numpy(), ev.numpy())
            np.testing.assert_array_equal(indices.numpy(), ei.numpy())


# ---------------------------------------------------------------- special values


def test_nan_ties_and_infinities(device, torch):
    """cummax/cummin carry NaN with the index of the latest NaN and give ties the last index;
    logcumsumexp keeps -inf and +inf runs; cumprod turns zeros and infinities as IEEE."""
    nan, inf = float("nan"), float("inf")
    rows = [[1.0, 3.0, 3.0, nan, 5.0, nan, 2.0], [2.0, 2.0, 1.0, 2.0, -inf, -inf, 0.0],
            [-inf, -inf, 1.0, inf, inf, 0.0, nan], [0.0, 4.0, inf, -1.0, 0.0, 2.0, 3.0]]
    a = np.array(rows, np.float32)
    long_row = np.random.default_rng(5).standard_normal((2, 3000)).astype(np.float32)
    long_row[0, [10, 1500, 2999]] = nan
    long_row[1, 2000:] = long_row[1, :2000].max()  # a tie carried across blocks
    for arr in (a, long_row):
        x, t = on_device(arr, device), torch.from_numpy(arr)
        for op in ("cummax", "cummin"):
            values, indices = getattr(x, op)(1)
            ev, ei = getattr(torch, op)(t, 1)
            np.testing.assert_array_equal(values.numpy(), ev.numpy())
            np.testing.assert_array_equal(indices.numpy(), ei.numpy())
    x, t = on_device(a, device), torch.from_numpy(a)
    np.testing.assert_allclose(x.logcumsumexp(1).numpy(), torch.logcumsumexp(t, 1).numpy(), rtol=1e-6)
    np.testing.assert_array_equal(x.cumprod(1).numpy(), torch.cumprod(t, 1).numpy())


# ---------------------------------------------------------------- shapes and views


def test_edge_shapes(device, torch):
    s = zyx.tensor(-2.5, device=device)
    assert s.cumprod(0).item() == -2.5 and s.cumprod(-1).shape == ()
    assert s.logcumsumexp(0).item() == -2.5
    v, i = s.cummax(0)
    assert v.shape == () and i.shape == () and v.item() == -2.5 and i.item() == 0
    assert zyx.tensor(7, device=device).cumsum(0).dtype is zyx.int64
    e = zyx.zeros(3, 0, device=device)
    for op in ("cumprod", "logcumsumexp"):
        assert getattr(e, op)(1).shape == (3, 0) and getattr(e, op)(0).shape == (3, 0)
    v, i = e.cummin(1)
    assert v.shape == (3, 0) and i.shape == (3, 0) and i.dtype is zyx.int64
    assert zyx.zeros(0, dtype=zyx.int8, device=device).cumprod(0).numpy().dtype == np.int64
    # rank 8, every axis (positive and negative), odd extents
    a = np.random.default_rng(6).standard_normal((2, 3, 1, 2, 3, 1, 2, 5)).astype(np.float32)
    x, t = on_device(a, device), torch.from_numpy(a)
    for dim in range(-8, 8):
        np.testing.assert_allclose(x.cumprod(dim).numpy(), torch.cumprod(t, dim).numpy(), rtol=1e-6)
        values, indices = x.cummax(dim)
        ev, ei = torch.cummax(t, dim)
        np.testing.assert_array_equal(values.numpy(), ev.numpy())
        np.testing.assert_array_equal(indices.numpy(), ei.numpy())
    np.testing.assert_allclose(x.logcumsumexp(3).numpy(), torch.logcumsumexp(t, 3).numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("layout", ["transposed", "strided", "broadcast", "reversed", "offset"])
def test_scans_of_views(device, torch, layout):
    """Non-contiguous inputs are contiguized first (requires_contiguous) and scanned as PyTorch does."""
    x, ref = make(layout, (6, 301), zyx.float32, device, seed=7, finite=True)
    t = torch.from_numpy(np.ascontiguousarray(ref))
    for dim in (1, 0):
        np.testing.assert_allclose(x.cumprod(dim).numpy(), torch.cumprod(t, dim).numpy(), rtol=1e-5, atol=1e-30)
        # atol: an output near 0 is the difference of a running max and a log, both O(1)
        np.testing.assert_allclose(x.logcumsumexp(dim).numpy(), torch.logcumsumexp(t, dim).numpy(), rtol=1e-5,
                                   atol=1e-6)
        values, indices = x.cummin(dim)
        ev, ei = torch.cummin(t, dim)
        np.testing.assert_array_equal(values.numpy(), ev.numpy())
        np.testing.assert_array_equal(indices.numpy(), ei.numpy())


def test_tiny_blocks_recurse_the_carries(device, torch):
    """Blocks of 4 x 2 give three levels of block totals: the indexed carry pass of cummax and the
    int64 one of cumprod still give PyTorch's exact results."""
    rng = np.random.default_rng(8)
    a = rng.integers(-3, 4, size=(2, 3000)).astype(np.int32)
    f = rng.integers(-5, 6, size=(2, 3000)).astype(np.float32)
    f[0, 777] = np.nan
    x, xf = on_device(a, device), on_device(f, device)
    try:
        kernels.set_tunables(device, scan_local=4, scan_items=2)
        assert kernels.cumsum_strategy(2, 3000, 1, kernels.tunables(device)) == "blocks"
        prod = x.cumprod(1).numpy()
        values, indices = xf.cummax(1)
        values, indices = values.numpy(), indices.numpy()
    finally:
        kernels.set_tunables(device)
    np.testing.assert_array_equal(prod, torch.cumprod(torch.from_numpy(a), 1).numpy())
    ev, ei = torch.cummax(torch.from_numpy(f), 1)
    np.testing.assert_array_equal(values, ev.numpy())
    np.testing.assert_array_equal(indices, ei.numpy())


def test_cummax_returns_values_and_indices(device):
    x = zyx.tensor([[1.0, 0.0, 2.0]], device=device)
    out = x.cummax(1)
    values, indices = out
    assert out.values is values and out.indices is indices and tuple(out._fields) == ("values", "indices")
    assert indices.numpy().tolist() == [[0, 0, 2]]
    del values, out
    assert indices.numpy().tolist() == [[0, 0, 2]]  # the indices outlive the values tensor
    only = x.cummin(1).indices  # the values are never read: the indices still come out
    assert only.numpy().tolist() == [[0, 1, 1]]
