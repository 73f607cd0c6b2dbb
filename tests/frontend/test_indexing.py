"""Advanced indexing, gather and scatter (API.md "Advanced indexing, gather and scatter") against
PyTorch: every index form, dtypes, empty and non-contiguous operands, duplicates, accumulate,
out-of-range errors (type, and nothing written) and gradients."""
from __future__ import annotations

import gc

import numpy as np
import pytest

import zyx

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)
BASE = RNG.normal(size=(4, 5, 6)).astype(np.float32)


def _z(a):
    return zyx.tensor(a)


def _conv(item, kind):
    """An index item for zyx (``kind`` "z") or torch ("t")."""
    if isinstance(item, np.ndarray):
        return zyx.tensor(item) if kind == "z" else torch.from_numpy(item)
    if isinstance(item, tuple):
        return tuple(_conv(i, kind) for i in item)
    return item


I = np.array  # noqa: E741 - short for the index table below

INDEX_FORMS = [
    I([0, 3, 1]),
    I([-1, -4, 2]),
    (slice(None), I([4, 0, 0])),
    (slice(None), slice(None), I([[5, 0], [1, 2]])),
    (I([0, 1]), I([1, 2])),
    (I([[0], [3]]), slice(None), I([1, 2, 5])),  # separated by a slice: advanced dims first
    (1, slice(None), I([0, 2])),
    (I([1, 2]), Ellipsis, I([0, 5])),
    (None, I([1, 2]), None, I([0, 3])),
    (slice(1, 4, 2), I([[0, 1, 2]]), slice(0, 6, 3)),
    (Ellipsis, I([2, 2, 2])),  # duplicates
    I([], np.int64),
    I(3),  # a 0-d index tensor
    (I([1, 2]), I(0)),
    I([[True, False, True, True, False]] * 4),  # a 2-d mask over the first two dims
    (slice(None), I([True, False, True, False, False])),
    (I([True, False, True, True]), slice(None), I([0, 1, 2])),
    True,
    (False, I([0])),
    I([1, 0, 2], np.int32),
]


@pytest.mark.parametrize("k", range(len(INDEX_FORMS)))
def test_getitem_matches_torch(k):
    index = INDEX_FORMS[k]
    want = torch.from_numpy(BASE)[_conv(index, "t")].numpy()
    got = _z(BASE)[_conv(index, "z")]
    assert got.shape == want.shape
    np.testing.assert_array_equal(got.numpy(), want)


def test_getitem_lists_and_arrays():
    t = torch.from_numpy(BASE)
    x = _z(BASE)
    np.testing.assert_array_equal(x[[0, 2]].numpy(), t[[0, 2]].numpy())
    # a nested list is one index tensor (PyTorch's announced meaning; its older one read it as a tuple)
    np.testing.assert_array_equal(x[[[0, 1], [2, 3]]].numpy(), t[torch.tensor([[0, 1], [2, 3]])].numpy())
    np.testing.assert_array_equal(x[:, [True, False, True, True, False]].numpy(),
                                  t[:, [True, False, True, True, False]].numpy())
    np.testing.assert_array_equal(x[np.array([3, 1]), 2].numpy(), t[np.array([3, 1]), 2].numpy())
    m = np.array([1, 0, 1, 1], np.uint8)  # uint8 tensors index as masks
    np.testing.assert_array_equal(x[zyx.tensor(m)].numpy(), BASE[m.astype(bool)])


def test_getitem_non_contiguous_and_computed_operands():
    t = torch.from_numpy(BASE).permute(2, 0, 1)[:, 1:, ::2]
    x = _z(BASE).permute(2, 0, 1)[:, 1:, ::2]
    ix = np.array([[0, 2, 1], [1, 1, 0]], np.int64)
    zi = _z(ix).transpose(0, 1)  # a strided index view
    np.testing.assert_array_equal(x[zi].numpy(), t[torch.from_numpy(ix).T].numpy())
    np.testing.assert_array_equal(x[:, zi, zi].numpy(), t[:, torch.from_numpy(ix).T, torch.from_numpy(ix).T].numpy())
    # an expanded source and a computed index
    e = _z(BASE[:1]).expand(3, 5, 6)
    np.testing.assert_array_equal(e[_z(ix) + 0, 1].numpy(), torch.from_numpy(BASE[:1]).expand(3, 5, 6)[ix, 1].numpy())


def test_getitem_fuses_with_surrounding_work():
    x = _z(BASE)
    idx = _z(np.array([3, 0, 2], np.int64))
    (x * 2).realize()
    x.realize()
    before = zyx.kernel_count()
    out = (x[idx + 0, :, 1] * 3.0 + 1.0).numpy()
    assert zyx.kernel_count() - before == 1  # index arithmetic, the gather and the consumer: one kernel
    np.testing.assert_allclose(out, BASE[[3, 0, 2], :, 1] * 3 + 1, rtol=1e-6)
    # a pad of a gather keeps the gathered index (the pad's guarded load)
    np.testing.assert_array_equal(x[idx].pad((1, 2)).numpy(), np.pad(BASE[[3, 0, 2]], ((0, 0), (0, 0), (1, 2))))


