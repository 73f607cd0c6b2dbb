"""Sorting and selection against PyTorch CPU: sort/argsort/topk/kthvalue/median/unique/searchsorted/
bucketize over dtypes, NaN, ties (stable order), descending, dims, non-contiguous, empty, rank 0 and 8,
the long-row (block-parallel) paths, errors and gradients."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import zyx
from zyx.kernels import sorting as sort_kernels

torch = pytest.importorskip("torch")
RNG = np.random.default_rng(14)

TORCH_DT = {"bool": torch.bool, "uint8": torch.uint8, "int8": torch.int8, "int16": torch.int16,
            "int32": torch.int32, "int64": torch.int64, "uint16": torch.uint16, "uint32": torch.uint32,
            "uint64": torch.uint64, "float16": torch.float16, "bfloat16": torch.bfloat16,
            "float32": torch.float32, "float64": torch.float64}
ALL = [*TORCH_DT, "float8_e4m3", "float8_e5m2"]


def data(shape, dt, nan=True, span=None):
    """Random values of zyx dtype name ``dt`` with many ties (and NaN, -0.0 for floats)."""
    d = zyx.dtype.to_dtype(dt)
    if d.is_bool:
        return RNG.integers(0, 2, shape).astype(np.bool_)
    if d.is_int:
        info = np.iinfo(d.numpy)
        lo, hi = (max(info.min, -span), min(info.max, span)) if span else (info.min, info.max)
        return RNG.integers(lo, hi, shape, dtype=d.numpy, endpoint=True)
    a = RNG.integers(-6, 7, shape).astype(np.float32) / 2 if span is None else RNG.standard_normal(shape) * span
    a = np.asarray(a, np.float32)
    if nan and a.size:
        flat = a.reshape(-1)
        flat[RNG.integers(0, a.size, max(1, a.size // 10))] = np.nan
        flat[RNG.integers(0, a.size, max(1, a.size // 10))] = -0.0
        flat[RNG.integers(0, a.size, max(1, a.size // 20))] = np.inf
    return a.astype(d.numpy)


def as_torch(a):
    """A torch tensor of ``a``'s values (float8: upcast to float32, which keeps the order)."""
    a = np.asarray(a)
    if a.dtype == ml_dtypes.bfloat16:
        return torch.from_numpy(a.view(np.uint16).astype(np.int32)).to(torch.int16).view(torch.bfloat16)
    if "float8" in a.dtype.name:
        return torch.from_numpy(a.astype(np.float32))
    if a.dtype in (np.uint16, np.uint32, np.uint64):
        return torch.from_numpy(a.view({2: np.int16, 4: np.int32, 8: np.int64}[a.itemsize])).view(
            {2: torch.uint16, 4: torch.uint32, 8: torch.uint64}[a.itemsize])
    return torch.from_numpy(a.copy())


def bits(a):
    a = np.asarray(a)
    return a.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.itemsize])


def check_sorted_like(z_vals, z_idx, a, t_idx):
    """zyx's (values, indices) equal torch's stable order ``t_idx`` of ``a``; values are ``a``'s bits."""
    want_idx = t_idx.numpy()
    got_idx = z_idx.numpy()
    assert z_idx.dtype is zyx.int64
    np.testing.assert_array_equal(got_idx, want_idx)
    np.testing.assert_array_equal(bits(z_vals.numpy()), bits(np.take_along_axis(a, want_idx, axis=-1)))


# ---------------------------------------------------------------- sort


@pytest.mark.parametrize("dt", ALL)
def test_sort_every_dtype_nan_ties_both_directions(dt):
    # (4, 5): the in-private insertion sort; (3, 67): the per-row radix sort
    for shape in ((4, 5), (3, 67)):
        a = data(shape, dt)
        x = zyx.from_numpy(a)
        for desc in (False, True):
            r = x.sort(descending=desc, stable=True)
            t = torch.sort(as_torch(a), descending=desc, stable=True)
            check_sorted_like(r.values, r.indices, a, t.indices)
            assert isinstance(r, zyx.ValuesIndices) and r.values.dtype is x.dtype


