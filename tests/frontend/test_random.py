"""Counter-based random numbers: reproducibility, independence from work-group size,
a host reference of Philox-4x32-10, and sane statistics."""
from __future__ import annotations

import numpy as np
import pytest

import zyx
from zyx.backend.device import usable_devices
from zyx.backend.transfer import read
from zyx.frontend import creation
from zyx.kernels import random as random_kernel

M32 = np.uint64(0xFFFFFFFF)


def philox4x32_10(counters: np.ndarray, seed: int) -> np.ndarray:
    """Host Philox-4x32-10 of (counter lo, counter hi, 0, 0) under the 64-bit seed: (n, 4) uint32."""
    ctr = counters.astype(np.uint64)
    x = [ctr & M32, ctr >> np.uint64(32), np.zeros_like(ctr), np.zeros_like(ctr)]
    k0, k1 = np.uint64(seed & 0xFFFFFFFF), np.uint64((seed >> 32) & 0xFFFFFFFF)
    for _ in range(10):
        p0 = np.uint64(0xD2511F53) * x[0]
        p1 = np.uint64(0xCD9E8D57) * x[2]
        x = [(p1 >> np.uint64(32)) ^ x[1] ^ k0, p1 & M32, (p0 >> np.uint64(32)) ^ x[3] ^ k1, p0 & M32]
        k0, k1 = (k0 + np.uint64(0x9E3779B9)) & M32, (k1 + np.uint64(0xBB67AE85)) & M32
    return np.stack(x, axis=1).astype(np.uint32)