@pytest.mark.parametrize("dt", [zyx.bool, zyx.int8, zyx.uint16, zyx.int64, zyx.float16, zyx.bfloat16, zyx.float64])
def test_gather_and_getitem_dtypes(dt):
    data = np.round(np.abs(BASE) * 20)  # representable in every dtype here (casts are tested elsewhere)
    t = torch.from_numpy(data).to(getattr(torch, dt.name if dt is not zyx.bool else "bool"))
    x = _z(data).cast(dt)
    idx = np.array([[2, 0], [1, 1]], np.int64)
    got = x[_z(idx), 1:3].cast(zyx.float32).numpy()
    np.testing.assert_array_equal(got, t[torch.from_numpy(idx), 1:3].float().numpy())
    gi = RNG.integers(0, 5, size=(4, 3, 6))
    got = x.gather(1, _z(gi)).cast(zyx.float32).numpy()
    np.testing.assert_array_equal(got, np.take_along_axis(data, gi, 1).astype(t.float().numpy().dtype)
                                  if dt is zyx.uint16 else t.gather(1, torch.from_numpy(gi)).float().numpy())


def test_rank0_rank8_and_empty():
    s = zyx.tensor(np.float32(7.5))
    assert s.gather(0, zyx.tensor(np.int64(0))).item() == 7.5
    x8 = RNG.normal(size=(2, 1, 2, 1, 2, 1, 2, 3)).astype(np.float32)
    idx = np.array([2, 0, 0], np.int64)
    np.testing.assert_array_equal(_z(x8)[..., _z(idx)].numpy(), x8[..., idx])
    np.testing.assert_array_equal(_z(x8)[_z(np.array([1, 0])), :, _z(np.array([1, 1]))].numpy(),
                                  torch.from_numpy(x8)[[1, 0], :, [1, 1]].numpy())
    e = _z(np.zeros((0, 3), np.float32))
    assert e[zyx.tensor(np.zeros(0, np.int64))].shape == (0, 3)
    assert _z(BASE).gather(0, zyx.tensor(np.zeros((0, 5, 6), np.int64))).shape == (0, 5, 6)
    assert _z(BASE)[:, []].shape == (4, 0, 6)
    np.testing.assert_array_equal(e.scatter_add(0, zyx.tensor(np.zeros((0, 3), np.int64)), e).numpy(),
                                  np.zeros((0, 3)))
    with pytest.raises(IndexError):
        e[zyx.tensor(np.array([0]))]


def test_index_select_take_along_dim_masked_select_nonzero():
    t = torch.from_numpy(BASE)
    x = _z(BASE)
    ix = np.array([4, 0, 4, 1], np.int64)
    np.testing.assert_array_equal(x.index_select(1, _z(ix)).numpy(), t.index_select(1, torch.from_numpy(ix)).numpy())
    np.testing.assert_array_equal(zyx.index_select(x, -1, _z(np.int64(2))).numpy(),
                                  torch.index_select(t, -1, torch.tensor(2)).numpy())
    tk = RNG.integers(0, 6, size=(4, 1, 2))
    np.testing.assert_array_equal(x.take_along_dim(_z(tk), 2).numpy(),
                                  t.take_along_dim(torch.from_numpy(tk), 2).numpy())
    flat = RNG.integers(0, 120, size=(7,))
    np.testing.assert_array_equal(zyx.take_along_dim(x, _z(flat)).numpy(),
                                  torch.take_along_dim(t, torch.from_numpy(flat)).numpy())
    mask = BASE[0] > 0.2
    np.testing.assert_array_equal(x.masked_select(_z(mask)).numpy(), t.masked_select(torch.from_numpy(mask)).numpy())
    np.testing.assert_array_equal(zyx.nonzero(x > 0.5).numpy(), torch.nonzero(t > 0.5).numpy())
    for got, want in zip((x[1] > 0).nonzero(as_tuple=True), (t[1] > 0).nonzero(as_tuple=True)):
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert zyx.tensor(np.float32(0)).nonzero().shape == torch.tensor(0.0).nonzero().shape


@pytest.mark.parametrize("k", [0, 2, 4, 5, 8, 10, 14, 16])
def test_setitem_matches_torch(k):
    index = INDEX_FORMS[k]
    t = torch.from_numpy(BASE.copy())
    x = _z(BASE)
    slab = t[_conv(index, "t")]
    if k == 10:  # duplicates: one of the written values wins; write one value per duplicate group
        val = np.broadcast_to(RNG.normal(size=slab.shape[:-1] + (1,)), slab.shape).astype(np.float32).copy()
    else:
        val = RNG.normal(size=slab.shape).astype(np.float32)
    t[_conv(index, "t")] = torch.from_numpy(val)
    x[_conv(index, "z")] = zyx.tensor(val)
    np.testing.assert_array_equal(x.numpy(), t.numpy())


