"""Fills, strided copies and casts run as graph kernels; random bits as the one generated kernel that
is not IR (``zyx.kernels.random``)."""
from __future__ import annotations

import numpy as np
import pytest

import zyx
from zyx.backend.program import BuildStats
from zyx.kernels import random as random_kernel

PAIRS = [(zyx.float32, zyx.bfloat16), (zyx.float32, zyx.int8), (zyx.float16, zyx.float32),
         (zyx.int64, zyx.float16), (zyx.float64, zyx.float8_e4m3), (zyx.bool, zyx.float32),
         (zyx.float8_e5m2, zyx.int8), (zyx.int32, zyx.bool)]


def _strided_source(d: zyx.DType) -> np.ndarray:
    vals = np.array([0.0, -0.0, 1.5, -2.75, 100.0, -100.0, 0.3, 7.0, 1e-3, 64.0, -1.0, 3.0], dtype=np.float64)
    with np.errstate(all="ignore"):
        return vals.astype(np.float32).astype(d.numpy).reshape(3, 4)


@pytest.mark.parametrize("src,dst", PAIRS, ids=[f"{s.name}-{d.name}" for s, d in PAIRS])
def test_cast_of_a_strided_view(device: zyx.Device, values_equal, src: zyx.DType, dst: zyx.DType) -> None:
    host = _strided_source(src)
    x = zyx.from_numpy(host, device=device)
    got = x.T[::-1].cast(dst).numpy()  # [::-1] of the transpose
    with np.errstate(all="ignore"):
        expected = host.T[::-1].astype(dst.numpy)
    values_equal(got, expected)


def test_cast_nan_to_int_is_zero(device: zyx.Device) -> None:
    host = np.array([np.nan, -np.nan, 5.9, np.inf] * 300, dtype=np.float32)  # long enough to vectorize
    got = zyx.from_numpy(host, device=device).cast(zyx.int32).numpy()
    assert got[:4].tolist() == [0, 0, 5, 2**31 - 1]
    assert (got.reshape(-1, 4) == got[:4]).all()


def test_raw_copies_share_one_kernel_per_width(device: zyx.Device) -> None:
    builds = None
    for d in (zyx.float16, zyx.bfloat16, zyx.int16, zyx.uint16):
        host = np.arange(35, dtype=np.uint16).view(d.numpy).reshape(5, 7)
        out = zyx.from_numpy(host, device=device).T.clone().numpy()  # a stored copy moves raw bits
        np.testing.assert_array_equal(out.view(np.uint16), np.arange(35).reshape(5, 7).T)
        if builds is None:  # after the first dtype, the others reuse its kernel
            builds = (BuildStats.source_builds, BuildStats.binary_loads)
    assert (BuildStats.source_builds, BuildStats.binary_loads) == builds


@pytest.mark.parametrize("d,value", [(zyx.bool, True), (zyx.int8, -3), (zyx.bfloat16, 1.5), (zyx.float32, np.nan),
                                     (zyx.int64, -(2**62)), (zyx.float64, -0.0), (zyx.float8_e4m3, 448.0)])
def test_full_values(device: zyx.Device, bits_equal, d: zyx.DType, value) -> None:
    if not device.supports(d):
        pytest.skip(f"{device} has no {d.name}")
    one = np.array(value).astype(d.numpy)
    bits_equal(zyx.full(1001, value, dtype=d, device=device).numpy(), np.full(1001, one, dtype=d.numpy))


def test_full_fuses_and_a_new_value_compiles_nothing(device: zyx.Device) -> None:
    x = zyx.from_numpy(np.arange(6, dtype=np.float32), device=device)
    (zyx.full(6, 2.0, device=device) + x).numpy()
    before, builds = zyx.kernel_count(), BuildStats.source_builds
    np.testing.assert_array_equal((zyx.full(6, 3.5, device=device) + x).numpy(), np.arange(6) + 3.5)
    assert zyx.kernel_count() == before + 1 and BuildStats.source_builds == builds


def test_zero_sized_kernels_launch_nothing(device: zyx.Device) -> None:
    assert zyx.full(0, 1.0, device=device).realize().numel() == 0
    assert random_kernel.random_bits(device, zyx.float32, 0, "uniform", 1, 0).nbytes == 0
    assert zyx.rand(0, 3, device=device).realize().shape == (0, 3)
    x = zyx.zeros(3, device=device).realize()
    before = zyx.kernel_count()
    assert x[3:].cast(zyx.bfloat16).numpy().shape == (0,)
    assert zyx.kernel_count() == before