def test_sort_signed_zero_and_nan_order():
    a = np.array([0.0, -0.0, np.nan, -np.inf, np.inf, -0.0, 0.0, np.nan, -1.0], np.float32)
    for desc in (False, True):
        r = zyx.sort(zyx.from_numpy(a), descending=desc, stable=True)
        t = torch.sort(torch.from_numpy(a), descending=desc, stable=True)
        check_sorted_like(r.values, r.indices, a, t.indices)


@pytest.mark.parametrize("dim", [0, 1, 2, -1, -2])
def test_sort_any_dim_of_a_non_contiguous_input(dim):
    a = RNG.standard_normal((6, 5, 8)).astype(np.float32)
    x = zyx.from_numpy(a).permute(2, 0, 1)[1:, ::2]  # (7, 3, 5), strided
    t = torch.from_numpy(a).permute(2, 0, 1)[1:, ::2]
    r, tr = x.sort(dim=dim), t.sort(dim=dim, stable=True)
    np.testing.assert_array_equal(r.values.numpy(), tr.values.numpy())
    np.testing.assert_array_equal(r.indices.numpy(), tr.indices.numpy())
    np.testing.assert_array_equal(zyx.argsort(x, dim, descending=True).numpy(),
                                  torch.argsort(t, dim=dim, descending=True, stable=True).numpy())


def test_sort_pending_and_expanded_inputs():
    a = RNG.standard_normal((1, 40)).astype(np.float32)
    x = (zyx.from_numpy(a) * 2 + 1).expand(3, 40)
    t = (torch.from_numpy(a) * 2 + 1).expand(3, 40)
    r = x.sort(dim=0, descending=True)
    tr = t.sort(dim=0, descending=True, stable=True)
    np.testing.assert_array_equal(r.values.numpy(), tr.values.numpy())
    np.testing.assert_array_equal(r.indices.numpy(), tr.indices.numpy())


def test_sort_rank0_rank8_and_empty():
    r = zyx.tensor(2.5).sort()
    assert r.values.shape == () and r.indices.shape == () and r.values.item() == 2.5 and r.indices.item() == 0
    a = RNG.standard_normal((2, 1, 2, 1, 3, 1, 2, 2)).astype(np.float32)
    for dim in (4, -1, 0):
        r, tr = zyx.from_numpy(a).sort(dim), torch.from_numpy(a).sort(dim=dim, stable=True)
        np.testing.assert_array_equal(r.indices.numpy(), tr.indices.numpy())
    for shape, dim in (((0, 5), 1), ((3, 0), 1), ((3, 0), 0)):
        r = zyx.zeros(*shape).sort(dim)
        assert r.values.shape == shape and r.indices.shape == shape and r.indices.dtype is zyx.int64
    with pytest.raises(IndexError, match="out of range"):
        zyx.zeros(3, 4).sort(dim=2)


@pytest.mark.parametrize("dt,rows,n,desc", [("float32", 1, 40000, False), ("int64", 2, 20000, True),
                                            ("float16", 1, 33000, True), ("uint8", 1, 20000, False)])
def test_sort_long_rows_take_the_block_parallel_path(dt, rows, n, desc):
    device = zyx.default_device()
    assert sort_kernels.sort_strategy(device, rows, n) == "blocks"
    a = data((rows, n), dt, span=None if dt != "float32" else 1e3)
    r = zyx.from_numpy(a).sort(descending=desc)
    t = torch.sort(as_torch(a), descending=desc, stable=True)
    check_sorted_like(r.values, r.indices, a, t.indices)


def test_sort_reads_values_or_indices_alone_and_leaks_nothing():
    x = zyx.from_numpy(RNG.standard_normal((4, 50)).astype(np.float32))
    x.realize()
    before = zyx.memory_stats()["live_buffers"]
    for i in range(20):
        r = (x + i).sort()
        (r.values if i % 2 else r.indices).numpy()
        del r
    assert zyx.memory_stats()["live_buffers"] == before
    v = zyx.sort(x).values  # the indices tensor dropped before anything ran
    np.testing.assert_array_equal(v.numpy(), np.sort(x.numpy(), -1))


