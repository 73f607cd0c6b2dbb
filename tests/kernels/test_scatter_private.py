"""The privatized scatter kernel (``kernels.scatter`` method ``private``): each of a few work items
combines its share of the points into the destination or its own copy, a second launch combines
the copies. Compared with PyTorch and with NumPy's ``ufunc.at`` on integer-valued data (exact in
every dtype, so any order of combining gives the same bits)."""
from __future__ import annotations

import numpy as np
import pytest

import zyx
import zyx.kernels.scatter as kernels
from zyx.backend.device import default_device

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(7)
FLOATS = [zyx.float16, zyx.bfloat16, zyx.float32, zyx.float64, zyx.float8_e4m3, zyx.float8_e5m2]
INTS = [zyx.bool, zyx.uint8, zyx.int8, zyx.uint16, zyx.int16, zyx.uint32, zyx.int32, zyx.uint64, zyx.int64]


@pytest.fixture
def private(monkeypatch):
    """Every scatter reduction runs the private kernel; ``private(parts)`` sets its work items."""
    monkeypatch.setattr(kernels, "force", "private")

    def parts(n: int | None) -> None:
        monkeypatch.setattr(kernels, "private_parts", n)

    return parts


def _bounded_index(dests: int, points: int) -> np.ndarray:
    """``points`` indices below ``dests``, each element hit at most ``ceil(points / dests)`` times."""
    reps = -(-points // dests)
    return RNG.permutation(np.tile(np.arange(dests), reps))[:points].astype(np.int64)


def _np_add_at(x0: np.ndarray, idx: np.ndarray, src: np.ndarray) -> np.ndarray:
    out = x0.astype(np.float64)
    np.add.at(out, idx, src.astype(np.float64))
    return out


@pytest.mark.parametrize("dtype", FLOATS + INTS, ids=lambda d: d.name)
def test_scatter_add_every_dtype(private, dtype):
    """Duplicates (up to 3 hits per element), odd sizes, 2 and 3 work items: NumPy's exact sums."""
    dests, points = 37, 101
    unsigned = dtype.name.startswith("uint") or dtype.is_bool
    lo = 0 if unsigned else -2
    x0 = RNG.integers(lo, 3, size=dests).astype(np.float64)
    src = RNG.integers(0 if unsigned else -1, 2, size=points).astype(np.float64)
    idx = _bounded_index(dests, points)
    # the default work items (the compute units) and 3; the other dtypes swap the element type only
    for parts in (None, 3) if dtype in (zyx.float32, zyx.int32) else (3,):
        private(parts)
        got = zyx.tensor(x0).cast(dtype).scatter_add(0, zyx.tensor(idx), zyx.tensor(src).cast(dtype))
        got = got.cast(zyx.float64).numpy()
        if dtype.is_bool:
            want = np.logical_or(x0 != 0, np.bincount(idx, src != 0, dests) > 0).astype(np.float64)
        else:
            want = _np_add_at(x0, idx, src)
        np.testing.assert_array_equal(got, want, err_msg=f"{dtype.name}, parts {parts}")


@pytest.mark.parametrize("reduce", ["sum", "prod", "amax", "amin", "mean"])
def test_scatter_reduce_include_self_both_ways(private, reduce):
    """2-D, along each dim, include_self True and False, 5 work items over 41 points: PyTorch's."""
    private(5)
    x0 = RNG.integers(-3, 4, size=(7, 5)).astype(np.float32)
    src = RNG.integers(-2, 3, size=(9, 5)).astype(np.float32)
    for dtype, tdtype in ((zyx.float32, torch.float32), (zyx.int32, torch.int32)):
        if reduce == "mean" and dtype is zyx.int32:
            continue  # an integer mean rounds each partial count differently in PyTorch; float covers it
        for dim, (shape_i, size) in enumerate((((9, 5), 7), ((7, 4), 5))):
            idx = RNG.integers(0, size, size=shape_i)
            s = src[: shape_i[0], : shape_i[1]]
            for include_self in (True, False):
                got = zyx.tensor(x0).cast(dtype).scatter_reduce(dim, zyx.tensor(idx), zyx.tensor(s).cast(dtype), reduce,
                                                               include_self=include_self)
                want = torch.from_numpy(x0).to(tdtype).scatter_reduce(
                    dim, torch.from_numpy(idx), torch.from_numpy(s.copy()).to(tdtype), reduce,
                    include_self=include_self)
                np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6,
                                           err_msg=f"{reduce} {dtype.name} dim {dim} include_self {include_self}")