def test_uniform_float32_matches_host_philox(device: zyx.Device) -> None:
    seed, n = 0x1234_5678_9ABC, 1000
    zyx.manual_seed(seed)
    zyx.rand(37, device=device)  # advance the counter: the next values start at 37
    got = zyx.rand(n, device=device).numpy()
    counters = np.arange(37, 37 + n)  # four a Philox block: block c // 4, word c % 4
    w = philox4x32_10(counters // 4, seed)[np.arange(n), counters % 4]
    expected = (w >> 8).astype(np.float32) * np.float32(2.0**-24)
    np.testing.assert_array_equal(got, expected)


def test_randint_matches_host_philox(device: zyx.Device) -> None:
    seed, n = 99, 500
    zyx.manual_seed(seed)
    got = zyx.randint(-7, 1000, (n,), device=device).numpy()
    counters = np.arange(n)  # two a Philox block: words 0, 1 for even counters, 2, 3 for odd ones
    w = philox4x32_10(counters // 2, seed).astype(np.uint64)
    hi, lo = w[np.arange(n), 2 * (counters % 2)], w[np.arange(n), 2 * (counters % 2) + 1]
    expected = ((hi << np.uint64(32)) | lo) % np.uint64(1007)
    np.testing.assert_array_equal(got, expected.astype(np.int64) - 7)


CASES = [(zyx.float32, "uniform"), (zyx.float16, "uniform"), (zyx.bfloat16, "uniform"), (zyx.float64, "uniform"),
         (zyx.float8_e4m3, "uniform"), (zyx.float32, "normal"), (zyx.float64, "normal"), (zyx.bfloat16, "normal"),
         (zyx.int32, "integer"), (zyx.int64, "integer"), (zyx.uint8, "integer")]


@pytest.mark.parametrize("dtype,dist", CASES, ids=[f"{d.name}-{k}" for d, k in CASES])
def test_random_bits_independent_of_work_group_size(device: zyx.Device, bits_equal, dtype, dist) -> None:
    if not device.supports(dtype):  # random_bits is below the API's dtype check
        pytest.skip(f"{device} has no {dtype.name}")
    n = 1000  # not a multiple of any work-group size tried
    outs = []
    for local in (1, 7, 64, None):
        if local is not None and local > device.max_work_group_size:
            continue
        buf = random_kernel.random_bits(device, dtype, n, dist, seed=2024, counter=5, low=-3, high=250, local=local)
        outs.append(read(buf).view(dtype.numpy))
    assert len(outs) >= 2
    for other in outs[1:]:
        bits_equal(other, outs[0])
    # the counter offset shifts the stream: element i of counter 5 is element i+5 of counter 0
    shifted = read(random_kernel.random_bits(device, dtype, n + 5, dist, seed=2024, counter=0, low=-3, high=250))
    bits_equal(shifted.view(dtype.numpy)[5:], outs[0])


def test_manual_seed_rand_independent_of_work_group_size(device: zyx.Device, monkeypatch: pytest.MonkeyPatch,
                                                         bits_equal) -> None:
    outs = []
    for local in (1, 32, 256):
        monkeypatch.setattr(random_kernel, "DEFAULT_LOCAL_SIZE", local)
        zyx.manual_seed(42)
        outs.append((zyx.rand(3, 333, device=device).numpy(), zyx.randn(1001, device=device).numpy(),
                     zyx.randint(0, 100, (999,), device=device).numpy()))
    for other in outs[1:]:
        for a, b in zip(other, outs[0]):
            bits_equal(a, b)


def test_same_seed_same_values_on_every_device(bits_equal) -> None:
    results = []
    for dev in [d for d in usable_devices() if not d.simulator]:
        zyx.manual_seed(7)
        results.append(zyx.rand(100, device=dev).numpy())
    for r in results[1:]:
        bits_equal(r, results[0])


def test_seed_and_counter_semantics(device: zyx.Device, bits_equal) -> None:
    zyx.manual_seed(123)
    a = zyx.rand(10, device=device).numpy()
    b = zyx.rand(20, device=device).numpy()
    zyx.manual_seed(123)
    c = zyx.rand(30, device=device).numpy()
    bits_equal(c, np.concatenate([a, b]))  # splitting a draw does not change the stream
    assert not np.array_equal(a, b[:10])  # consecutive calls differ
    zyx.manual_seed(124)
    assert not np.array_equal(zyx.rand(10, device=device).numpy(), a)  # another seed differs
    zyx.manual_seed(2**64 + 123)  # seeds are taken modulo 2**64
    bits_equal(zyx.rand(10, device=device).numpy(), a)


def test_manual_seed_rejects_non_int() -> None:
    with pytest.raises(zyx.DTypeError, match="int"):
        zyx.manual_seed(1.5)


def test_rand_statistics(device: zyx.Device) -> None:
    zyx.manual_seed(1)
    x = zyx.rand(1 << 16, device=device).numpy().astype(np.float64)
    assert x.min() >= 0.0 and x.max() < 1.0
    assert abs(x.mean() - 0.5) < 0.01
    assert abs(x.var() - 1 / 12) < 0.003
    hist = np.histogram(x, bins=16, range=(0, 1))[0]
    assert hist.min() > 0.9 * x.size / 16 and hist.max() < 1.1 * x.size / 16
    assert np.unique(x).size > 0.99 * x.size


def test_randn_statistics(device: zyx.Device) -> None:
    zyx.manual_seed(2)
    x = zyx.randn(1 << 16, device=device).numpy().astype(np.float64)
    assert np.isfinite(x).all()
    assert abs(x.mean()) < 0.02
    assert abs(x.std() - 1) < 0.02
    assert abs(np.mean(x**3)) < 0.05  # symmetric
    assert 0.66 < np.mean(np.abs(x) < 1) < 0.70  # ~68.3% within one sigma
    assert (np.abs(x) > 3).sum() > 50


@pytest.mark.parametrize("dtype", [zyx.float16, zyx.bfloat16, zyx.float64, zyx.float8_e4m3, zyx.float8_e5m2],
                         ids=lambda d: d.name)
def test_rand_small_and_wide_floats_in_unit_interval(device: zyx.Device, dtype) -> None:
    x = zyx.rand(4096, dtype=dtype, device=device)
    assert x.dtype is dtype
    v = x.numpy().astype(np.float64)
    assert v.min() >= 0.0 and v.max() < 1.0
    p = min(dtype.mantissa_bits, 24)  # values k / 2**p: the grid's mean is 1/2 - 2**-(p+1)
    assert abs(v.mean() - (0.5 - 2.0 ** -(p + 1))) < 0.02
    assert np.unique(v).size >= min(2**p // 2, 1000)


@pytest.mark.parametrize("dtype", [zyx.float16, zyx.bfloat16, zyx.float64], ids=lambda d: d.name)
def test_randn_other_dtypes(device: zyx.Device, dtype) -> None:
    v = zyx.randn(8192, dtype=dtype, device=device).numpy().astype(np.float64)
    assert np.isfinite(v).all() and abs(v.mean()) < 0.05 and abs(v.std() - 1) < 0.05


def test_randint_bounds_and_coverage(device: zyx.Device) -> None:
    x = zyx.randint(-5, 5, (20000,), device=device)
    assert x.dtype is zyx.int64 and x.shape == (20000,)
    v = x.numpy()
    assert v.min() == -5 and v.max() == 4  # low inclusive, high exclusive
    counts = np.bincount(v + 5)
    assert counts.size == 10 and counts.min() > 1700
    assert zyx.randint(3, 4, (50,), device=device).tolist() == [3] * 50
    y = zyx.randint(10, (3, 4), device=device)  # randint(high, shape)
    assert y.shape == (3, 4) and 0 <= y.numpy().min() and y.numpy().max() < 10
    z = zyx.randint(0, 2**40, (1000,), device=device).numpy()
    assert z.max() > 2**32 and z.min() >= 0 and z.max() < 2**40
    assert zyx.randint(0, 5, device=device).shape == ()


@pytest.mark.parametrize("dtype,low,high", [(zyx.int8, -128, 128), (zyx.uint8, 0, 256), (zyx.bool, 0, 2),
                                            (zyx.int16, -3, 3), (zyx.uint32, 0, 2**32)])
def test_randint_dtypes(device: zyx.Device, dtype, low, high) -> None:
    v = zyx.randint(low, high, (5000,), dtype=dtype, device=device).numpy()
    assert v.dtype == dtype.numpy
    w = v.astype(np.int64)
    assert w.min() >= low and w.max() < high
    if high - low <= 256:
        assert np.unique(w).size == high - low


def test_randint_64_bit_extremes(device: zyx.Device) -> None:
    u = zyx.randint(2**63, 2**64, (2000,), dtype=zyx.uint64, device=device).numpy()
    assert u.dtype == np.uint64 and int(u.min()) >= 2**63
    full = zyx.randint(0, 2**64, (2000,), dtype=zyx.uint64, device=device).numpy()
    assert int(full.max()) > 2**63 and int(full.min()) < 2**63
    s = zyx.randint(-(2**63), 2**63, (2000,), device=device).numpy()
    assert s.min() < -(2**62) and s.max() > 2**62
    with pytest.raises(zyx.DTypeError, match="uint64"):
        zyx.randint(-1, 5, (3,), dtype=zyx.uint64, device=device)


def test_random_different_calls_differ(device: zyx.Device) -> None:
    assert not np.array_equal(zyx.rand(100, device=device).numpy(), zyx.rand(100, device=device).numpy())
    assert not np.array_equal(zyx.randn(100, device=device).numpy(), zyx.randn(100, device=device).numpy())
    assert not np.array_equal(zyx.randint(0, 2**30, (100,), device=device).numpy(),
                              zyx.randint(0, 2**30, (100,), device=device).numpy())


def test_random_shapes(device: zyx.Device) -> None:
    assert zyx.rand(device=device).shape == ()
    assert zyx.rand(2, 3, device=device).shape == (2, 3)
    assert zyx.randn((4, 1), device=device).shape == (4, 1)
    assert zyx.rand(0, 5, device=device).numpy().shape == (0, 5)


def test_random_bad_arguments(device: zyx.Device) -> None:
    with pytest.raises(zyx.DTypeError, match="floating"):
        zyx.rand(3, dtype=zyx.int32, device=device)
    with pytest.raises(zyx.DTypeError, match="floating"):
        zyx.randn(3, dtype=zyx.bool, device=device)
    with pytest.raises(zyx.DTypeError, match="integer"):
        zyx.randint(0, 5, (3,), dtype=zyx.float32, device=device)
    with pytest.raises(zyx.ShapeError, match="low < high"):
        zyx.randint(5, 5, (3,), device=device)
    with pytest.raises(zyx.DTypeError, match="int8"):
        zyx.randint(0, 1000, (3,), dtype=zyx.int8, device=device)


@pytest.mark.needs_device
def test_generator_counter_advances() -> None:
    zyx.manual_seed(5)
    assert creation._generator.counter == 0
    zyx.rand(10)
    zyx.randint(0, 3, (4, 5))
    assert creation._generator.counter == 30