def test_setitem_scalar_broadcast_views_and_duplicates():
    base = _z(BASE)
    view = base[1]  # a view: the write lands in base's storage
    tb = torch.from_numpy(BASE.copy())
    view[[0, 4], 1:3] = 9.0
    tb[1][[0, 4], 1:3] = 9.0
    np.testing.assert_array_equal(base.numpy(), tb.numpy())
    row = RNG.normal(size=(6,)).astype(np.float32)
    base[_z(np.array([0, 2]))] = zyx.tensor(row)  # broadcast to (2, 5, 6)
    tb[[0, 2]] = torch.from_numpy(row)
    np.testing.assert_array_equal(base.numpy(), tb.numpy())
    m = BASE > 1.0
    base[zyx.tensor(m)] = 0.0
    tb[torch.from_numpy(m)] = 0.0
    np.testing.assert_array_equal(base.numpy(), tb.numpy())
    d = zyx.zeros(3)
    d[zyx.tensor(np.array([1, 1, 1, 2]))] = zyx.tensor(np.array([5.0, 6.0, 7.0, 8.0], np.float32))
    got = d.numpy()
    assert got[0] == 0 and got[1] in (5.0, 6.0, 7.0) and got[2] == 8.0
    p = _z(BASE).permute(2, 1, 0)  # a non-contiguous destination
    tp = torch.from_numpy(BASE.copy()).permute(2, 1, 0)
    p[[1, 3], :, [0, 2]] = -1.0
    tp[[1, 3], :, [0, 2]] = -1.0
    np.testing.assert_array_equal(p.numpy(), tp.numpy())


@pytest.mark.parametrize("dt", [zyx.float32, zyx.int64, zyx.float16, zyx.bfloat16, zyx.int8])
def test_index_put_accumulate(dt):
    tdt = getattr(torch, dt.name)
    x0 = RNG.integers(-3, 4, size=(6, 4)).astype(np.float32)
    idx = np.array([0, 5, 0, 0, 2, 5], np.int64)
    vals = RNG.integers(-3, 4, size=(6, 4)).astype(np.float32)
    t = torch.from_numpy(x0).to(tdt).clone()
    t.index_put_((torch.from_numpy(idx),), torch.from_numpy(vals).to(tdt), accumulate=True)
    x = _z(x0).cast(dt)
    out = x.index_put_((_z(idx),), _z(vals).cast(dt), accumulate=True)
    assert out is x
    np.testing.assert_array_equal(x.cast(zyx.float32).numpy(), t.float().numpy())
    # two index tensors and a broadcast value, out of place
    i2 = np.array([1, 1, 3], np.int64)
    got = zyx.index_put(_z(x0).cast(dt), (_z(idx[:3]), _z(i2)), zyx.tensor(np.float32(2)).cast(dt), accumulate=True)
    want = torch.from_numpy(x0).to(tdt).index_put((torch.from_numpy(idx[:3]), torch.from_numpy(i2)),
                                                 torch.tensor(2).to(tdt), accumulate=True)
    np.testing.assert_array_equal(got.cast(zyx.float32).numpy(), want.float().numpy())


def test_accumulate_float_sums_many_duplicates():
    idx = RNG.integers(0, 10, size=5000)
    vals = RNG.normal(size=5000).astype(np.float32)
    got = zyx.zeros(10).index_put_((_z(idx),), _z(vals), accumulate=True).numpy()
    want = torch.zeros(10).index_put_((torch.from_numpy(idx),), torch.from_numpy(vals), accumulate=True).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    zyx.use_deterministic_algorithms(True)
    try:
        assert zyx.are_deterministic_algorithms_enabled()
        a = zyx.zeros(10).index_put_((_z(idx),), _z(vals), accumulate=True).numpy()
        b = zyx.zeros(10).index_put_((_z(idx),), _z(vals), accumulate=True).numpy()
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, want)  # PyTorch's CPU order, so its bits
        s = zyx.zeros(10).scatter_add(0, _z(idx), _z(vals)).numpy()
        np.testing.assert_array_equal(s, torch.zeros(10).scatter_add(0, torch.from_numpy(idx),
                                                                      torch.from_numpy(vals)).numpy())
    finally:
        zyx.use_deterministic_algorithms(False)


@pytest.mark.parametrize("dt", [zyx.float32, zyx.int32, zyx.float64, zyx.float16, zyx.int64, zyx.uint8, zyx.bfloat16])
def test_scatter_family_matches_torch(dt):
    tdt = getattr(torch, dt.name)
    low = 0 if dt is zyx.uint8 else -4  # (negative floats to uint8 are a cast question, not this test's)
    x0 = RNG.integers(low, 5, size=(5, 4)).astype(np.float32)
    src0 = RNG.integers(low, 5, size=(6, 4)).astype(np.float32)
    idx = RNG.integers(0, 5, size=(3, 4))  # smaller than src: src is read at index's points
    t, ts, ti = torch.from_numpy(x0).to(tdt), torch.from_numpy(src0).to(tdt), torch.from_numpy(idx)
    x, s, i = _z(x0).cast(dt), _z(src0).cast(dt), _z(idx)

    def same(a, b):
        np.testing.assert_array_equal(a.cast(zyx.float64).numpy(), b.double().numpy())

    same(x.scatter_add(0, i, s), t.scatter_add(0, ti, ts))
    same(zyx.scatter_add(x, 0, i, s), torch.scatter_add(t, 0, ti, ts))
    same(x.scatter(0, i, 3), t.scatter(0, ti, 3))
    same(x.scatter(0, i, s, reduce="multiply"), t.scatter(0, ti, ts, reduce="multiply"))
    u = np.stack([RNG.permutation(5)[:3] for _ in range(4)], 1)  # unique along dim 0: the winner is defined
    same(x.scatter(0, _z(u), s), t.scatter(0, torch.from_numpy(u), ts))
    for reduce in ("sum", "prod", "mean", "amax", "amin"):
        for include_self in (True, False):
            same(x.scatter_reduce(0, i, s, reduce, include_self=include_self),
                 t.scatter_reduce(0, ti, ts, reduce, include_self=include_self))