# ---------------------------------------------------------------- topk / kthvalue


@pytest.mark.parametrize("dt", ["float32", "bfloat16", "int16", "uint8", "float64"])
def test_topk_values_and_indices(dt):
    a = data((5, 300), dt)
    x, t = zyx.from_numpy(a), as_torch(a)
    for k, largest in ((1, True), (7, False), (64, True), (65, False)):
        r, tr = x.topk(k, largest=largest), torch.topk(t, k, largest=largest)
        np.testing.assert_array_equal(bits(r.values.numpy()), bits(np.asarray(as_np(tr.values, a.dtype))))
        # indices point at the values (ties may pick other equal elements than torch does)
        np.testing.assert_array_equal(bits(np.take_along_axis(a, r.indices.numpy(), -1)), bits(r.values.numpy()))
        assert len(set(map(tuple, np.sort(r.indices.numpy(), -1)))) >= 1


def as_np(t, dtype):
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    if t.dtype in (torch.uint16, torch.uint32, torch.uint64):
        return t.view({torch.uint16: torch.int16, torch.uint32: torch.int32, torch.uint64: torch.int64}[t.dtype]
                      ).numpy().view(dtype)
    return t.numpy()


@pytest.mark.parametrize("rows,n", [(3, 257), (1, 50000)])
def test_topk_distinct_values_match_torch_indices(rows, n):
    a = RNG.permutation(rows * n).reshape(rows, n).astype(np.float32) - 1000.5
    x, t = zyx.from_numpy(a), torch.from_numpy(a)
    for k, largest in ((10, True), (3, False)):
        r, tr = x.topk(k, largest=largest), t.topk(k, largest=largest)
        np.testing.assert_array_equal(r.values.numpy(), tr.values.numpy())
        np.testing.assert_array_equal(r.indices.numpy(), tr.indices.numpy())


def test_topk_dims_nan_and_edge_sizes():
    a = data((4, 6, 9), "float32")
    x, t = zyx.from_numpy(a).transpose(0, 2), torch.from_numpy(a).transpose(0, 2)
    for dim in (0, 1, 2):
        r, tr = x.topk(3, dim=dim), t.topk(3, dim=dim)
        np.testing.assert_array_equal(r.values.numpy(), tr.values.numpy())
    assert x.topk(0, dim=1).values.shape == (9, 0, 4)
    n = x.shape[1]
    np.testing.assert_array_equal(x.topk(n, dim=1, largest=False).values.numpy(),
                                  t.topk(n, dim=1, largest=False).values.numpy())
    r = zyx.tensor(3.0).topk(1)
    assert r.values.shape == () and r.values.item() == 3.0


def test_topk_and_kthvalue_errors():
    x = zyx.zeros(3, 5)
    for bad in (6, -1):
        with pytest.raises(zyx.ShapeError, match=r"topk\(\): k = .* out of range .* size 5"):
            x.topk(bad)
        with pytest.raises(IndexError):
            x.topk(bad)
    for bad in (0, 6):
        with pytest.raises(IndexError, match=r"kthvalue\(\): k = .* expected 1 <= k <= 5"):
            x.kthvalue(bad)
    with pytest.raises(IndexError, match="dim 2 is out of range"):
        x.topk(1, dim=2)
    with pytest.raises(zyx.DTypeError, match="k must be an int"):
        x.topk(1.5)


@pytest.mark.parametrize("k", [1, 4, 70])
@pytest.mark.parametrize("keepdim", [False, True])
def test_kthvalue_matches_torch(k, keepdim):
    a = RNG.permutation(3 * 80).reshape(3, 80).astype(np.float64)
    a[1, 5] = np.nan
    x, t = zyx.from_numpy(a), torch.from_numpy(a)
    for dim in (1, 0):
        kk = min(k, a.shape[dim])
        r, tr = x.kthvalue(kk, dim, keepdim), t.kthvalue(kk, dim, keepdim)
        np.testing.assert_array_equal(r.values.numpy(), tr.values.numpy())
        np.testing.assert_array_equal(r.indices.numpy(), tr.indices.numpy())


