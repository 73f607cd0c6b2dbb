"""Every contract template (templates/contracts/) under Oclgrind, for each element size (the byte
kernels are specialized on it: 1, 2, 4 and 8 bytes) and each cumsum dtype, on odd shapes (scalar
paths) and shapes whose contiguous run takes vectors, with strided, transposed, offset and
broadcast inputs; values compared bit for bit with NumPy. Each runs with the GPU variants (the
tier's heuristics) and once more with the CPU variants (transposed tiles, words widened from
1- and 2-byte elements, exact grids, row-wise triangular), which Oclgrind checks just as well."""
from __future__ import annotations

import numpy as np
import pytest

import zyx
from zyx import settings

#: One dtype per element size (the byte kernels see only the size; NaN payloads must survive).
BYTES = [zyx.uint8, zyx.bfloat16, zyx.float32, zyx.float64]
IDS = [f"{d.itemsize}B-{d.name}" for d in BYTES]
#: (odd shape: scalar path, shape whose last axis takes vectors); outer extents odd either way.
SHAPES = {1: [(3, 5, 7), (3, 5, 48)], 2: [(3, 5, 7), (5, 24)], 4: [(3, 5, 7), (5, 12)], 8: [(3, 5, 7), (5, 6)]}


def raw(shape, dtype, seed=0) -> np.ndarray:
    """Random bit patterns of ``dtype`` (NaNs with payloads included, for the float ones)."""
    width = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[dtype.itemsize]
    rng = np.random.default_rng(seed)
    return rng.integers(0, np.iinfo(width).max, size=shape, dtype=width, endpoint=True).view(dtype.numpy)


def bits(a) -> np.ndarray:
    a = np.ascontiguousarray(a)
    return a.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def same(got: zyx.Tensor, want: np.ndarray) -> None:
    g = got.numpy()
    assert g.shape == want.shape, (g.shape, want.shape)
    np.testing.assert_array_equal(bits(g), bits(want))


def up(a: np.ndarray, dev) -> zyx.Tensor:
    return zyx.from_numpy(np.ascontiguousarray(a), device=dev)


@pytest.fixture(params=["gpu", "cpu"], autouse=True)
def variants(request, sanitized, monkeypatch):
    """The contract kernels' GPU variants, then their CPU ones."""
    monkeypatch.setattr(settings, "HEURISTICS", request.param)
    return request.param


@pytest.mark.parametrize("dtype", BYTES, ids=IDS)
def test_contiguize_views(sim, needs, dtype):
    needs(dtype)
    for shape in SHAPES[dtype.itemsize]:
        a = raw(shape, dtype, 1)
        x = up(a, sim)
        same(x.permute(2, 0, 1).contiguous() if len(shape) == 3 else x.T.contiguous(),
             a.transpose(2, 0, 1) if len(shape) == 3 else a.T)
        same(x[..., 1::2].contiguous(), a[..., 1::2])  # strided
        same(x[1:].contiguous(), a[1:])  # offset
        same(x[:1].expand(4, *shape[1:]).contiguous(), np.broadcast_to(a[:1], (4, *shape[1:])))  # broadcast