def test_scatter_along_last_dim_non_contiguous():
    x0 = RNG.normal(size=(4, 7)).astype(np.float32)
    src = RNG.normal(size=(7, 4)).astype(np.float32)
    x, t = _z(x0).T, torch.from_numpy(x0).T  # (7, 4) permuted
    i2 = RNG.integers(0, 4, size=(7, 3))
    s2 = _z(src)
    np.testing.assert_allclose(x.scatter_add(1, _z(i2), s2).numpy(),
                               t.scatter_add(1, torch.from_numpy(i2), torch.from_numpy(src)).numpy(), rtol=1e-6)
    np.testing.assert_array_equal(x.gather(1, _z(i2)).numpy(), t.gather(1, torch.from_numpy(i2)).numpy())


def _raises_index_error(fn):
    with pytest.raises(zyx.IndexOutOfRange) as info:
        fn()
    assert isinstance(info.value, zyx.ShapeError) and isinstance(info.value, IndexError)
    return info


def test_out_of_range_reads_raise_index_error():
    x = _z(BASE)
    _raises_index_error(lambda: x[_z(np.array([0, 4]))].numpy())
    _raises_index_error(lambda: x[_z(np.array([-5]))].numpy())
    _raises_index_error(lambda: x[:, [1, 2], [0, 6]].numpy())
    _raises_index_error(lambda: x.gather(2, _z(np.full((4, 5, 1), -1))).numpy())  # gather does not wrap
    _raises_index_error(lambda: x.index_select(0, _z(np.array([4]))).numpy())
    _raises_index_error(lambda: x.take_along_dim(_z(np.full((1, 1, 1), 9)), 2).numpy())
    _raises_index_error(lambda: x[zyx.tensor(np.ones(3, bool))])  # mask shape mismatch, found on the host
    _raises_index_error(lambda: x[[0], [1], [2], [3]])
    _raises_index_error(lambda: x[_z(np.zeros((2,), np.int64)), _z(np.zeros((3,), np.int64))])
    np.testing.assert_array_equal(x[[1]].numpy(), BASE[[1]])  # the flag was cleared: reads work again


def test_out_of_range_writes_write_nothing():
    x = _z(BASE)
    before = x.numpy().copy()
    view = x[1:]  # a view sees the same storage
    _raises_index_error(lambda: (x.index_put_((_z(np.array([0, 9])),), zyx.tensor(np.float32(1.0))), x.numpy()))
    np.testing.assert_array_equal(x.numpy(), before)

    def bad_setitem():
        x[:, [0, 1, 5]] = 3.0
        x.numpy()

    _raises_index_error(bad_setitem)
    np.testing.assert_array_equal(x.numpy(), before)
    np.testing.assert_array_equal(view.numpy(), before[1:])

    def bad_accumulate():
        x.index_put_((_z(np.array([1, -7])),), zyx.tensor(np.float32(2.0)), accumulate=True)
        x.numpy()

    _raises_index_error(bad_accumulate)
    np.testing.assert_array_equal(x.numpy(), before)
    _raises_index_error(lambda: x.scatter_add(0, _z(np.full((1, 5, 6), 4)), x).numpy())
    np.testing.assert_array_equal(x.numpy(), before)


GATHERED_WRITES = {
    "setitem": lambda y, v: y.__setitem__(slice(None), v),
    "slice_setitem": lambda y, v: y.__setitem__(slice(1, 3), v[1:]),
    "copy_": lambda y, v: y.copy_(v),
    "add_": lambda y, v: y.add_(v),
    "iadd": lambda y, v: y.__iadd__(v),
    "mul_fused": lambda y, v: y.mul_(v * 2.0 + 1.0),
    "index_put_": lambda y, v: y.index_put_((_z(np.array([2, 0, 1])),), v),
    "scatter_add_": lambda y, v: y.scatter_add_(0, _z(np.array([2, 0, 1])), v),
    "write_slice_rotating": lambda y, v: zyx.write_slice_rotating(y, v, 0, 1),
}


@pytest.mark.parametrize("write", sorted(GATHERED_WRITES))
@pytest.mark.parametrize("realized", [False, True])
def test_a_failed_gather_written_in_place_writes_nothing(write, realized):
    """``y[:] = t[bad]``, ``y += t[bad]``, ...: PyTorch raises at the gather and never writes. zyx's gather
    checks on the device; the in-place write raises that error before writing (the element-0 read of the bad
    index was stored into ``y`` before), also when the gather was realized earlier and not read since."""
    table = _z(np.arange(10, dtype=np.float32) + 5)
    y = zyx.tensor(np.array([-1.0, -2.0, -3.0], np.float32))
    v = table[_z(np.array([3, 12, 1]))]
    if realized:
        v.realize()
    with pytest.raises(zyx.IndexOutOfRange):
        GATHERED_WRITES[write](y, v)
    np.testing.assert_array_equal(y.numpy(), np.array([-1.0, -2.0, -3.0], np.float32))
    GATHERED_WRITES[write](y, table[_z(np.array([3, 2, 1]))])  # the flag was read: a good write works
    assert not np.array_equal(y.numpy(), np.array([-1.0, -2.0, -3.0], np.float32))