# ---------------------------------------------------------------- median


@pytest.mark.parametrize("dt", ["float32", "int16"])
def test_median_full_and_along_dims(dt):
    for shape in ((7,), (5, 3, 2)):
        a = data(shape, dt, nan=False, span=50)
        x, t = zyx.from_numpy(a), as_torch(a)
        np.testing.assert_array_equal(bits(x.median().numpy()), bits(as_np(t.median(), a.dtype)))
        for dim in range(len(shape)):
            for keepdim in (False, True):
                r, tr = x.median(dim, keepdim), t.median(dim, keepdim)
                np.testing.assert_array_equal(bits(r.values.numpy()), bits(as_np(tr.values, a.dtype)))
                np.testing.assert_array_equal(bits(np.take_along_axis(
                    a, r.indices.numpy() if keepdim else np.expand_dims(r.indices.numpy(), dim), dim)),
                    bits(r.values.numpy() if keepdim else np.expand_dims(r.values.numpy(), dim)))


def test_median_nan_propagates_with_the_first_nan_index():
    a = RNG.permutation(24).reshape(4, 6).astype(np.float32)
    a[1, 4] = a[1, 2] = np.nan
    a[3, 0] = np.nan
    x, t = zyx.from_numpy(a), torch.from_numpy(a)
    r, tr = x.median(1), t.median(1)
    np.testing.assert_array_equal(r.values.numpy(), tr.values.numpy())
    np.testing.assert_array_equal(r.indices.numpy(), tr.indices.numpy())
    assert np.isnan(x.median().item())
    assert np.isnan(zyx.zeros(0).median().item())
    assert zyx.tensor(5).median().item() == 5
    with pytest.raises(IndexError, match="empty"):
        zyx.zeros(3, 0).median(1)


# ---------------------------------------------------------------- unique


@pytest.mark.parametrize("dt", ["int64", "float32", "bool", "bfloat16", "uint16"])
def test_unique_with_inverse_and_counts(dt):
    a = data((6, 7), dt, span=5)
    x, t = zyx.from_numpy(a), as_torch(a)
    u, inv, cnt = x.unique(return_inverse=True, return_counts=True)
    tu, tinv, tcnt = torch.unique(t, return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(bits(u.numpy()), bits(as_np(tu, a.dtype)))
    # each NaN is its own value; PyTorch numbers them in no fixed order, zyx in input order
    nan = np.isnan(a.astype(np.float32)) if a.dtype.kind not in "biu" else np.zeros(a.shape, bool)
    np.testing.assert_array_equal(inv.numpy()[~nan], tinv.numpy()[~nan])
    np.testing.assert_array_equal(inv.numpy()[nan], np.arange(len(u) - nan.sum(), len(u)))
    np.testing.assert_array_equal(cnt.numpy(), tcnt.numpy())
    np.testing.assert_array_equal(bits(zyx.unique(x).numpy()), bits(as_np(tu, a.dtype)))


def test_unique_nan_signed_zero_and_empty():
    a = np.array([1.0, np.nan, 0.0, np.nan, -0.0, -1.0, 1.0], np.float32)
    u, inv, cnt = zyx.unique(zyx.from_numpy(a), return_inverse=True, return_counts=True)
    tu, tinv, tcnt = torch.unique(torch.from_numpy(a), return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(u.numpy(), tu.numpy())
    np.testing.assert_array_equal(inv.numpy(), tinv.numpy())
    np.testing.assert_array_equal(cnt.numpy(), tcnt.numpy())
    u, inv = zyx.zeros(0, 3).unique(return_inverse=True)
    assert u.shape == (0,) and inv.shape == (0, 3)


@pytest.mark.parametrize("dt", ["float32", "int8"])
def test_unique_along_a_dim(dt):
    a = RNG.integers(0, 2, (7, 3, 2)).astype(zyx.dtype.to_dtype(dt).numpy)
    x, t = zyx.from_numpy(a).permute(1, 0, 2), torch.from_numpy(a).permute(1, 0, 2)  # non-contiguous
    # every dim in float32; int8 (the integer keys) along the middle one, its slices strided both sides
    for dim in (0, 1, -1) if dt == "float32" else (1,):
        got = x.unique(dim=dim, return_inverse=True, return_counts=True)
        want = torch.unique(t, dim=dim, return_inverse=True, return_counts=True)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g.numpy(), w.numpy())
    np.testing.assert_array_equal(zyx.unique(x, dim=1).numpy(), torch.unique(t, dim=1).numpy())
    assert zyx.zeros(0, 3).unique(dim=0).shape == (0, 3)


@pytest.mark.parametrize("dt,r", [("float32", 700), ("bool", 513), ("float16", 33), ("int64", 1)])
def test_unique_along_a_dim_with_long_slices(dt, r):
    # slices of hundreds of elements (a recursion error once); rows differing only in the last element
    a = RNG.integers(0, 2, (9, r)).astype(zyx.dtype.to_dtype(dt).numpy)
    a[4], a[7] = a[1], a[2]
    a[5], a[5, -1] = a[1], 1 - a[1, -1]
    got = zyx.from_numpy(a).unique(dim=0, return_inverse=True, return_counts=True)
    want = torch.unique(torch.from_numpy(a), dim=0, return_inverse=True, return_counts=True)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.numpy(), w.numpy())


