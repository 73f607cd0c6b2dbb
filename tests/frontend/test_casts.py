"""Casts between all 15 x 15 dtype pairs against NumPy/ml_dtypes (and PyTorch), plus the
documented edge cases and bit-exact float32 -> float16/bfloat16/float8 rounding.

Kernels are specialized on shapes, so every pair is tested on one 1-D array of a fixed
length N: each (src, dst) kernel is compiled once and reused by the edge-case tests.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import zyx
from zyx.dtype import ALL_DTYPES

N = 2048
MINIFLOATS = (zyx.float16, zyx.bfloat16, zyx.float8_e4m3, zyx.float8_e5m2)
TORCH_NAME = {"float8_e4m3": "float8_e4m3fn"}
_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def finfo(d: zyx.DType):
    return ml_dtypes.finfo(d.numpy)


def int_bounds(d: zyx.DType) -> tuple[int, int]:
    if d.is_bool:
        return 0, 1
    info = np.iinfo(d.numpy)
    return int(info.min), int(info.max)


def special_floats(d: zyx.DType) -> np.ndarray:
    """Zeros, infinities, NaN, the extremes and subnormals of float dtype ``d`` (as float64)."""
    fi = finfo(d)
    vals = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, 1.5, 2.5, -2.5, float(fi.max), -float(fi.max),
            float(fi.tiny), -float(fi.tiny), float(fi.smallest_subnormal), -float(fi.smallest_subnormal),
            float(fi.smallest_subnormal) * 3, float(fi.tiny) - float(fi.smallest_subnormal)]
    return np.array(vals, dtype=np.float64)


def _float_sample(rng: np.random.Generator, d: zyx.DType, n: int) -> np.ndarray:
    """Random floats spread over the whole exponent range of ``d`` (float64 values)."""
    fi = finfo(d)
    lo, hi = np.log2(float(fi.smallest_subnormal)), np.log2(float(fi.max))
    mags = np.exp2(rng.uniform(lo, hi, n))
    return mags * rng.choice([-1.0, 1.0], n)


def _fill(candidates: np.ndarray, src: zyx.DType, keep, rng: np.random.Generator) -> np.ndarray:
    """N values of ``src`` from ``candidates`` (rounded to ``src``) for which ``keep`` holds."""
    with np.errstate(all="ignore"):
        vals = candidates.astype(src.numpy)
        ok = keep(vals.astype(np.float64) if src.is_float else vals)
    vals = vals[ok]
    assert vals.size >= N // 2, f"too few usable inputs for {src.name}"
    return np.resize(vals, N)


def cast_inputs(src: zyx.DType, dst: zyx.DType, seed: int = 0) -> np.ndarray:
    """N values of ``src`` whose conversion to ``dst`` is defined by NumPy/ml_dtypes and PyTorch alike."""
    rng = np.random.default_rng(seed)
    if src.is_bool:
        return np.resize(np.array([False, True]), N) ^ (rng.random(N) < 0.3)
    if src.is_int:
        lo, hi = int_bounds(src)
        if dst.is_float:  # stay inside the destination's finite range
            m = float(finfo(dst).max)
            lo, hi = max(lo, -int(m)), min(hi, int(m))
        small = rng.integers(max(lo, -300), min(hi, 300), N // 2, endpoint=True)
        wide = rng.integers(lo, hi, N // 2 - 8, endpoint=True, dtype=src.numpy)
        edges = np.array([lo, hi, 0, 1, lo + 1, hi - 1, max(lo, -1), min(hi, 2)], dtype=src.numpy)
        return np.concatenate([small.astype(src.numpy), wide, edges])
    # src is a float
    if dst.is_int:
        dlo, dhi = int_bounds(dst)
        m = float(finfo(src).max)
        a, b = max(float(dlo), -m), min(float(dhi), m)
        cands = np.concatenate([rng.uniform(a, b, N * 2), rng.uniform(-300, 300, N),
                                rng.uniform(-1.5, 1.5, N // 4), [-0.0, 0.0, 0.99, -0.99, float(dhi), float(dlo)]])
        lo_f, hi_f = float(dlo), float(dhi + 1)  # exact powers of two
        return _fill(cands, src, lambda v: np.isfinite(v) & (np.trunc(v) >= lo_f) & (np.trunc(v) < hi_f), rng)
    cands = np.concatenate([special_floats(src), _float_sample(rng, src, N * 2)])
    if dst.is_float:
        cands = np.concatenate([special_floats(dst), cands])
    if src is zyx.float64 and dst in MINIFLOATS:
        # zyx (like PyTorch) rounds float64 -> 16/8-bit floats through float32; NumPy rounds
        # directly, so compare on float32-exact inputs (double rounding is tested separately)
        with np.errstate(all="ignore"):
            cands = cands.astype(np.float32).astype(np.float64)
    return _fill(cands, src, lambda v: np.ones(v.shape, dtype=bool), rng)


def reference(host: np.ndarray, src: zyx.DType, dst: zyx.DType) -> np.ndarray:
    """NumPy/ml_dtypes conversion; integers go to 16/8-bit floats through float32 (documented)."""
    with np.errstate(all="ignore"):
        if src.is_int and dst in MINIFLOATS:
            return host.astype(np.float32).astype(dst.numpy)
        return host.astype(dst.numpy)


PAIRS = [(s, d) for s in ALL_DTYPES for d in ALL_DTYPES]


@pytest.mark.parametrize("src,dst", PAIRS, ids=[f"{s.name}-{d.name}" for s, d in PAIRS])
def test_cast_pair_matches_numpy(device: zyx.Device, values_equal, src: zyx.DType, dst: zyx.DType) -> None:
    host = cast_inputs(src, dst)
    x = zyx.tensor(host, device=device)
    y = x.cast(dst)
    assert y.dtype is dst and y.shape == (N,)
    if src is dst:
        assert y is x
    values_equal(y.numpy(), reference(host, src, dst))


def _torch_dtype(torch, d: zyx.DType):
    return getattr(torch, TORCH_NAME.get(d.name, d.name))


def _to_torch(torch, host: np.ndarray, d: zyx.DType):
    """A PyTorch tensor with the bits of ``host`` (through an unsigned view: no conversion)."""
    if d.is_bool:
        return torch.from_numpy(host.copy())
    return torch.from_numpy(host.view(_UINT[d.itemsize]).copy()).view(_torch_dtype(torch, d))


def _from_torch(torch, t, d: zyx.DType) -> np.ndarray:
    if d.is_bool:
        return t.numpy()
    return t.view(getattr(torch, f"uint{8 * d.itemsize}")).numpy().view(d.numpy)


@pytest.mark.parametrize("src,dst", PAIRS, ids=[f"{s.name}-{d.name}" for s, d in PAIRS])
def test_cast_pair_matches_torch(device: zyx.Device, torch, values_equal, src: zyx.DType, dst: zyx.DType) -> None:
    host = cast_inputs(src, dst)
    expected = _from_torch(torch, _to_torch(torch, host, src).to(_torch_dtype(torch, dst)), dst)
    mask = None
    if src.is_float and dst.is_float:
        v = host.astype(np.float64)
        m = float(finfo(dst).max)
        # in range only: PyTorch saturates float8_e4m3 overflow (and inf) to 448, zyx gives NaN like ml_dtypes
        mask = np.isnan(v) | (np.abs(v) <= m) | (np.isinf(v) & (dst is not zyx.float8_e4m3))
    values_equal(zyx.tensor(host, device=device).cast(dst).numpy(), expected, mask)


# ------------------------------------------------------------------ documented edge cases

def _padded(values, d: zyx.DType) -> np.ndarray:
    """``values`` followed by zeros up to N elements (so the pair's compiled kernel is reused)."""
    with np.errstate(all="ignore"):
        head = np.array(values, dtype=np.float64).astype(d.numpy)
    return np.concatenate([head, np.zeros(N - head.size, dtype=d.numpy)])


@pytest.mark.parametrize("src", [zyx.float32, zyx.float64, zyx.float16, zyx.bfloat16], ids=lambda d: d.name)
@pytest.mark.parametrize("dst", [d for d in ALL_DTYPES if d.is_int], ids=lambda d: d.name)
def test_float_to_int_saturates_and_nan_is_zero(device: zyx.Device, src: zyx.DType, dst: zyx.DType) -> None:
    lo, hi = int_bounds(dst)
    big = float(finfo(src).max)
    host = _padded([np.nan, -np.nan, np.inf, -np.inf, big, -big, 10240, -10240, -0.99, 0.99, -1.0], src)
    got = zyx.tensor(host, device=device).cast(dst).numpy()[:11].tolist()
    clip = lambda v: min(max(v, lo), hi)  # noqa: E731 - a one-line helper for the expected list
    assert got == [0, 0, hi, lo, clip(int(big)), clip(-int(big)), clip(10240), clip(-10240), 0, 0, clip(-1)]


def test_float_to_bool_is_nonzero(device: zyx.Device) -> None:
    host = _padded([0.0, -0.0, np.nan, np.inf, 1e-45, -2.0], zyx.float32)
    got = zyx.tensor(host, device=device).cast(zyx.bool).numpy()[:6].tolist()
    assert got == [False, False, True, True, True, True]


def test_float8_e4m3_overflow_is_nan_like_ml_dtypes(device: zyx.Device) -> None:
    vals = [448.0, 463.9, 464.0, 464.1, 500.0, 1e6, np.inf, -np.inf, -464.1, np.nan, -448.0]
    host = _padded(vals, zyx.float32)
    got = zyx.tensor(host, device=device).cast(zyx.float8_e4m3).numpy()[:11].astype(np.float64)
    expected = np.array(vals, dtype=np.float32).astype(ml_dtypes.float8_e4m3fn).astype(np.float64)
    np.testing.assert_array_equal(got, expected)
    assert got[:3].tolist() == [448.0, 448.0, 448.0]  # round-to-nearest-even keeps 464 at 448
    assert np.isnan(got[3:10]).all() and got[10] == -448.0


def test_float64_to_float16_rounds_through_float32(device: zyx.Device) -> None:
    # 1 + 2^-11 + 2^-40 rounds up to 1 + 2^-10 directly, but to 1.0 through float32 (a tie)
    v = 1 + 2.0**-11 + 2.0**-40
    host = _padded([v, -v], zyx.float64)
    got = zyx.tensor(host, device=device).cast(zyx.float16).numpy()[:2].tolist()
    assert got == [1.0, -1.0]
    assert np.float64(v).astype(np.float16) == 1 + 2.0**-10  # NumPy's direct rounding differs


def test_float64_to_float16_agrees_with_torch(device: zyx.Device, torch) -> None:
    v = 1 + 2.0**-11 + 2.0**-40
    host = _padded([v, -v, 65519.99, 65520.0, 1e-8], zyx.float64)
    expected = torch.from_numpy(host).to(torch.float16).numpy()
    got = zyx.tensor(host, device=device).cast(zyx.float16).numpy()
    np.testing.assert_array_equal(got.view(np.uint16), expected.view(np.uint16))


def test_int_to_int_wraps_like_numpy(device: zyx.Device) -> None:
    host = np.resize(np.array([300, -1, 2**40 + 5, -(2**63), 2**63 - 1], dtype=np.int64), N)
    got = zyx.tensor(host, device=device).cast(zyx.uint8).numpy()[:5]
    np.testing.assert_array_equal(got, host[:5].astype(np.uint8))


# ------------------------------------------------------------------ exhaustive rounding

def _ties_and_neighbours(d: zyx.DType) -> np.ndarray:
    """float32 values exactly between two adjacent ``d`` values, and one float32 ulp either side."""
    bits = np.arange(1 << (8 * d.itemsize), dtype=np.uint64).astype(_UINT[d.itemsize])
    with np.errstate(invalid="ignore"):
        vals = bits.view(d.numpy).astype(np.float64)
    vals = np.unique(vals[np.isfinite(vals) & (vals >= 0)])
    mids = ((vals[:-1] + vals[1:]) / 2).astype(np.float32)  # exact: one more bit than d has
    top = np.float32(float(vals[-1]) + (float(vals[-1]) - float(vals[-2])) / 2)  # the overflow tie
    mids = np.concatenate([mids, [top]]).astype(np.float32)
    near = np.concatenate([mids, np.nextafter(mids, np.float32(np.inf)), np.nextafter(mids, np.float32(0))])
    return np.concatenate([near, -near]).astype(np.float32)


def float32_sample(d: zyx.DType) -> np.ndarray:
    """A large float32 sample: random bit patterns, ties, subnormals, overflow, inf, NaN."""
    rng = np.random.default_rng(5)
    random_bits = rng.integers(0, 2**32, 1 << 17, dtype=np.uint64).astype(np.uint32).view(np.float32)
    fi = finfo(d)
    near_range = np.exp2(rng.uniform(np.log2(float(fi.smallest_subnormal)) - 3, np.log2(float(fi.max)) + 1, 1 << 16))
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1e-45, -1e-45, 1.17549435e-38,
                         3.4028235e38, -3.4028235e38, float(fi.max), float(fi.smallest_subnormal) / 2], np.float32)
    nan_payloads = np.array([0x7F800001, 0xFF800001, 0x7FC00001, 0x7FFFFFFF, 0xFFC00000], np.uint32).view(np.float32)
    subnormals32 = rng.integers(1, 1 << 23, 4096, dtype=np.uint64).astype(np.uint32).view(np.float32)
    with np.errstate(over="ignore"):
        near32 = near_range.astype(np.float32)  # the top end overflows to inf on purpose
    return np.concatenate([specials, nan_payloads, subnormals32, random_bits, near32, -near32,
                           _ties_and_neighbours(d)])


@pytest.mark.parametrize("d", MINIFLOATS, ids=lambda d: d.name)
def test_float32_to_small_floats_bit_exact(device: zyx.Device, values_equal, d: zyx.DType) -> None:
    host = float32_sample(d)
    assert host.size > 200_000
    got = zyx.tensor(host, device=device).cast(d).numpy()
    with np.errstate(all="ignore"):
        expected = host.astype(d.numpy)
    values_equal(got, expected)


@pytest.mark.parametrize("d", MINIFLOATS, ids=lambda d: d.name)
def test_every_small_float_widens_exactly(device: zyx.Device, values_equal, d: zyx.DType) -> None:
    host = np.arange(1 << (8 * d.itemsize), dtype=np.uint64).astype(_UINT[d.itemsize]).view(d.numpy)
    x = zyx.tensor(host, device=device)
    wide = x.cast(zyx.float32).numpy()
    values_equal(wide, host.astype(np.float32))
    # and back: every non-NaN pattern survives the round trip bit for bit
    back = zyx.tensor(wide, device=device).cast(d).numpy()
    values_equal(back, host)