@pytest.mark.parametrize("write", ["scatter_", "index_put_", "setitem"])
def test_a_failed_gather_as_the_index_of_a_write_writes_nothing(write):
    """The index of an indexed write computed by a failed gather (``y.scatter_(0, perm[bad], src)``): its
    element-0 reads are in range, so the write's own check passed and it wrote at them; the write now reads
    the error bits first and writes nothing."""
    perm = _z(np.array([2, 0, 1]))
    y = zyx.zeros(3)
    idx = perm[_z(np.array([0, 5, 1]))]
    with pytest.raises(zyx.IndexOutOfRange):
        if write == "scatter_":
            y.scatter_(0, idx, zyx.ones(3))
        elif write == "index_put_":
            y.index_put_((idx,), zyx.ones(3))
        else:
            y[idx] = 1.0
    np.testing.assert_array_equal(y.numpy(), np.zeros(3, np.float32))


def test_a_failed_gather_as_a_ring_position_or_offset_writes_nothing():
    """``write_slice_rotating``'s position and ``write_slice_doff``'s offset read from a failed gather (its
    element-0 read is a valid position): the write reads the error bits first and writes nothing."""
    positions = _z(np.arange(10, dtype=np.int32) + 1)
    ring = zyx.zeros(4)
    with pytest.raises(zyx.IndexOutOfRange):
        zyx.write_slice_rotating(ring, zyx.ones(2), 0, positions[_z(np.array([12]))])
    np.testing.assert_array_equal(ring.numpy(), np.zeros(4, np.float32))
    offsets = _z(np.arange(10, dtype=np.int64) + 2)
    y = zyx.zeros(4)
    with pytest.raises(zyx.IndexOutOfRange):
        zyx.write_slice_doff(y, zyx.ones(2), 0, offsets[_z(np.array([12]))].reshape(()))
    np.testing.assert_array_equal(y.numpy(), np.zeros(4, np.float32))


def test_a_jitted_gathered_write_raises_a_bad_index():
    """A jitted ``y[...] = table[idx]``: a bad index on the capturing call raises before writing, as eagerly;
    on a replayed call the launches run as captured (no sync between them: the write happens) and the error
    raises at the next read. The capture stays replayable (an embedding then a kv-cache write used to make
    every call eager: 0.65 -> 4 ms a token)."""
    table = _z(np.arange(10, dtype=np.float32))
    y = zyx.zeros(2)

    @zyx.jit
    def write(y, idx):
        y[...] = table[idx]
        return y

    with pytest.raises(zyx.IndexOutOfRange):
        write(y, _z(np.array([7, 11])))
    np.testing.assert_array_equal(y.numpy(), np.zeros(2, np.float32))
    for ids in ([1, 2], [3, 4], [5, 6], [7, 8]):
        np.testing.assert_array_equal(write(y, _z(np.array(ids))).numpy(), np.array(ids, np.float32))
    with pytest.raises(zyx.IndexOutOfRange):
        write(y, _z(np.array([7, 11]))).numpy()


def test_a_failed_gather_upstream_leaves_an_optimizer_step_unwritten():
    """An embedding lookup with a bad index, backward and ``opt.step()`` before any read: the fused step's
    kernel reads the device's error word and writes nothing (no sync of its own); the next read raises and the
    parameters and the optimizer's state keep their values."""
    emb = zyx.nn.Embedding(5, 3)
    opt = zyx.optim.Adam(emb.parameters(), lr=0.1)
    w0 = emb.weight.numpy().copy()
    emb(_z(np.array([1, 7]))).sum().backward()
    opt.step()
    with pytest.raises(zyx.IndexOutOfRange):
        zyx.synchronize()
    np.testing.assert_array_equal(emb.weight.numpy(), w0)
    assert all(float(abs(t).sum()) == 0.0 for st in opt.state.values() for t in st.values()
               if isinstance(t, zyx.Tensor) and t.dtype.is_float)
    emb.weight.grad = None
    emb(_z(np.array([1, 4]))).sum().backward()
    opt.step()  # the error was read: the next step updates
    assert not np.array_equal(emb.weight.numpy(), w0)


def test_argument_errors():
    x = _z(BASE)
    with pytest.raises(zyx.ShapeError):
        x.gather(0, _z(np.zeros((4, 5), np.int64)))  # rank mismatch
    with pytest.raises(zyx.ShapeError):
        x.gather(0, _z(np.zeros((1, 6, 6), np.int64)))  # larger off dim
    with pytest.raises(zyx.DTypeError):
        x.gather(0, x)
    with pytest.raises(zyx.DTypeError):
        x[x]
    with pytest.raises(zyx.DTypeError):
        x.scatter_add(0, _z(np.zeros((1, 5, 6), np.int64)), x.cast(zyx.float64))
    with pytest.raises(zyx.ShapeError):
        x.scatter_reduce(0, _z(np.zeros((1, 5, 6), np.int64)), x, "median")
    with pytest.raises(zyx.ShapeError):
        x[[0, 1]] = zyx.ones(3)
    with pytest.raises(zyx.ShapeError):
        zyx.zeros(1, 3).expand(4, 3)[[0, 1]] = 1.0


def _leaf(a):
    return zyx.tensor(a).requires_grad_(), torch.from_numpy(a.copy()).requires_grad_()