def test_unique_along_a_dim_nan_rows_and_errors():
    a = np.array([[np.nan, 1.0], [np.nan, 1.0], [0.0, 2.0], [-0.0, 2.0]], np.float32)
    u, inv, cnt = zyx.from_numpy(a).unique(dim=0, return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(u.numpy(), np.array([[0.0, 2.0], [np.nan, 1.0], [np.nan, 1.0]], np.float32))
    assert inv.tolist() == [1, 2, 0, 0] and cnt.tolist() == [2, 1, 1]
    with pytest.raises(IndexError, match="0-d"):
        zyx.tensor(3.0).unique(dim=0)
    with pytest.raises(zyx.ShapeError, match="empty dim"):
        zyx.zeros(3, 0).unique(dim=0)


# ---------------------------------------------------------------- searchsorted / bucketize


def test_searchsorted_left_right_batched_sorter_and_scalars():
    seq = np.sort(RNG.integers(-5, 6, 20)).astype(np.float32)
    vals = np.concatenate([RNG.integers(-7, 8, 30).astype(np.float32), [np.nan, -0.0, np.inf]]).reshape(3, 11)
    zs, zv, ts, tv = zyx.from_numpy(seq), zyx.from_numpy(vals), torch.from_numpy(seq), torch.from_numpy(vals)
    for kw in ({}, {"right": True}, {"side": "right"}, {"side": "left", "out_int32": True}):
        got, want = zyx.searchsorted(zs, zv, **kw), torch.searchsorted(ts, tv, **kw)
        assert got.dtype is (zyx.int32 if kw.get("out_int32") else zyx.int64)
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    seq2 = np.sort(RNG.standard_normal((3, 4, 9)), -1)
    vals2 = RNG.standard_normal((3, 4, 5))
    for right in (False, True):
        np.testing.assert_array_equal(
            zyx.searchsorted(zyx.from_numpy(seq2), zyx.from_numpy(vals2), right=right).numpy(),
            torch.searchsorted(torch.from_numpy(seq2), torch.from_numpy(vals2), right=right).numpy())
    unsorted = RNG.permutation(12).astype(np.int32)
    order = np.argsort(unsorted).astype(np.int64)
    q = np.array([-1, 0, 5, 11, 12, 3], np.int32)
    np.testing.assert_array_equal(
        zyx.searchsorted(zyx.from_numpy(unsorted), zyx.from_numpy(q), sorter=zyx.from_numpy(order)).numpy(),
        torch.searchsorted(torch.from_numpy(unsorted), torch.from_numpy(q), sorter=torch.from_numpy(order)).numpy())
    ints = zyx.tensor([1, 2, 3])
    assert zyx.searchsorted(ints, zyx.tensor([2.5])).tolist() == [2]
    assert zyx.searchsorted(ints, 2).item() == 1
    with pytest.raises(zyx.ShapeError, match="leading dims"):
        zyx.searchsorted(zyx.zeros(2, 5), zyx.zeros(3, 5))
    with pytest.raises(zyx.ShapeError, match="contradict"):
        zyx.searchsorted(ints, ints, right=True, side="left")
    assert zyx.searchsorted(ints, zyx.zeros(0, dtype=zyx.int64)).shape == (0,)


def test_bucketize_matches_torch():
    b = np.array([-1.0, 0.0, 0.5, 2.0], np.float64)
    v = RNG.standard_normal((4, 6)).round(1)
    v[0, :3] = [0.0, 0.5, -1.0]
    for right in (False, True):
        np.testing.assert_array_equal(
            zyx.bucketize(zyx.from_numpy(v), zyx.from_numpy(b), right=right).numpy(),
            torch.bucketize(torch.from_numpy(v), torch.from_numpy(b), right=right).numpy())
    with pytest.raises(zyx.ShapeError, match="1-D"):
        zyx.bucketize(zyx.zeros(3), zyx.zeros(2, 2))


# ---------------------------------------------------------------- gradients


def _grads(fn_z, fn_t, a):
    x = zyx.from_numpy(a).requires_grad_()
    t = torch.from_numpy(a).requires_grad_()
    out_z, out_t = fn_z(x), fn_t(t)
    w = RNG.standard_normal(tuple(out_t.shape))
    out_z.backward(zyx.from_numpy(w))
    out_t.backward(torch.from_numpy(w))
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_gradients_of_selected_values_equal_torch():
    a = RNG.permutation(4 * 6 * 5).reshape(4, 6, 5).astype(np.float64)
    _grads(lambda x: x.sort(1, descending=True).values, lambda t: t.sort(1, descending=True).values, a)
    _grads(lambda x: x.permute(2, 0, 1).sort(0).values, lambda t: t.permute(2, 0, 1).sort(0).values, a)
    _grads(lambda x: x.topk(2, dim=0).values, lambda t: t.topk(2, dim=0).values, a)
    _grads(lambda x: x.topk(3, largest=False).values * 2, lambda t: t.topk(3, largest=False).values * 2, a)
    _grads(lambda x: x.kthvalue(2, 1).values, lambda t: t.kthvalue(2, 1).values, a)
    _grads(lambda x: x.kthvalue(3, 2, keepdim=True).values, lambda t: t.kthvalue(3, 2, keepdim=True).values, a)
    _grads(lambda x: x.median(0).values, lambda t: t.median(0).values, a)
    _grads(lambda x: x.median(-1, True).values, lambda t: t.median(-1, True).values, a)
    _grads(lambda x: x.median() * 3, lambda t: t.median() * 3, a)


def test_median_gradient_is_shared_by_ties_and_nans():
    a = np.array([[1.0, 2.0, 2.0], [2.0, 0.0, 5.0]])
    _grads(lambda x: x.median(), lambda t: t.median(), a)
    b = np.array([1.0, np.nan, 2.0, np.nan])
    _grads(lambda x: x.median(), lambda t: t.median(), b)
    _grads(lambda x: x.median(0).values, lambda t: t.median(0).values, b)


def test_second_order_gradient_through_sort():
    a = RNG.standard_normal((3, 8))
    x = zyx.from_numpy(a).requires_grad_()
    t = torch.from_numpy(a).requires_grad_()
    (gz,) = zyx.autograd.grad((x.sort().values ** 3).sum(), [x], create_graph=True)
    (gt,) = torch.autograd.grad((t.sort().values ** 3).sum(), [t], create_graph=True)
    (gz * gz).sum().backward()
    (gt * gt).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-10)
    assert zyx.sort(zyx.zeros(3, dtype=zyx.int32)).values.requires_grad is False