def test_non_contiguous_operands(private):
    """A transposed destination, a sliced index, a permuted source; an in-place write into a
    strided view of a bigger tensor (dest offset and strides in both launches)."""
    private(3)
    x0 = RNG.normal(size=(6, 8)).astype(np.float32)
    idx0 = RNG.integers(0, 8, size=(5, 12))
    s0 = RNG.normal(size=(12, 5)).astype(np.float32)
    x, i, s = zyx.tensor(x0).T, zyx.tensor(idx0)[:, ::2].T, zyx.tensor(s0).permute(1, 0).T[::2]
    tx, ti, ts = torch.from_numpy(x0).T, torch.from_numpy(idx0)[:, ::2].T, torch.from_numpy(s0).permute(1, 0).T[::2]
    np.testing.assert_allclose(x.scatter_add(0, i, s).numpy(), tx.scatter_add(0, ti, ts).numpy(), rtol=1e-6, atol=1e-6)
    big0 = RNG.normal(size=(5, 9)).astype(np.float32)
    big, tbig = zyx.tensor(big0), torch.from_numpy(big0.copy())
    view, tview = big[1:, 1::2], tbig[1:, 1::2]  # (4, 4): offset 10, strides (9, 2)
    rows = RNG.integers(-4, 4, size=11)  # index_put wraps negative indices
    vals = RNG.normal(size=(11, 4)).astype(np.float32)
    view.index_put_((zyx.tensor(rows),), zyx.tensor(vals), accumulate=True)
    tview.index_put_((torch.from_numpy(rows),), torch.from_numpy(vals), accumulate=True)
    np.testing.assert_allclose(big.numpy(), tbig.numpy(), rtol=1e-6, atol=1e-6)
    got = zyx.index_put(zyx.tensor(x0).T[::2], (slice(None), zyx.tensor(np.array([3, 0, 3, 5]))),
                        zyx.tensor(vals[:4, :4].T.copy()), accumulate=True)
    want = torch.from_numpy(x0).T[::2].index_put((torch.arange(4)[:, None], torch.tensor([[3, 0, 3, 5]])),
                                                 torch.from_numpy(vals[:4, :4].T.copy()), accumulate=True)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-6)


def test_small_empty_and_scalar_values(private):
    private(None)
    x0 = RNG.normal(size=5).astype(np.float32)
    x = zyx.tensor(x0)
    empty = x.scatter_add(0, zyx.tensor(np.zeros(0, np.int64)), zyx.tensor(np.zeros(0, np.float32)))
    np.testing.assert_array_equal(empty.numpy(), x0)
    one = x.scatter_add(0, zyx.tensor(np.array([4])), zyx.tensor(np.array([2.5], np.float32)))  # 1 point: 1 part
    np.testing.assert_array_equal(one.numpy(), x0 + np.array([0, 0, 0, 0, 2.5], np.float32))
    rank0 = zyx.tensor(np.float32(1.5)).scatter_add(0, zyx.tensor(np.int64(0)), zyx.tensor(np.float32(2.0)))
    assert rank0.item() == 3.5
    acc = zyx.zeros(3, dtype=zyx.int64)
    # a broadcast rank-0 value
    acc.index_put_((zyx.tensor(np.array([2, 0, 2, 2])),), zyx.tensor(np.int64(5)), accumulate=True)
    np.testing.assert_array_equal(acc.numpy(), [5, 0, 15])
    x[zyx.tensor(np.array([1, 1]))] = 9.0  # a plain store under force="private" runs the atomic kernel
    assert x.numpy()[1] == 9.0


