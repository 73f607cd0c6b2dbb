"""zyx.codegen.fill_copy_random: the strided copy/cast and fill kernels, called directly."""
from __future__ import annotations

import numpy as np
import pytest

import zyx
from zyx.backend.program import BuildStats
from zyx.backend.transfer import read, upload
from zyx.codegen import fill_copy_random
from zyx.ir.view import View

PAIRS = [(zyx.float32, zyx.bfloat16), (zyx.float32, zyx.int8), (zyx.float16, zyx.float32),
         (zyx.int64, zyx.float16), (zyx.float64, zyx.float8_e4m3), (zyx.bool, zyx.float32),
         (zyx.float8_e5m2, zyx.int8), (zyx.int32, zyx.bool)]


def _strided_source(d: zyx.DType) -> np.ndarray:
    vals = np.array([0.0, -0.0, 1.5, -2.75, 100.0, -100.0, 0.3, 7.0, 1e-3, 64.0, -1.0, 3.0], dtype=np.float64)
    with np.errstate(all="ignore"):
        return vals.astype(np.float32).astype(d.numpy).reshape(3, 4)


@pytest.mark.parametrize("src,dst", PAIRS, ids=[f"{s.name}-{d.name}" for s, d in PAIRS])
def test_copy_cast_of_a_strided_view(device: zyx.Device, values_equal, src: zyx.DType, dst: zyx.DType) -> None:
    host = _strided_source(src)
    buf = upload(device, host)
    view = View.contiguous((3, 4)).permute((1, 0)).slice(0, 3, -1, -1)  # [::-1] of the transpose
    out = fill_copy_random.copy_cast(device, buf, view, src, dst)
    got = read(out).view(dst.numpy).reshape(view.shape)
    with np.errstate(all="ignore"):
        expected = host.T[::-1].astype(dst.numpy)
    values_equal(got, expected)


def test_copy_cast_nan_to_int_is_zero(device: zyx.Device) -> None:
    host = np.array([np.nan, -np.nan, 5.9, np.inf] * 300, dtype=np.float32)  # long enough to vectorize
    out = fill_copy_random.copy_cast(device, upload(device, host), View.contiguous(host.shape), zyx.float32, zyx.int32)
    got = read(out).view(np.int32)
    assert got[:4].tolist() == [0, 0, 5, 2**31 - 1]
    assert (got.reshape(-1, 4) == got[:4]).all()


def test_raw_copies_share_one_kernel_per_width(device: zyx.Device) -> None:
    view = View.contiguous((5, 7)).permute((1, 0))
    builds = None
    for d in (zyx.float16, zyx.bfloat16, zyx.int16, zyx.uint16):
        host = np.arange(35, dtype=np.uint16).view(d.numpy).reshape(5, 7)
        out = fill_copy_random.copy_cast(device, upload(device, host), view, d, d)
        np.testing.assert_array_equal(read(out).view(np.uint16).reshape(7, 5), np.arange(35).reshape(5, 7).T)
        if builds is None:  # after the first dtype, the others reuse its kernel
            builds = (BuildStats.source_builds, BuildStats.binary_loads)
    assert (BuildStats.source_builds, BuildStats.binary_loads) == builds


@pytest.mark.parametrize("d,value", [(zyx.bool, True), (zyx.int8, -3), (zyx.bfloat16, 1.5), (zyx.float32, np.nan),
                                     (zyx.int64, -(2**62)), (zyx.float64, -0.0), (zyx.float8_e4m3, 448.0)])
def test_fill(device: zyx.Device, bits_equal, d: zyx.DType, value) -> None:
    one = np.array(value).astype(d.numpy)
    out = fill_copy_random.fill(device, d, 1001, one)
    bits_equal(read(out).view(d.numpy), np.full(1001, one, dtype=d.numpy))


def test_zero_sized_kernels_launch_nothing(device: zyx.Device) -> None:
    before = zyx.kernel_count()
    assert fill_copy_random.fill(device, zyx.float32, 0, np.float32(1)).nbytes == 0
    assert fill_copy_random.random_bits(device, zyx.float32, 0, "uniform", 1, 0).nbytes == 0
    buf = upload(device, np.zeros(3, np.float32))
    assert fill_copy_random.copy_cast(device, buf, View((0, 3), (3, 1)), zyx.float32, zyx.bfloat16).nbytes == 0
    assert zyx.kernel_count() == before
