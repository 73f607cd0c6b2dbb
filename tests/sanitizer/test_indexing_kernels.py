"""The gather load and every scatter kernel (atomic, partition, owner, private, and sorted: the keys
kernel, the device sort, the segments kernel) under Oclgrind on tiny odd shapes with duplicate indices
and strided operands, compared with NumPy. (An in-place write's guarded kernel is not run here:
Oclgrind 21.10 reports its read of the error-flag slot as uninitialized however the host cleared it,
by clEnqueueFillBuffer or a blocking write.)"""
from __future__ import annotations

import numpy as np
import pytest

import zyx


def test_gather_load(sim):
    a = np.arange(5 * 7, dtype=np.float32).reshape(5, 7)
    x = zyx.from_numpy(a, device=sim).T  # a strided table
    idx = np.array([[4, 0, 3], [1, 1, 2]], np.int64)
    i = zyx.from_numpy(idx, device=sim)
    np.testing.assert_array_equal((x[1:, i] * 2).numpy(), a.T[1:, idx] * 2)
    np.testing.assert_array_equal(x.gather(1, i[0, :2].expand(7, 2)).numpy(),
                                  np.take_along_axis(a.T, np.broadcast_to(idx[0, :2], (7, 2)), 1))


#: each scatter method with the reduce its ``scatter_reduce`` case checks
METHODS = [("atomic", "amax"), ("partition", "amax"), ("owner", "amax"), ("private", "amax"), ("sorted", "amin")]
REDUCE_AT = {"amax": np.maximum, "amin": np.minimum}


@pytest.mark.parametrize(("method", "reduce"), METHODS, ids=[m for m, _ in METHODS])
@pytest.mark.parametrize("dtype", [zyx.float32, zyx.int64, zyx.float16], ids=lambda d: d.name)
def test_scatter_kernels(sim, needs, method, reduce, dtype, monkeypatch):
    import zyx.kernels.scatter as kernels

    needs(dtype)
    monkeypatch.setattr(kernels, "force", method)
    monkeypatch.setattr(kernels, "SEGMENT_SPAN", 2)  # sorted: several segment work items, runs crossing their spans
    x0 = (np.arange(5 * 3) % 7).astype(np.float32).reshape(5, 3)
    idx = np.array([[0, 4, 4], [2, 0, 4], [0, 1, 1], [3, 3, 0]], np.int64)  # duplicates
    src = (np.arange(4 * 3) % 5 - 2).astype(np.float32).reshape(4, 3)
    x = zyx.from_numpy(x0, device=sim).cast(dtype)
    s = zyx.from_numpy(src, device=sim).cast(dtype)
    i = zyx.from_numpy(idx, device=sim)
    cols = np.broadcast_to(np.arange(3), idx.shape)
    want = x0.copy()
    np.add.at(want, (idx, cols), src)
    np.testing.assert_array_equal(x.scatter_add(0, i, s).cast(zyx.float32).numpy(), want)
    want = x0.copy()
    REDUCE_AT[reduce].at(want, (idx, cols), src)
    np.testing.assert_array_equal(x.scatter_reduce(0, i, s, reduce).cast(zyx.float32).numpy(), want)
    # into a strided view, out of place (index_put), a duplicate row: the write kernel with a strided destination
    base = zyx.from_numpy(np.zeros((4, 6), np.float32), device=sim).cast(dtype)
    rows = zyx.from_numpy(np.array([3, 0, 3], np.int64), device=sim)
    got = zyx.index_put(base.T[::2], (slice(None), rows), zyx.from_numpy(src[:3].T.copy(), device=sim).cast(dtype),
                        accumulate=True)
    want = np.zeros((4, 6), np.float32).T[::2].copy()
    np.add.at(want, (slice(None), [3, 0, 3]), src[:3].T)
    np.testing.assert_array_equal(got.cast(zyx.float32).numpy(), want)