def _check_grads(z_out, t_out, pairs, seed=1):
    g = np.random.default_rng(seed).normal(size=tuple(t_out.shape)).astype(np.float32)
    z_out.backward(zyx.tensor(g))
    t_out.backward(torch.from_numpy(g))
    for z, t in pairs:
        np.testing.assert_allclose(z.grad.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-5)


def test_gradients_of_reads():
    xz, xt = _leaf(BASE)
    idx = np.array([[0, 3, 3], [1, 0, 3]], np.int64)  # duplicates accumulate
    gi = RNG.integers(0, 5, size=(4, 2, 6))
    tk = RNG.integers(0, 6, size=(4, 5, 2))
    z = (xz[_z(idx), 1:4] * 2).sum(-1) + xz.gather(1, _z(gi)).sum() \
        + xz.index_select(2, _z(np.array([5, 5, 0]))).sum() + xz.take_along_dim(_z(tk), 2).sum() \
        + xz[_z(BASE > 0.5)].sum()
    t = (xt[torch.from_numpy(idx), 1:4] * 2).sum(-1) + xt.gather(1, torch.from_numpy(gi)).sum() \
        + xt.index_select(2, torch.tensor([5, 5, 0])).sum() + xt.take_along_dim(torch.from_numpy(tk), 2).sum() \
        + xt[torch.from_numpy(BASE > 0.5)].sum()
    _check_grads(z, t, [(xz, xt)])


@pytest.mark.parametrize("reduce,include_self", [("scatter", True), ("scatter_value", True), ("scatter_add", True)]
                         + [(r, s) for r in ("sum", "mean", "amax", "amin") for s in (True, False)])
def test_gradients_of_scatters(reduce, include_self):
    x0 = RNG.integers(-3, 4, size=(5, 3)).astype(np.float32)  # integers: ties for amax/amin
    s0 = RNG.integers(-3, 4, size=(4, 3)).astype(np.float32)
    idx = np.array([[0, 1, 4], [0, 1, 1], [3, 1, 4], [2, 2, 2]], np.int64)
    xz, xt = _leaf(x0)
    sz, st = _leaf(s0)
    iz, it = _z(idx), torch.from_numpy(idx)
    if reduce == "scatter":
        u = np.array([[0, 1, 4], [2, 0, 1], [3, 2, 0], [1, 3, 2]], np.int64)  # no duplicates
        z, t = (xz * 1).scatter(0, _z(u), sz), (xt * 1).scatter(0, torch.from_numpy(u), st)
    elif reduce == "scatter_value":
        z, t = (xz * 1).scatter(0, iz, value=2.0), (xt * 1).scatter(0, it, value=2.0)
    elif reduce == "scatter_add":
        z, t = xz.scatter_add(0, iz, sz), xt.scatter_add(0, it, st)
    else:
        z = xz.scatter_reduce(0, iz, sz, reduce, include_self=include_self)
        t = xt.scatter_reduce(0, it, st, reduce, include_self=include_self)
    np.testing.assert_allclose(z.detach().numpy(), t.detach().numpy(), rtol=1e-6)
    pairs = [(xz, xt)] + ([] if reduce == "scatter_value" else [(sz, st)])
    _check_grads(z, t, pairs)


def test_gradients_of_writes():
    xz, xt = _leaf(BASE)
    vz, vt = _leaf(RNG.normal(size=(6,)).astype(np.float32))
    a, b = xz * 1, xt * 1
    a[[0, 2], 1] = vz
    b[[0, 2], 1] = vt
    c, d = xz * 1, xt * 1
    c.index_put_((_z(np.array([1, 1, 3])),), vz, accumulate=True)
    d.index_put_((torch.tensor([1, 1, 3]),), vt, accumulate=True)
    _check_grads(a * 2 + c, b * 2 + d, [(xz, xt), (vz, vt)])
    with pytest.raises(zyx.AutogradError):
        xz[[0]] = 1.0  # a leaf that requires grad is not written in place