@pytest.mark.parametrize("dt,shape", [("float32", (5, 100)), ("int16", (3, 2048)), ("float64", (2, 3))])
def test_gpu_bitonic_row_sort(monkeypatch, dt, shape):
    """The GPU path (a work-group per row, bitonic in local memory), forced on this device."""
    from zyx import settings

    monkeypatch.setattr(settings, "HEURISTICS", "gpu")
    assert sort_kernels.sort_strategy(zyx.default_device(), shape[0], shape[1]) == "bitonic"
    a = data(shape, dt)
    for desc in (False, True):
        r = zyx.from_numpy(a).sort(descending=desc)
        t = torch.sort(as_torch(a), descending=desc, stable=True)
        check_sorted_like(r.values, r.indices, a, t.indices)


def test_selection_ops_on_rank8_empty_and_rank0_inputs():
    a = RNG.permutation(96).reshape(2, 1, 2, 1, 3, 1, 2, 4).astype(np.float32)
    x, t = zyx.from_numpy(a), torch.from_numpy(a)
    for got, want in ((x.topk(2, dim=4), t.topk(2, dim=4)), (x.kthvalue(2, -1, True), t.kthvalue(2, -1, True)),
                      (x.median(0), t.median(0))):
        np.testing.assert_array_equal(got.values.numpy(), want.values.numpy())
        np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy())
    e = zyx.zeros(0, 5)
    assert e.topk(2).values.shape == (0, 2) and e.kthvalue(3).indices.shape == (0,)
    assert e.median(1).values.shape == (0,) and e.argsort(0).shape == (0, 5)
    s = zyx.tensor(7.0)
    assert s.kthvalue(1).values.item() == 7.0 and s.median(0).indices.item() == 0
    assert zyx.tensor(3).unique().tolist() == [3]
    assert zyx.bucketize(zyx.tensor(0.5), zyx.tensor([0.0, 1.0])).item() == 1


