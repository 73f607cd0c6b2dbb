"""Gather loads (an index that uses values loaded from another buffer) and ``embedding``.

``embedding`` is one gather kernel: compared with PyTorch for int32/int64 indices, leading
shapes from rank 0 to rank 3, strided indices, every float width of the table; an index
outside the table raises ``IndexOutOfRange`` (an ``IndexError``) at readback and never
reads out of bounds.
"""
from __future__ import annotations

import numpy as np
import pytest

import zyx
import zyx.nn.functional as F
from zyx.codegen.ir_source import kernel_source
from zyx.ir.kernel import Opts

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("shape", [(), (5,), (2, 3), (2, 1, 4)])
@pytest.mark.parametrize("idx_dt", [np.int32, np.int64])
def test_embedding_matches_torch(shape, idx_dt):
    rng = np.random.default_rng(0)
    w = rng.normal(size=(37, 9)).astype(np.float32)
    ix = rng.integers(0, 37, size=shape).astype(idx_dt)
    got = F.embedding(zyx.tensor(ix), zyx.tensor(w)).numpy()
    want = torch.nn.functional.embedding(torch.from_numpy(np.asarray(ix, np.int64)), torch.from_numpy(w)).numpy()
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("wdt", [zyx.float16, zyx.bfloat16, zyx.float64, zyx.int32])
def test_embedding_table_dtypes_and_strided_indices(wdt):
    rng = np.random.default_rng(1)
    w32 = rng.normal(size=(11, 6)).astype(np.float32)
    ix = rng.integers(0, 11, size=(4, 3)).astype(np.int64)
    table = zyx.tensor(w32).cast(wdt)
    got = F.embedding(zyx.tensor(ix).transpose(0, 1), table)  # a strided index view
    assert got.dtype is wdt and got.shape == (3, 4, 6)
    want = table.cast(zyx.float32).numpy()[ix.T]
    np.testing.assert_array_equal(got.cast(zyx.float32).numpy(), want)


def test_embedding_empty_and_kernel_is_a_gather(monkeypatch):
    import zyx.graph.realization as realization

    w = zyx.tensor(np.ones((4, 3), np.float32))
    assert F.embedding(zyx.tensor(np.zeros((0, 2), np.int64)), w).shape == (0, 2, 3)
    seen = []
    real = realization.launch_kernel
    monkeypatch.setattr(realization, "launch_kernel", lambda d, k, o, a: (seen.append(k), real(d, k, o, a))[1])
    ids = zyx.tensor(np.array([[0, 3, 1], [2, 2, 0]], np.int64))
    np.testing.assert_array_equal(F.embedding(ids + 0, w).numpy(), np.ones((2, 3, 3)))
    assert len(seen) == 1  # the index arithmetic fuses into the gather
    k = seen[0]
    src = kernel_source(k, Opts(local=2, upcast=(1, 2)))
    assert "zyx_err" in src and "_x0" in src and "in1[" in src  # the row comes from the index buffer, checked
    assert k.red_shape == ()  # n x D work, no reduce over the vocabulary


@pytest.mark.parametrize("bad", [-1, 37, 2**40])
def test_embedding_out_of_range_index_raises(bad):
    w = zyx.tensor(np.ones((37, 5), np.float32))
    ix = np.array([1, bad, 2], np.int64)
    with pytest.raises(IndexError, match="index out of range"):
        F.embedding(zyx.tensor(ix), w).numpy()
    with pytest.raises(IndexError):
        torch.nn.functional.embedding(torch.from_numpy(ix), torch.ones(37, 5))
    np.testing.assert_array_equal(F.embedding(zyx.tensor(np.array([3], np.int32)), w).numpy(), np.ones((1, 5)))


def test_embedding_rejects_float_indices():
    with pytest.raises(zyx.DTypeError):
        F.embedding(zyx.tensor(np.ones(3, np.float32)), zyx.tensor(np.ones((4, 2), np.float32)))


def test_two_views_of_one_gather_fuse_and_the_pad_border_is_not_checked(monkeypatch):
    """Two views of one gathered value in one kernel, one behind a pad: each gather's index variable is
    declared where it is used, and the pad's border (where the index source reads as 0, so ``i - 1`` is
    -1) reads nothing and raises nothing; a bad index inside the pad still raises."""
    import zyx.graph.realization as realization
    from zyx.frontend.index_access import take_rows

    seen = []
    real = realization.launch_kernel
    monkeypatch.setattr(realization, "launch_kernel", lambda d, k, o, a: (seen.append(k), real(d, k, o, a))[1])
    tn = np.array([[0.5], [1.5], [-2.0], [4.0], [8.0]], np.float32)
    t = zyx.tensor(tn)
    g = take_rows(t, zyx.tensor(np.array([3, 0, 4], np.int64))).reshape(1, 3)
    np.testing.assert_array_equal((g - g.pad((0, 1)).narrow(1, 1, 3)).numpy(), [[4.0 - 0.5, 0.5 - 8.0, 8.0]])
    assert len(seen) == 1  # both views of the gather in one kernel
    g = take_rows(t, zyx.tensor(np.array([4, 1, 5], np.int64)) - 1).reshape(1, 3)
    gt = torch.from_numpy(tn)[torch.tensor([3, 0, 4])].reshape(1, 3)
    want = gt - torch.nn.functional.pad(gt, (1, 1))[:, :3]
    np.testing.assert_array_equal((g - g.pad((1, 1)).narrow(1, 0, 3)).numpy(), want.numpy())
    bad = take_rows(t, zyx.tensor(np.array([4, 7, 5], np.int64)) - 1).reshape(1, 3)
    with pytest.raises(IndexError, match="index out of range"):
        (bad.pad((1, 1)).narrow(1, 0, 3) * 2).numpy()