@pytest.mark.parametrize("method", ["atomic", "partition", "owner", "private", "sorted"])
def test_every_scatter_kernel_matches_torch(method, monkeypatch):
    import zyx.kernels.scatter as kernels

    monkeypatch.setattr(kernels, "force", method)
    x0 = RNG.integers(-4, 5, size=(5, 3, 4)).astype(np.float32)
    s0 = RNG.integers(-4, 5, size=(6, 3, 4)).astype(np.float32)
    idx = RNG.integers(0, 5, size=(6, 3, 4))
    # the atomic kernel's update differs per dtype (a float32 compare-and-swap loop, an integer atomic add,
    # the converting loop of the other types): all three. The other kernels combine through the template's
    # shared per-dtype code (every dtype runs it in test_scatter_family_matches_torch and
    # tests/kernels/test_scatter_private.py): here the emulated 16-bit float and a 32-bit dtype in turn
    # (float32 also through every kernel in the index_put below)
    dts = {"atomic": (zyx.float32, zyx.int32, zyx.float16), "partition": (zyx.int32, zyx.float16),
           "owner": (zyx.float32, zyx.float16), "private": (zyx.int32, zyx.float16),
           "sorted": (zyx.float32, zyx.float16)}[method]
    for dt in dts:
        tdt = getattr(torch, dt.name)
        x, s, i = _z(x0).cast(dt), _z(s0).cast(dt), _z(idx)
        t, ts, ti = torch.from_numpy(x0).to(tdt), torch.from_numpy(s0).to(tdt), torch.from_numpy(idx)
        for got, want in ((x.scatter_add(0, i, s), t.scatter_add(0, ti, ts)),
                          (x.scatter_reduce(0, i, s, "amin", include_self=False),
                           t.scatter_reduce(0, ti, ts, "amin", include_self=False)),
                          (x.scatter_reduce(0, i, s, "prod"), t.scatter_reduce(0, ti, ts, "prod"))):
            np.testing.assert_array_equal(got.cast(zyx.float64).numpy(), want.double().numpy())
    rows, cols = np.array([4, 0, 4, 2]), np.array([1, 1, 1, 0])
    vals = RNG.integers(-4, 5, size=(4, 4)).astype(np.float32)
    got = _z(x0).index_put_((_z(rows), _z(cols)), _z(vals), accumulate=True)
    want = torch.from_numpy(x0.copy()).index_put_((torch.from_numpy(rows), torch.from_numpy(cols)),
                                                   torch.from_numpy(vals), accumulate=True)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    x = _z(x0)
    x[_z(np.array([3, 1])), 1:, _z(np.array([[0], [2]]))] = -7.0
    tx = torch.from_numpy(x0.copy())
    tx[torch.tensor([3, 1]), 1:, torch.tensor([[0], [2]])] = -7.0
    np.testing.assert_array_equal(x.numpy(), tx.numpy())
    before = x.numpy().copy()

    def bad():
        x.index_put_((_z(np.array([0, 5])),), zyx.tensor(np.float32(1.0)), accumulate=True)
        x.numpy()

    _raises_index_error(bad)
    np.testing.assert_array_equal(x.numpy(), before)


def test_scatter_rank0_rank8_and_no_leaks():
    s = zyx.tensor(np.float32(1.5))
    assert s.scatter_add(0, zyx.tensor(np.int64(0)), zyx.tensor(np.float32(2.0))).item() == 3.5
    assert s.scatter(0, zyx.tensor(np.int64(0)), 4.0).item() == 4.0
    x8 = RNG.normal(size=(2, 1, 2, 1, 2, 1, 2, 3)).astype(np.float32)
    i8 = RNG.integers(0, 3, size=(2, 1, 2, 1, 2, 1, 2, 4))
    s8 = RNG.normal(size=(2, 1, 2, 1, 2, 1, 2, 4)).astype(np.float32)
    np.testing.assert_allclose(_z(x8).scatter_add(7, _z(i8), _z(s8)).numpy(),
                               torch.from_numpy(x8).scatter_add(7, torch.from_numpy(i8), torch.from_numpy(s8)).numpy(),
                               rtol=1e-6, atol=1e-6)  # atol: another order of adding a sum near 0
    gc.collect()  # earlier tests' autograd graphs (reference cycles) free their buffers now, not mid-loop
    zyx.synchronize()
    start = zyx.memory_stats()["live_buffers"]
    for _ in range(20):
        x = _z(BASE)
        y = x[_z(np.array([1, 0])), :, [2, 2]] + x.gather(0, _z(np.zeros((1, 5, 6), np.int64))).sum()
        z = x.scatter_add(0, _z(np.zeros((1, 5, 6), np.int64)), x)
        x[[0, 1]] = 2.0
        y.numpy(), z.numpy()
        del x, y, z
    gc.collect()
    zyx.synchronize()
    assert zyx.memory_stats()["live_buffers"] == start


def test_inplace_scatters():
    x0 = RNG.normal(size=(4, 3)).astype(np.float32)
    idx = np.array([[3, 0, 3], [1, 1, 0]], np.int64)
    src = RNG.normal(size=(2, 3)).astype(np.float32)
    x, t = _z(x0), torch.from_numpy(x0.copy())
    view = x[1:]
    assert x.scatter_add_(0, _z(idx), _z(src)) is x
    t.scatter_add_(0, torch.from_numpy(idx), torch.from_numpy(src))
    np.testing.assert_allclose(x.numpy(), t.numpy(), rtol=1e-6)
    np.testing.assert_allclose(view.numpy(), t[1:].numpy(), rtol=1e-6)  # the same storage
    u = np.array([[3, 0, 2]], np.int64)
    x.scatter_(0, _z(u), value=-1.0)
    t.scatter_(0, torch.from_numpy(u), -1.0)
    np.testing.assert_allclose(x.numpy(), t.numpy(), rtol=1e-6)
    before = x.numpy().copy()
    _raises_index_error(lambda: (x.scatter_add_(0, _z(np.array([[4, 0, 0]])), _z(src)), x.numpy()))
    np.testing.assert_array_equal(x.numpy(), before)
    xz, xt = _leaf(x0)
    sz, st = _leaf(src)
    a, b = xz * 1, xt * 1
    a.scatter_add_(0, _z(idx), sz)
    b.scatter_add_(0, torch.from_numpy(idx), st)
    c, d = a * 1, b * 1
    c.scatter_(0, _z(u), sz[:1])
    d.scatter_(0, torch.from_numpy(u), st[:1])
    _check_grads(c, d, [(xz, xt), (sz, st)])


