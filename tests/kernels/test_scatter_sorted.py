"""The sort + segmented-reduce scatter (``zyx.kernels.scatter``, method "sorted": keys, the device sort,
one work item per run) against PyTorch 2.13 for every dtype and every reduction it serves, PyTorch's
bits where its CPU order defines them (the runs combine in point order), a strided destination,
int64 keys, bad indices, and when ``choose`` takes it."""
from __future__ import annotations

import numpy as np
import pytest

import zyx
import zyx.kernels.scatter as kernels

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(5)
DTYPES = [zyx.bool, zyx.uint8, zyx.int8, zyx.int16, zyx.int32, zyx.int64, zyx.float16, zyx.bfloat16, zyx.float32,
          zyx.float64]


@pytest.fixture
def sorted_scatter(monkeypatch):
    monkeypatch.setattr(kernels, "force", "sorted")
    monkeypatch.setattr(kernels, "SEGMENT_SPAN", 3)  # many work items, runs crossing their spans


def _same(got, want):
    np.testing.assert_array_equal(got.cast(zyx.float64).numpy(), want.double().numpy())


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: d.name)
def test_every_reduction_matches_torch(dt, sorted_scatter):
    tdt = getattr(torch, dt.name)
    low = 0 if dt in (zyx.uint8, zyx.bool) else -3
    x0 = RNG.integers(low, 4, size=(7, 5)).astype(np.float32)
    s0 = RNG.integers(low, 4, size=(9, 5)).astype(np.float32)
    idx = RNG.integers(0, 7, size=(9, 5))  # duplicates and untouched elements
    x, s, i = zyx.tensor(x0).cast(dt), zyx.tensor(s0).cast(dt), zyx.tensor(idx)
    t, ts, ti = torch.from_numpy(x0).to(tdt), torch.from_numpy(s0).to(tdt), torch.from_numpy(idx)
    reduces = ("sum", "prod", "amax", "amin") + (() if dt is zyx.bool else ("mean",))
    for k, reduce in enumerate(reduces):
        for inc in (True, False) if dt is zyx.float32 else ((k + dt.itemsize) % 2 == 0,):  # (fewer compiles)
            _same(x.scatter_reduce(0, i, s, reduce, include_self=inc),
                  t.scatter_reduce(0, ti, ts, reduce, include_self=inc))
    i2 = RNG.integers(0, 5, size=(7, 3))  # along the last dim, src larger than index
    _same(x.scatter_add(1, zyx.tensor(i2), s), t.scatter_add(1, torch.from_numpy(i2), ts))
    u = np.stack([RNG.permutation(7)[:4] for _ in range(5)], 1)  # unique along dim 0: a defined winner
    _same(x.scatter(0, zyx.tensor(u), s), t.scatter(0, torch.from_numpy(u), ts))


def test_segment_spans_cut_runs_anywhere(monkeypatch):
    monkeypatch.setattr(kernels, "force", "sorted")
    vals, idx = RNG.normal(size=500).astype(np.float32), RNG.integers(0, 40, 500)
    want = torch.zeros(40).scatter_add(0, torch.from_numpy(idx), torch.from_numpy(vals)).numpy()
    for span in (1, 2, 7, 64, 1000):
        monkeypatch.setattr(kernels, "SEGMENT_SPAN", span)
        got = zyx.zeros(40).scatter_add(0, zyx.tensor(idx), zyx.tensor(vals)).numpy()
        np.testing.assert_array_equal(got, want)


def test_float_sums_have_torch_bits_and_are_deterministic(sorted_scatter):
    vals = (RNG.normal(size=4000) * 10.0 ** RNG.integers(-3, 4, 4000)).astype(np.float32)
    idx = RNG.integers(0, 37, 4000)
    want = torch.zeros(37).index_put_((torch.from_numpy(idx),), torch.from_numpy(vals), accumulate=True).numpy()
    a = zyx.zeros(37).index_put_((zyx.tensor(idx),), zyx.tensor(vals), accumulate=True).numpy()
    b = zyx.zeros(37).scatter_add(0, zyx.tensor(idx), zyx.tensor(vals)).numpy()
    np.testing.assert_array_equal(a, want)
    np.testing.assert_array_equal(b, want)