def test_out_of_range_index_writes_nothing(private):
    private(3)
    x0 = RNG.normal(size=(4, 3)).astype(np.float32)
    idx = np.array([[0, 1, 2], [3, 0, 1], [2, 4, 0]])  # one 4 in dim 0 of size 4
    src = RNG.normal(size=(3, 3)).astype(np.float32)
    x = zyx.tensor(x0)
    with pytest.raises(zyx.IndexOutOfRange, match="out of range"):
        x.scatter_add_(0, zyx.tensor(idx), zyx.tensor(src))
        x.numpy()
    np.testing.assert_array_equal(x.numpy(), x0)  # guarded: neither launch wrote
    acc = zyx.zeros(6)
    with pytest.raises(IndexError):
        acc.index_put_((zyx.tensor(np.array([1, -7, 2])),), zyx.tensor(np.ones(3, np.float32)), accumulate=True)
        acc.numpy()
    np.testing.assert_array_equal(acc.numpy(), np.zeros(6, np.float32))
    with pytest.raises(zyx.IndexOutOfRange):
        zyx.tensor(x0).scatter_add(0, zyx.tensor(idx), zyx.tensor(src)).numpy()  # out of place: raised on read


def test_deterministic_for_a_fixed_split_but_not_torch_bits(private, monkeypatch):
    """The same bits on every run for a given number of work items; the partition kernel, not this
    one, gives PyTorch's bits (a copy's partial sum is rounded before it meets the destination)."""
    private(2)
    n = 4096
    x0 = RNG.normal(size=n).astype(np.float32)
    idx = RNG.integers(0, 64, size=n)  # many duplicates: rounding order matters
    src = RNG.normal(size=n).astype(np.float32)
    x, i, s = zyx.tensor(x0), zyx.tensor(idx), zyx.tensor(src)
    runs = [x.scatter_add(0, i, s).numpy() for _ in range(3)]
    assert all(np.array_equal(r.view(np.uint32), runs[0].view(np.uint32)) for r in runs)
    want = torch.from_numpy(x0).scatter_add(0, torch.from_numpy(idx), torch.from_numpy(src)).numpy()
    np.testing.assert_allclose(runs[0], want, rtol=1e-4, atol=1e-4)
    monkeypatch.setattr(kernels, "force", "partition")  # its branchless walk keeps PyTorch's order
    part = x.scatter_add(0, i, s).numpy()
    np.testing.assert_array_equal(part.view(np.uint32), want.view(np.uint32))
    flipped = x.flip(0).scatter_add(0, i, s).numpy()  # a flipped destination
    twant = torch.from_numpy(x0).flip(0).scatter_add(0, torch.from_numpy(idx), torch.from_numpy(src)).numpy()
    np.testing.assert_array_equal(flipped.view(np.uint32), twant.view(np.uint32))


def test_choice(monkeypatch):
    """private on a CPU for a dense reduction; atomics for plain stores, sparse writes, copies over
    the memory cap, the GPU heuristics; never in deterministic mode."""
    from zyx import settings
    from zyx.ir.view import View

    device = default_device()
    buf = device.pool.allocate(4)

    def write(dests: int, points: int, reduce: str = "add") -> kernels.IndexedWrite:
        return kernels.IndexedWrite(buf, View.contiguous((dests,)), zyx.float32, (points,), (-1,), (), 1.0, reduce)

    if settings.heuristics_kind(device) != "cpu":
        pytest.skip("the GPU heuristics are in force")
    parts = device.info.compute_units
    assert kernels.choose(device, write(1 << 20, 1 << 20), "auto") == "private"
    assert kernels.choose(device, write(1 << 20, 1 << 20, "max"), "auto") == "private"
    assert kernels.choose(device, write(1 << 20, 1 << 20, "assign"), "auto") == "atomic"
    assert kernels.choose(device, write(1 << 20, 1 << 16), "auto") == "atomic"  # 16 elements per point
    assert kernels.choose(device, write(1 << 20, 1 << 20), "deterministic") != "private"
    if parts > 1:
        monkeypatch.setattr(kernels, "PRIVATE_MAX_BYTES", (parts - 1) * 4 * (1 << 20) - 1)
        assert kernels.choose(device, write(1 << 20, 1 << 20), "auto") == "atomic"
    monkeypatch.setattr(settings, "HEURISTICS", "gpu")
    assert kernels.choose(device, write(1 << 20, 1 << 20), "auto") == "atomic"