def test_zero_dim_index_tensor_acts_as_an_int() -> None:
    """A 0-d integer tensor in an index is an int to PyTorch: it does not separate the other index
    tensors, so ``x[t0, :, [0, 5]]`` keeps the slice dim first (reads, writes and gradients)."""
    forms = [(np.array(-1), slice(None), np.array([0, 5])),
             (slice(None), np.array([1, 2]), np.array(2), np.array([0, 5])),
             (np.array([1, 2]), np.array(0), slice(None))]
    x4 = RNG.normal(size=(3, 4, 5, 6)).astype(np.float32)
    for base, index in [(BASE, forms[0]), (x4, forms[1]), (BASE, forms[2])]:
        expected = torch.from_numpy(base)[_conv(index, "t")]
        got = _z(base)[_conv(index, "z")]
        assert got.shape == tuple(expected.shape)
        np.testing.assert_array_equal(got.numpy(), expected.numpy())
        z, t = _z(base), torch.from_numpy(base.copy())
        z[_conv(index, "z")] = -1.0
        t[_conv(index, "t")] = -1.0
        np.testing.assert_array_equal(z.numpy(), t.numpy())
    xz, xt = _leaf(BASE)
    _check_grads(xz[_conv(forms[0], "z")] * 1, xt[_conv(forms[0], "t")] * 1, [(xz, xt)])


def test_index_select_and_bad_index_kinds_raise_index_errors() -> None:
    x = _z(BASE)
    with pytest.raises(IndexError, match="1-D or 0-D"):
        x.index_select(0, zyx.tensor([[1]]))
    s = zyx.tensor(4.0)
    assert s.index_select(0, zyx.tensor([0])).shape == () and s.index_select(0, zyx.tensor(0)).item() == 4.0
    with pytest.raises(IndexError, match="exactly one index"):
        s.index_select(0, zyx.tensor([0, 0]))
    with pytest.raises(IndexError, match="unsupported index"):  # PyTorch: IndexError for x[1.5]
        x[1.5]


@pytest.mark.parametrize("deterministic", [False, True])
def test_scatter_sums_and_products_of_16_bit_floats_accumulate_in_float32(deterministic) -> None:
    """PyTorch's CPU scatter family sums/multiplies float16 and bfloat16 in float32 and rounds once
    per element; the in-place form checks its indices before writing."""
    zyx.use_deterministic_algorithms(deterministic)
    try:
        rng = np.random.default_rng(3)
        idx = rng.integers(0, 2, (6, 5))
        for tdt, zdt in [(torch.float16, zyx.float16), (torch.bfloat16, zyx.bfloat16)]:
            x = (torch.from_numpy(rng.normal(size=(4, 5)).astype(np.float32)) * 3).to(tdt)
            src = (torch.from_numpy(rng.normal(size=(6, 5)).astype(np.float32)) * 3).to(tdt)
            xz, sz, iz = _z(x.float().numpy()).cast(zdt), _z(src.float().numpy()).cast(zdt), _z(idx)
            it = torch.from_numpy(idx)

            def same(z, t):
                np.testing.assert_array_equal(z.cast(zyx.float32).numpy(), t.float().numpy())

            same(xz.scatter_add(0, iz, sz), x.scatter_add(0, it, src))
            for reduce in ("sum", "prod", "mean"):
                for include_self in (True, False):
                    same(xz.scatter_reduce(0, iz, sz, reduce, include_self=include_self),
                         x.scatter_reduce(0, it, src, reduce, include_self=include_self))
            same(xz.scatter(0, iz, value=1.7, reduce="multiply"), x.scatter(0, it, 1.7, reduce="multiply"))
            dest = xz.clone()
            view = dest[1:]
            before = dest.cast(zyx.float32).numpy().copy()
            _raises_index_error(lambda d=dest, s=sz: (d.scatter_add_(0, _z(np.array([[0, 4]])), s), d.numpy()))
            np.testing.assert_array_equal(dest.cast(zyx.float32).numpy(), before)  # nothing written
            with pytest.raises(zyx.ShapeError, match="expanded"):  # as every dtype's in-place scatter
                xz[:1].expand(4, 5).scatter_add_(0, iz, sz)
            assert dest.scatter_add_(0, iz, sz) is dest
            same(dest, x.scatter_add(0, it, src))
            same(view, x.scatter_add(0, it, src)[1:])  # the same storage
    finally:
        zyx.use_deterministic_algorithms(False)


def test_indexed_write_of_a_scalar_an_integer_dtype_cannot_hold() -> None:
    """NaN, inf or an out-of-range int into an integer tensor through an advanced index or scatter:
    a zyx error at the call (as ``x[1] = nan`` and PyTorch refuse it), nothing written."""
    for bad in (float("nan"), float("inf"), 1e30, 300, -1, 2**70):
        x = zyx.zeros(3, dtype=zyx.uint8)
        with pytest.raises(zyx.DTypeError, match="cannot be converted to uint8"):
            x[zyx.tensor([0])] = bad
        with pytest.raises(zyx.DTypeError, match="cannot be converted to uint8"):
            x.scatter(0, zyx.tensor([1]), value=bad)
        assert x.tolist() == [0, 0, 0]
    y = zyx.zeros(3, dtype=zyx.int64)
    y[zyx.tensor([0, 2])] = 2.7  # finite and in range: truncated, as PyTorch
    y.index_put_((zyx.tensor([1]),), zyx.tensor(-5))
    assert y.tolist() == [2, -5, 2]