def test_strided_destination_negative_indices_and_index_put(sorted_scatter):
    x0 = RNG.normal(size=(6, 8)).astype(np.float32)
    v0 = RNG.normal(size=(5, 3)).astype(np.float32)
    rows, cols = np.array([-1, 0, 3, 3, 5]), np.array([[1], [0], [2], [2], [1]])
    z = zyx.tensor(x0).T[::2]  # (4, 6), strided
    t = torch.from_numpy(x0.copy()).T[::2]
    got = zyx.index_put(z, (zyx.tensor(cols[:, 0]), zyx.tensor(rows)), zyx.tensor(v0[:, 0]), accumulate=True)
    want = torch.index_put(t, (torch.from_numpy(cols[:, 0]), torch.from_numpy(rows)), torch.from_numpy(v0[:, 0]),
                           accumulate=True)
    _same(got, want)
    a, b = z * 1, t * 1
    a[zyx.tensor(cols), 1:4] = zyx.tensor(v0[:, None, :3].copy())  # rows 2, 2: the last one written wins
    b[torch.from_numpy(cols), 1:4] = torch.from_numpy(v0[:, None, :3].copy())
    _same(a, b)
    # a scalar value, in place (the guarded kernels, every index good), rank 0
    _same(a.scatter(1, zyx.tensor(cols[:4]), 2.5), b.scatter(1, torch.from_numpy(cols[:4]), 2.5))
    r4 = np.array([-1, 0, 3, 3, 1])
    a.index_put_((zyx.tensor(r4),), zyx.tensor(v0[:, :1].copy()), accumulate=True)
    b.index_put_((torch.from_numpy(r4),), torch.from_numpy(v0[:, :1].copy()), accumulate=True)
    _same(a, b)
    r0 = zyx.tensor(np.float32(1.5)).scatter_add(0, zyx.tensor(np.int64(0)), zyx.tensor(np.float32(2.0)))
    assert r0.item() == 3.5


def test_bad_index_raises_and_writes_nothing(sorted_scatter):
    x = zyx.tensor(np.arange(6, dtype=np.float32))
    x.numpy()
    with pytest.raises(IndexError):
        x.index_put_((zyx.tensor(np.array([0, 6, 2])),), zyx.tensor(np.float32(1.0)), accumulate=True)
        x.numpy()
    np.testing.assert_array_equal(x.numpy(), np.arange(6, dtype=np.float32))
    with pytest.raises(IndexError):
        zyx.zeros(4).scatter_add(0, zyx.tensor(np.array([1, 9])), zyx.ones(2)).numpy()


def test_int64_keys(sorted_scatter, monkeypatch):
    # keys are int32 below 2**31 dest elements; the int64 path is the same kernels with long keys
    real = kernels._sorted

    def wide(device, w, flags, guarded, points, dests):
        return real(device, w, flags, guarded, points, 2**31 + dests)

    monkeypatch.setattr(kernels, "_sorted", wide)
    vals, idx = RNG.normal(size=300).astype(np.float32), RNG.integers(0, 50, 300)
    got = zyx.zeros(50).scatter_add(0, zyx.tensor(idx), zyx.tensor(vals)).numpy()
    want = torch.zeros(50).scatter_add(0, torch.from_numpy(idx), torch.from_numpy(vals)).numpy()
    np.testing.assert_array_equal(got, want)


def test_choose_takes_sorted_where_partition_would_be_long(monkeypatch):
    dev = zyx.default_device()
    if zyx.settings.heuristics_kind(dev) != "cpu":
        pytest.skip("the CPU rule")
    assert kernels.sorted_pays(dev, 64) and not kernels.sorted_pays(dev, 2)
    w = kernels.IndexedWrite(dest=None, dest_view=zyx.zeros(1000)._view, dtype=zyx.float32, shape=(1000,),
                             axes=(-1,), indices=(), value=1.0, reduce="add")
    monkeypatch.setattr(kernels, "SORTED_PARTS", 1)
    assert kernels.choose(dev, w, "deterministic") == "sorted"
    monkeypatch.setattr(kernels, "SORTED_PARTS", 1 << 20)
    assert kernels.choose(dev, w, "deterministic") == "partition"
    # and the deterministic path through it gives PyTorch's bits
    monkeypatch.setattr(kernels, "SORTED_PARTS", 1)
    vals, idx = RNG.normal(size=2000).astype(np.float32), RNG.integers(0, 30, 2000)
    zyx.use_deterministic_algorithms(True)
    try:
        got = zyx.zeros(30).scatter_add(0, zyx.tensor(idx), zyx.tensor(vals)).numpy()
    finally:
        zyx.use_deterministic_algorithms(False)
    np.testing.assert_array_equal(got, torch.zeros(30).scatter_add(0, torch.from_numpy(idx),
                                                                  torch.from_numpy(vals)).numpy())