@pytest.mark.parametrize("dt", ["float32", "float16", "bfloat16"])
def test_searchsorted_nan_in_the_sequence_as_pytorch(dt):
    """PyTorch's search compares ``!(x >= v)`` / ``!(x > v)``: a NaN in the sequence or among the values
    moves the search right (past every NaN for a NaN value, even on the left side)."""
    seq = np.sort(RNG.standard_normal((4, 11)), -1)
    seq[0, -1:] = np.nan
    seq[1, -3:] = np.nan
    seq[2, 4] = np.nan  # one inside the row too: the result is whatever PyTorch's search finds
    vals = RNG.standard_normal((4, 6))
    vals[0, 1] = vals[2, 0] = np.nan
    vals[3, 0] = np.inf
    tdt = TORCH_DT[dt]
    ts, tv = torch.from_numpy(seq).to(tdt), torch.from_numpy(vals).to(tdt)
    zs, zv = zyx.from_numpy(seq).cast(dt), zyx.from_numpy(vals).cast(dt)
    order = np.stack([RNG.permutation(11) for _ in range(4)])
    for right in (False, True):
        np.testing.assert_array_equal(zyx.searchsorted(zs, zv, right=right).numpy(),
                                      torch.searchsorted(ts, tv, right=right).numpy())
        np.testing.assert_array_equal(zyx.bucketize(zv, zs[1], right=right).numpy(),
                                      torch.bucketize(tv, ts[1], right=right).numpy())
        np.testing.assert_array_equal(
            zyx.searchsorted(zs, zv, right=right, sorter=zyx.from_numpy(order)).numpy(),
            torch.searchsorted(ts, tv, right=right, sorter=torch.from_numpy(order)).numpy())


def test_topk_of_a_0d_tensor_with_k_0():
    values, indices = zyx.tensor(2.5).topk(0)  # PyTorch gives the element back for k = 0 too
    assert values.shape == () and values.item() == 2.5 and indices.item() == 0