@pytest.mark.parametrize("dtype", BYTES, ids=IDS)
def test_flip_roll_cat(sim, needs, dtype):
    needs(dtype)
    for shape in SHAPES[dtype.itemsize]:
        a, b = raw(shape, dtype, 2), raw(shape[:-1] + (3,), dtype, 3)
        x = up(a, sim)
        same(x.flip(0), np.flip(a, 0))
        same(x.flip(-1), np.flip(a, -1))
        same(x.roll(2, 0), np.roll(a, 2, 0))  # inner > 1
        same(x.roll(-3, -1), np.roll(a, -3, -1))  # rows: two offset copies, a clamped remainder
        same(x.roll(5), np.roll(a, 5))  # flattened
        same(x.roll(shape[-1] // 3, -1), np.roll(a, shape[-1] // 3, -1))  # rows: vectors where the shift allows
        same(zyx.cat([x, up(b, sim)], -1), np.concatenate([a, b], -1))
        same(zyx.cat([x[1:], x], 0), np.concatenate([a[1:], a], 0))


@pytest.mark.parametrize("dtype", BYTES, ids=IDS)
def test_triangular_masked_fill(sim, needs, dtype):
    needs(dtype)
    for shape in SHAPES[dtype.itemsize]:
        a = raw(shape, dtype, 4)
        x = up(a, sim)
        same(x.triu(1), np.triu(a, 1))
        same(x.tril(-1), np.tril(a, -1))
        mask = np.random.default_rng(5).random(shape) < 0.4
        fill = np.array(1, dtype=dtype.numpy) if dtype.is_float else np.array(7, dtype=dtype.numpy)
        same(x.masked_fill(up(mask, sim), fill.item()), np.where(mask, fill, a))


@pytest.mark.parametrize("dtype", BYTES, ids=IDS)
def test_write_slices(sim, needs, dtype):
    needs(dtype)
    for shape in SHAPES[dtype.itemsize]:
        d = raw(shape, dtype, 6)
        dest = up(d, sim)
        s = raw((2, 3) + shape[2:], dtype, 7)
        zyx.write_slice(dest, up(s, sim), [(1, 3), (1, 4)] + [(0, e) for e in shape[2:]])
        d[1:3, 1:4] = s
        same(dest, d)
        v = raw(shape[:-1] + (len(range(1, shape[-1], 2)),), dtype, 8)
        dest[..., 1::2] = up(v, sim)  # setitem into a strided box
        d[..., 1::2] = v
        same(dest, d)
        for position in (3, zyx.tensor([6], dtype=zyx.int32, device=sim)):
            s = raw((2,) + shape[1:], dtype, 10)
            zyx.write_slice_rotating(dest, up(s, sim), 0, position, modulus=shape[0])
            p = 3 if isinstance(position, int) else 6
            for r in range(2):
                d[(p % shape[0] + r) % shape[0]] = s[r]
            same(dest, d)
        s = raw(shape[:1] + (2,) + shape[2:], dtype, 11)
        zyx.write_slice_doff(dest, up(s, sim), 1, zyx.tensor([2], dtype=zyx.int64, device=sim))
        d[:, 2:4] = s
        same(dest, d)
        with pytest.raises(zyx.ContractError, match="out of range"):  # the device-side check, nothing written
            zyx.write_slice_doff(dest, up(s, sim), 1, zyx.tensor([shape[1] - 1], dtype=zyx.int64, device=sim))
            dest.numpy()
        same(dest, d)


SCAN_DTYPES = [zyx.float32, zyx.float64, zyx.bfloat16, zyx.float16]


@pytest.mark.parametrize("dtype", SCAN_DTYPES, ids=[d.name for d in SCAN_DTYPES])
def test_cumsum(sim, needs, dtype):
    """Short rows (one work-item a lane), strided lanes side by side, rows longer than one 256 x 8 block
    (work-group scans in local memory, block totals, carries) and, with the CPU variants, many contiguous
    rows scanned a vector at a time (whole vectors and a tail)."""
    needs(dtype)
    rng = np.random.default_rng(12)
    acc = np.float64 if dtype is zyx.float64 else np.float32
    for shape, dim in (((3, 37), 1), ((5, 3, 4), 1), ((2, 2101), 1), ((2101, 3), 0), ((20, 37), 1)):
        a = (rng.random(shape) * 2 - 1).astype(dtype.numpy)
        got = zyx.from_numpy(a, device=sim).cumsum(dim).numpy().astype(np.float64)
        want = np.cumsum(a.astype(acc), dim)
        np.testing.assert_allclose(got, want, rtol=1e-2 if dtype.itemsize == 2 else 1e-5, atol=1e-2)


def test_scans_beyond_cumsum(sim, needs):
    """cumprod, logcumsumexp and cummax/cummin (the indexed carries), and int32 cumsum/cumprod into
    int64: short rows, strided lanes, and rows longer than a 256 x 8 block (GPU variants)."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(13)
    for shape, dim in (((3, 37), 1), ((2, 2101), 1), ((2101, 3), 0), ((20, 37), 1)):
        a = (1 + (rng.random(shape) - 0.5) * 0.01).astype(np.float32)
        i = rng.integers(-3, 4, size=shape).astype(np.int32)
        x, xi, t = up(a, sim), up(i, sim), torch.from_numpy(a)
        np.testing.assert_allclose(x.cumprod(dim).numpy(), torch.cumprod(t, dim).numpy(), rtol=1e-5)
        np.testing.assert_allclose(x.logcumsumexp(dim).numpy(), torch.logcumsumexp(t, dim).numpy(), rtol=1e-5)
        for op in ("cummax", "cummin"):
            values, indices = getattr(xi, op)(dim)
            ev, ei = getattr(torch, op)(torch.from_numpy(i), dim)
            np.testing.assert_array_equal(values.numpy(), ev.numpy())
            np.testing.assert_array_equal(indices.numpy(), ei.numpy())
        np.testing.assert_array_equal(xi.cumsum(dim).numpy(), np.cumsum(i, dim, dtype=np.int64))
        np.testing.assert_array_equal(xi.cumprod(dim).numpy(), np.cumprod(i, dim, dtype=np.int64))
