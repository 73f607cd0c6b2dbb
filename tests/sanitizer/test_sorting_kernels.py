"""The sorting and selection kernels (templates/sorting/) under Oclgrind on tiny odd shapes: every
sort strategy (bitonic, per-row insertion and radix, block-parallel radix; the size thresholds
lowered so that small rows take each path), topk (rows and blocks + merge), searchsorted with a
sorter, unique and the gradient's row scatter/gather; results compared with NumPy's stable sort."""
from __future__ import annotations

import numpy as np
import pytest

import zyx
from zyx.kernels import sorting as sk


@pytest.fixture
def small_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    """Thresholds scaled down: rows of 40 leave the bitonic path, rows of 100 take the block radix."""
    monkeypatch.setattr(sk, "BITONIC_MAX", 16)
    monkeypatch.setattr(sk, "LONG_ROW_MIN", 64)
    monkeypatch.setattr(sk, "BLOCK_MIN", 16)


def _data(shape, dtype) -> np.ndarray:
    rng = np.random.default_rng(3)
    a = rng.integers(-9, 10, shape).astype(np.float32) / 2
    a.reshape(-1)[::7] = np.nan
    return a.astype(dtype.numpy)


@pytest.mark.parametrize("dtype", [zyx.uint8, zyx.bfloat16, zyx.float32, zyx.float64], ids=lambda d: d.name)
@pytest.mark.parametrize("shape", [(3, 13), (2, 40), (1, 100)], ids=["bitonic", "rows", "blocks"])
def test_sort_strategies(sim, needs, small_paths, dtype, shape):
    needs(dtype)
    a = _data(shape, dtype) if dtype.is_float else np.random.default_rng(4).integers(0, 9, shape).astype(np.uint8)
    want = sk.sort_strategy(sim, *shape)
    assert want == {13: "bitonic", 40: "rows", 100: "blocks"}[shape[1]]
    x = zyx.from_numpy(a, device=sim)
    for desc in (False, True):
        r = x.sort(descending=desc)
        key = a.astype(np.float64)
        order = np.argsort(-key if desc else key, axis=-1, kind="stable")
        if desc and dtype.is_float:  # NaN first when descending, in input order
            nan = np.isnan(key)
            order = np.argsort(np.where(nan, -np.inf, -key), axis=-1, kind="stable")
        np.testing.assert_array_equal(r.indices.numpy(), order)


def test_topk_searchsorted_unique_and_row_scatter(sim, small_paths, monkeypatch):
    a = np.random.default_rng(5).permutation(2 * 100).reshape(2, 100).astype(np.float32)
    x = zyx.from_numpy(a, device=sim)
    monkeypatch.setattr(sk, "_parallel_items", lambda device: 8)  # 2 rows of 100: blocks + merge
    r = x.topk(5)
    np.testing.assert_array_equal(r.indices.numpy(), np.argsort(-a, axis=-1)[:, :5])
    monkeypatch.setattr(sk, "_parallel_items", lambda device: 1)  # one work-item per row
    np.testing.assert_array_equal(x.topk(3, largest=False).indices.numpy(), np.argsort(a, axis=-1)[:, :3])
    seq = np.array([5, 1, 3, 3, 9], np.int32)
    order = np.argsort(seq, kind="stable")
    q = np.array([0, 3, 4, 10, 9], np.int32)
    got = zyx.searchsorted(zyx.from_numpy(seq, device=sim), zyx.from_numpy(q, device=sim), right=True,
                           sorter=zyx.from_numpy(order, device=sim))
    np.testing.assert_array_equal(got.numpy(), np.searchsorted(seq[order], q, side="right"))
    u, inv, cnt = zyx.from_numpy(np.array([3, 1, 3, 2, 1], np.int16), device=sim).unique(
        return_inverse=True, return_counts=True)
    assert u.tolist() == [1, 2, 3] and inv.tolist() == [2, 0, 2, 1, 0] and cnt.tolist() == [2, 1, 2]
    w = zyx.from_numpy(a[:, :7].copy(), device=sim).requires_grad_()
    w.kthvalue(3).values.sum().backward()
    want = np.zeros((2, 7), np.float32)
    want[np.arange(2), np.argsort(a[:, :7], axis=-1)[:, 2]] = 1
    np.testing.assert_array_equal(w.grad.numpy(), want)
