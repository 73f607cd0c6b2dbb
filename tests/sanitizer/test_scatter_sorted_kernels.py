"""The sort + segmented-reduce scatter (``codegen.scatter`` "sorted": the keys kernel, the device sort,
the segments kernel) under Oclgrind on small odd shapes with duplicates and a strided destination,
compared with NumPy. (The guarded in-place variant is not run here, as for the other scatter kernels:
see test_indexing_kernels.)"""
from __future__ import annotations

import numpy as np
import pytest

import zyx


@pytest.mark.parametrize("dtype", [zyx.float32, zyx.int64, zyx.float16], ids=lambda d: d.name)
def test_sorted_scatter(sim, needs, dtype, monkeypatch):
    import zyx.codegen.scatter as kernels

    needs(dtype)
    monkeypatch.setattr(kernels, "force", "sorted")
    monkeypatch.setattr(kernels, "SEGMENT_SPAN", 2)  # several segment work items, runs crossing their spans
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
    np.minimum.at(want, (idx, cols), src)
    np.testing.assert_array_equal(x.scatter_reduce(0, i, s, "amin").cast(zyx.float32).numpy(), want)
    # into a strided view, out of place (index_put)
    base = zyx.from_numpy(np.zeros((4, 6), np.float32), device=sim).cast(dtype)
    rows = zyx.from_numpy(np.array([3, 0, 3], np.int64), device=sim)
    got = zyx.index_put(base.T[::2], (slice(None), rows), zyx.from_numpy(src[:3].T.copy(), device=sim).cast(dtype),
                        accumulate=True)
    want = np.zeros((4, 6), np.float32).T[::2].copy()
    np.add.at(want, (slice(None), [3, 0, 3]), src[:3].T)
    np.testing.assert_array_equal(got.cast(zyx.float32).numpy(), want)
