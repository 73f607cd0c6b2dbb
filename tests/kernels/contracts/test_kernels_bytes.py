"""The byte kernels (contiguize, flip, roll, concat, triangular, masked_fill) against NumPy, bit for bit.

Inputs are raw bit patterns (NaN payloads included) of every dtype, seen through
contiguous, strided, transposed, offset, broadcast and reversed views; shapes are not
multiples of the work-group or vector width; ranks run from 0/1 to 8; empty tensors too.
The kernels are specialized on element size, so the 15 dtypes cost 4 builds per shape.
"""
from __future__ import annotations

import numpy as np
import pytest

import zyx
from zyx import settings
from zyx.kernels import contracts as kernels

from contract_data import DTYPE_IDS, DTYPES, LAYOUTS, make, on_device, raw

RANK_SHAPES = {1: (13,), 2: (3, 5), 3: (2, 3, 5), 4: (2, 1, 3, 5), 5: (2, 3, 1, 2, 3),
               6: (3, 2, 1, 2, 1, 3), 7: (2, 1, 2, 3, 1, 2, 3), 8: (2, 1, 3, 2, 1, 2, 3, 2)}


# ---------------------------------------------------------------- contiguize


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_contiguize_bits(device, bits_equal, dtype, layout):
    x, ref = make(layout, (3, 5, 7), dtype, device, seed=1)
    out = x.contiguous()
    assert out.is_contiguous() and out.dtype is dtype
    bits_equal(out.numpy(), np.ascontiguousarray(ref))


@pytest.mark.parametrize("rank", sorted(RANK_SHAPES))
@pytest.mark.parametrize("layout", ["transposed", "reversed", "broadcast"])
def test_contiguize_ranks(device, bits_equal, rank, layout):
    shape = RANK_SHAPES[rank]
    if layout == "broadcast" and shape[0] == 1:
        pytest.skip("needs a leading axis longer than 1")
    x, ref = make(layout, shape, zyx.float32, device, seed=rank)
    bits_equal(x.contiguous().numpy(), np.ascontiguousarray(ref))


def test_contiguize_vector_paths_and_tunables(device, bits_equal):
    """A long contiguous inner run uses vector loads; other tunables give the same bits."""
    big = raw((4, 67), zyx.uint8, seed=3)
    x = on_device(big, device)[1:, 3:]  # offset view, inner run of 64
    expected = np.ascontiguousarray(big[1:, 3:])
    bits_equal(x.contiguous().numpy(), expected)
    try:
        kernels.set_tunables(device, per_item=1, vector_bytes=1, local_size=7)
        bits_equal(x.contiguous().numpy(), expected)
    finally:
        kernels.set_tunables(device)


def test_contiguize_empty_and_scalar(device):
    e = zyx.zeros(3, 0, 4, device=device).permute(2, 0, 1)
    before = zyx.kernel_count()
    out = e.contiguous()
    assert out.shape == (4, 3, 0) and zyx.kernel_count() == before
    s = zyx.tensor(2.5, device=device).expand(3, 2)
    assert s.contiguous().tolist() == [[2.5, 2.5]] * 3


@pytest.mark.parametrize("layout, shape, row", [
    ("transposed", (300, 272), 288),     # the tiled transpose: full tiles and partial ones at both ends
    ("transposed", (3, 37, 21), 29),     # rows of 21 written 29 apart, an outer axis
    ("strided", (2, 5, 64), 80),         # vectors along the rows
    ("contiguous", (7, 13), 13),         # no padding at all
    ("broadcast", (3, 4, 6), 9),
    ("reversed", (5, 3), 4),
])
@pytest.mark.parametrize("dtype", [zyx.float32, zyx.uint8, zyx.float64], ids=["f32", "u8", "f64"])
def test_contiguize_padded_rows(device, bits_equal, dtype, layout, shape, row):
    """``row``: rows of the last axis written ``row`` elements apart; what lies between them is left as it was."""
    from zyx.backend import transfer

    x, ref = make(layout, shape, dtype, device, seed=7)
    poison = raw((*shape[:-1], row), dtype, seed=8)
    out = transfer.upload(device, poison)
    kernels.contiguize(device, out, x._realized(), x._view, dtype.itemsize, row=row)
    got = transfer.read(out).view(dtype.numpy).reshape(poison.shape)
    bits_equal(np.ascontiguousarray(got[..., :shape[-1]]), np.ascontiguousarray(ref))
    bits_equal(np.ascontiguousarray(got[..., shape[-1]:]), np.ascontiguousarray(poison[..., shape[-1]:]))


def test_contiguous_rows_view(device, bits_equal):
    """The tensor op: a view of the padded copy, rows ``row`` apart; it fuses into what reads it."""
    x, ref = make("transposed", (40, 24), zyx.float32, device, seed=9, finite=True)
    y = x._contiguous_rows(32)
    assert y.shape == (40, 24) and y.stride() == (32, 1)
    bits_equal(y.numpy(), np.ascontiguousarray(ref))
    bits_equal((y * 2).numpy(), np.ascontiguousarray(ref) * 2)
    with pytest.raises(zyx.ShapeError, match="row >= 24"):
        x._contiguous_rows(20)


# ---------------------------------------------------------------- flip


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_flip_bits(device, bits_equal, dtype):
    a = raw((3, 5, 7), dtype, seed=4)
    x = on_device(a, device)
    for dims in [(0,), (2,), (0, 2), (-1, 1), ()]:
        bits_equal(x.flip(dims).numpy(), np.flip(a, dims) if dims else a)
    v = raw((3, 32), dtype, seed=5)  # last axis a multiple of every vector width
    xv = on_device(v, device)
    bits_equal(xv.flip(1).numpy(), np.flip(v, 1))
    bits_equal(xv.flip(0).numpy(), np.flip(v, 0))


@pytest.mark.parametrize("layout", ["strided", "transposed", "offset", "broadcast", "reversed"])
def test_flip_of_views(device, bits_equal, layout):
    x, ref = make(layout, (4, 6), zyx.float16, device, seed=6)
    bits_equal(x.flip(0, 1).numpy(), np.flip(ref, (0, 1)))


@pytest.mark.parametrize("rank", sorted(RANK_SHAPES))
def test_flip_ranks(device, bits_equal, rank):
    shape = RANK_SHAPES[rank]
    a = raw(shape, zyx.int16, seed=rank)
    dims = tuple(range(0, rank, 2)) + ((rank - 1,) if rank % 2 == 0 else ())
    bits_equal(on_device(a, device).flip(dims).numpy(), np.flip(a, dims))


def test_flip_empty_and_rank0(device):
    e = zyx.zeros(0, 3, device=device)
    assert e.flip(0).shape == (0, 3)
    s = zyx.tensor(4.0, device=device)
    assert s.flip(()).item() == 4.0


# ---------------------------------------------------------------- roll


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_roll_bits(device, bits_equal, dtype):
    a = raw((5, 7), dtype, seed=7)
    x = on_device(a, device)
    bits_equal(x.roll(2, 0).numpy(), np.roll(a, 2, 0))
    bits_equal(x.roll(-9, 1).numpy(), np.roll(a, -9, 1))
    bits_equal(x.roll(-3).numpy(), np.roll(a, -3))
    bits_equal(x.roll((1, 17), (1, 0)).numpy(), np.roll(a, (1, 17), (1, 0)))


def test_roll_cases(device, bits_equal):
    a = raw((4, 32), zyx.float32, seed=8)
    x = on_device(a, device)
    bits_equal(x.roll(3, 0).numpy(), np.roll(a, 3, 0))  # inner run of 32: vector copies
    bits_equal(x.roll(64, 1).numpy(), a)  # multiple of the extent
    bits_equal(x.roll(-(10 ** 12) - 1, -1).numpy(), np.roll(a, -(10 ** 12) - 1, -1))
    t, ref = make("transposed", (6, 5), zyx.uint8, device, seed=9)
    bits_equal(t.roll(4, 1).numpy(), np.roll(ref, 4, 1))
    s = zyx.tensor(3, device=device)
    assert s.roll(5).item() == 3 and s.roll(1, 0).item() == 3
    assert zyx.zeros(0, 4, device=device).roll(2, 0).shape == (0, 4)


def test_roll_rank8(device, bits_equal):
    a = raw(RANK_SHAPES[8], zyx.float64, seed=10)
    bits_equal(on_device(a, device).roll((1, -2, 5), (0, 3, 7)).numpy(), np.roll(a, (1, -2, 5), (0, 3, 7)))


def test_roll_matches_torch(device, torch):
    a = np.arange(30, dtype=np.float32).reshape(5, 6)
    x = on_device(a, device)
    for shifts, dims in [(2, 0), (-7, 1), ((1, -1), (0, 1)), (4, None)]:
        expected = torch.roll(torch.from_numpy(a), shifts, dims).numpy()
        assert (x.roll(shifts, dims).numpy() == expected).all()


# ---------------------------------------------------------------- concat


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_concat_bits(device, bits_equal, dtype):
    parts = [raw((3, k, 5), dtype, seed=k) for k in (1, 4, 2)]
    ts = [on_device(p, device) for p in parts]
    bits_equal(zyx.cat(ts, dim=1).numpy(), np.concatenate(parts, axis=1))
    bits_equal(zyx.concat(ts[:1] * 3, dim=-1).numpy(), np.concatenate(parts[:1] * 3, axis=-1))
    bits_equal(zyx.cat([ts[0], ts[0]], 0).numpy(), np.concatenate([parts[0]] * 2, 0))


def test_concat_views_ranks_and_empties(device, bits_equal):
    t, ref = make("transposed", (3, 4), zyx.float32, device, seed=11)
    b, rb = make("broadcast", (3, 4), zyx.float32, device, seed=12)
    r, rr = make("reversed", (2, 4), zyx.float32, device, seed=13)
    bits_equal(zyx.cat([t, b, r], 0).numpy(), np.concatenate([ref, rb, rr], 0))
    a8 = raw(RANK_SHAPES[8], zyx.int8, seed=14)
    x8 = on_device(a8, device)
    bits_equal(zyx.cat([x8, x8], 6).numpy(), np.concatenate([a8, a8], 6))
    e = zyx.zeros(3, 0, device=device)
    bits_equal(zyx.cat([e, t], 1).numpy(), ref)
    legacy = zyx.zeros(0, device=device)  # PyTorch skips 1-D empty tensors
    bits_equal(zyx.cat([legacy, t, legacy], 0).numpy(), ref)
    assert zyx.cat([e, e], 0).shape == (6, 0)


def test_concat_promotes_like_torch(device, torch):
    a = zyx.tensor([[1, 2]], dtype=zyx.int32, device=device)
    b = zyx.tensor([[0.5, 1.5]], dtype=zyx.float16, device=device)
    out = zyx.cat([a, b], 0)
    expected = torch.cat([torch.tensor([[1, 2]], dtype=torch.int32), torch.tensor([[0.5, 1.5]], dtype=torch.float16)])
    assert out.dtype is zyx.float16 and out.tolist() == expected.tolist()


# ---------------------------------------------------------------- triangular


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_triangular_bits(device, bits_equal, dtype):
    a = raw((2, 5, 7), dtype, seed=15)
    x = on_device(a, device)
    for diag in (-2, 0, 1, 9, -9):
        bits_equal(x.triu(diag).numpy(), np.triu(a, diag))
        bits_equal(x.tril(diag).numpy(), np.tril(a, diag))
    w = raw((4, 32), dtype, seed=16)  # vector path: lanes masked one by one
    bits_equal(on_device(w, device).triu(3).numpy(), np.triu(w, 3))
    bits_equal(on_device(w, device).tril(-1).numpy(), np.tril(w, -1))


def test_triangular_views_and_ranks(device, bits_equal):
    t, ref = make("transposed", (6, 4), zyx.bfloat16, device, seed=17)
    bits_equal(t.triu(-1).numpy(), np.triu(ref, -1))
    a8 = raw(RANK_SHAPES[8], zyx.float32, seed=18)
    bits_equal(on_device(a8, device).tril(0).numpy(), np.tril(a8, 0))
    assert zyx.zeros(2, 0, 3, device=device).triu().shape == (2, 0, 3)
    huge = on_device(raw((3, 3), zyx.int64, seed=19), device)
    assert (huge.triu(2 ** 63 - 1).numpy() == 0).all()
    assert (huge.tril(2 ** 63 - 1).numpy() == huge.numpy()).all()


def test_triangular_matches_torch(device, torch):
    a = np.arange(35, dtype=np.float32).reshape(5, 7)
    x = on_device(a, device)
    for diag in (-3, 0, 2):
        assert (x.triu(diag).numpy() == torch.triu(torch.from_numpy(a), diag).numpy()).all()
        assert (x.tril(diag).numpy() == torch.tril(torch.from_numpy(a), diag).numpy()).all()


# ---------------------------------------------------------------- masked_fill

FILL = {"bool": True, "float8_e4m3": -0.5, "float8_e5m2": float("inf"), "float16": float("-inf"),
        "bfloat16": 0.1, "float32": float("nan"), "float64": -0.0, "int8": -128, "uint8": 255,
        "int16": -3, "uint16": 65535, "int32": 2 ** 31 - 1, "uint32": 7, "int64": -(2 ** 63), "uint64": 2 ** 64 - 1}


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_masked_fill_bits(device, bits_equal, dtype):
    a = raw((3, 5, 7), dtype, seed=20)
    m = np.random.default_rng(21).random((3, 5, 7)) < 0.4
    value = FILL[dtype.name]
    fill = np.array(value, dtype=np.float64 if isinstance(value, float) else None).astype(dtype.numpy)
    out = on_device(a, device).masked_fill(on_device(m, device), value)
    bits_equal(out.numpy(), np.where(m, fill, a))
    row = m[0, 0]  # a (7,) mask broadcast over (3, 5, 7)
    out = on_device(a, device).masked_fill(on_device(row, device), value)
    bits_equal(out.numpy(), np.where(np.broadcast_to(row, a.shape), fill, a))


def test_masked_fill_views_and_sizes(device, bits_equal):
    x, ref = make("transposed", (5, 9), zyx.float32, device, seed=22)
    m = np.eye(5, 9, dtype=bool)
    bits_equal(x.masked_fill(on_device(m, device), 1.5).numpy(), np.where(m, np.float32(1.5), ref))
    n = 1000 + 3  # not a multiple of the vector width: scalar tail
    a = raw((n,), zyx.uint8, seed=23)
    mm = np.arange(n) % 5 == 0
    bits_equal(on_device(a, device).masked_fill(on_device(mm, device), 9).numpy(), np.where(mm, np.uint8(9), a))
    a8 = raw(RANK_SHAPES[8], zyx.float8_e5m2, seed=24)
    m8 = np.random.default_rng(25).random(RANK_SHAPES[8][-3:]) < 0.5  # broadcast over the leading axes
    out8 = on_device(a8, device).masked_fill(on_device(m8, device), -2.0)
    bits_equal(out8.numpy(), np.where(np.broadcast_to(m8, a8.shape), np.array(-2.0).astype(a8.dtype), a8))
    e = zyx.zeros(0, 4, device=device)
    assert e.masked_fill(zyx.zeros(4, dtype=zyx.bool, device=device), 1.0).shape == (0, 4)
    s = zyx.tensor(2.0, device=device)
    assert s.masked_fill(zyx.tensor(True, device=device), zyx.tensor(5.0, device=device)).item() == 5.0


def test_masked_fill_matches_torch(device, torch):
    a = np.arange(12, dtype=np.int32).reshape(3, 4)
    m = np.array([True, False, False, True])
    out = on_device(a, device).masked_fill(on_device(m, device), 2.7)
    expected = torch.from_numpy(a).masked_fill(torch.from_numpy(m), 2.7).numpy()
    assert out.dtype is zyx.int32 and (out.numpy() == expected).all()


@pytest.mark.parametrize("itemsize", [1, 2, 4, 8])
@pytest.mark.parametrize("tun", [dict(), dict(vector_bytes=64, per_item=3, local_size=7, stream_bytes=1),
                                 dict(vector_bytes=8, per_item=1, local_size=5), dict(vector_bytes=1)],
                         ids=["default", "wide-streamed", "narrow", "scalar"])
def test_masked_fill_kernel_sizes_poisoned(device, itemsize, tun):
    """The kernel itself on sizes around the vector width (whole vectors, then the scalar
    tail of the last work-item), into a poisoned buffer one element longer than the output:
    every element is written with the blend's bits and nothing past the end is touched."""
    from zyx.backend import transfer

    bits = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[itemsize]
    fill = np.array(0x5A5A5A5A5A5A5A5A & ((1 << (8 * itemsize)) - 1), dtype=bits)
    rng = np.random.default_rng(itemsize)
    try:
        kernels.set_tunables(device, **tun)
        for n in (1, 3, 7, 8, 15, 16, 17, 33, 1000, 4099):
            src = rng.integers(0, np.iinfo(bits).max, n, dtype=bits, endpoint=True)
            mask = rng.random(n) < 0.4
            out = device.pool.allocate((n + 1) * itemsize)
            transfer.write(out, np.full((n + 1) * itemsize, 0xA5, dtype=np.uint8))
            kernels.masked_fill(device, out, transfer.upload(device, src), transfer.upload(device, mask.view(np.uint8)),
                                n, fill, itemsize)
            got = transfer.read(out, (n + 1) * itemsize)
            assert np.array_equal(got[: n * itemsize].view(bits), np.where(mask, fill, src)), (n, tun)
            assert (got[n * itemsize:] == 0xA5).all(), f"wrote past the end at n={n}"
    finally:
        kernels.set_tunables(device)


# ---------------------------------------------------------------- widened words and exact grids

_BITS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
# default tunables; odd work-groups (remainder launches on every 2-D row); narrow vectors
# (caps the widened word at 2 bytes)
_TUNINGS = [{}, {"local_size": 7}, {"vector_bytes": 2, "local_size": 64, "per_item": 3}]


def _bits(shape, itemsize, seed):
    return np.random.default_rng(seed).integers(0, 2 ** 63, shape, dtype=np.uint64, endpoint=True).astype(
        _BITS[itemsize])


def _run_poisoned(device, itemsize, expected, launch, out_elems=None, initial=None):
    """Run ``launch(out)`` into a buffer poisoned past ``out_elems`` (or pre-filled with
    ``initial``) and compare every element, the 64 poisoned bytes after the end included."""
    from zyx.backend import transfer

    bits = _BITS[itemsize]
    n = expected.size if out_elems is None else out_elems
    nbytes = n * itemsize + 64
    out = device.pool.allocate(nbytes)
    host = np.full(nbytes, 0xA5, dtype=np.uint8)
    if initial is not None:
        host[: n * itemsize] = initial.reshape(-1).view(np.uint8)
    transfer.write(out, host)
    launch(out)
    got = transfer.read(out, nbytes)
    assert np.array_equal(got[: n * itemsize].view(bits), expected.reshape(-1))
    assert (got[n * itemsize:] == 0xA5).all(), "wrote past the end"


@pytest.fixture(params=range(len(_TUNINGS)), ids=["default", "local7", "vec2"])
def tuning(request, device):
    kernels.set_tunables(device, **_TUNINGS[request.param])
    yield _TUNINGS[request.param]
    kernels.set_tunables(device)


@pytest.mark.parametrize("itemsize", [1, 2, 4, 8])
# one last axis of each kind: odd (exact grid), even only, a multiple of 4 (rank 1, several
# work-groups), a multiple of 8 (rank 3, several work-groups)
@pytest.mark.parametrize("shape", [(3, 13), (3, 66), (700,), (2, 3, 520)])
def test_flip_words_and_exact_grid(device, tuning, itemsize, shape):
    """Last axes divisible by 2, 4 or 8 elements are moved as words (a flipped one also reverses
    the elements inside each word); others run one element per work-item over an exact grid."""
    from zyx.backend import transfer

    a = _bits(shape, itemsize, seed=sum(shape) + itemsize)
    src = transfer.upload(device, a)
    for dims in [(len(shape) - 1,), (0,), tuple(range(len(shape)))]:
        _run_poisoned(device, itemsize, np.ascontiguousarray(np.flip(a, dims)),
                      lambda out, dims=dims: kernels.flip(device, out, src, shape, dims, itemsize))


@pytest.mark.parametrize("itemsize", [1, 2, 4])
# inner runs that widen to words, an odd inner run, rows (inner 1) short and past a work-group
@pytest.mark.parametrize("outer,dim,inner", [(1, 7, 24), (2, 9, 7), (3, 72, 1), (4, 1000, 1)])
def test_roll_words_and_exact_grid(device, tuning, itemsize, outer, dim, inner):
    from zyx.backend import transfer

    a = _bits((outer, dim, inner), itemsize, seed=outer * dim + inner)
    src = transfer.upload(device, a)
    for shift in (1, 8, -24, 3 * dim + 4):
        _run_poisoned(device, itemsize, np.roll(a, shift, 1),
                      lambda out, shift=shift: kernels.roll(device, out, src, outer, dim, inner, shift, itemsize))


@pytest.mark.parametrize("itemsize", [1, 2, 4])
# aligned and unaligned parts side by side, odd widths, wide aligned parts, a one-column part
@pytest.mark.parametrize("widths", [(8, 5, 8), (3, 13), (256, 40), (300, 1)])
def test_concat_words_and_exact_grid(device, tuning, itemsize, widths):
    """Column offsets and widths decide the word size of each part (aligned parts widen,
    the others run element by element) without touching the neighbouring columns."""
    from zyx.backend import transfer

    rows, total = 5, sum(widths)
    parts = [_bits((rows, w), itemsize, seed=w + k) for k, w in enumerate(widths)]
    expected = np.concatenate(parts, axis=1)
    bufs = [transfer.upload(device, p) for p in parts]

    def launch(out):
        col = 0
        for p, b in zip(parts, bufs):
            kernels.concat_part(device, out, b, rows, p.shape[1], total, col, itemsize)
            col += p.shape[1]
    _run_poisoned(device, itemsize, expected, launch)


@pytest.mark.parametrize("itemsize", [1, 2, 4])
@pytest.mark.parametrize("case", ["offset8", "offset3", "rows", "cols_strided", "reversed_last", "broadcast",
                                  "reversed_rows", "long_rows"])
def test_contiguize_words_and_exact_grid(device, tuning, itemsize, case):
    """Views whose offset, strides and last extent allow it copy words; the rest element by element."""
    from zyx.backend import transfer
    from zyx.ir.view import View

    base = _bits((9, 48), itemsize, seed=len(case) + itemsize)
    flat = base.reshape(-1)
    views = {
        "offset8": View((8, 32), (40, 1), 8),
        "offset3": View((8, 32), (40, 1), 3),
        "rows": View((4, 40), (80, 1), 40),
        "cols_strided": View((9, 13), (40, 3), 1),
        "reversed_last": View((9, 40), (40, -1), 39),
        "broadcast": View((3, 9, 16), (0, 40, 1), 16),
        "reversed_rows": View((9, 24), (-40, 1), 8 * 40 + 8),
        "long_rows": View((2, 2, 300), (0, 120, 1), 8),
    }
    view = views[case]
    idx = view.offset + sum(np.arange(d).reshape((-1,) + (1,) * (len(view.shape) - k - 1)) * s
                            for k, (d, s) in enumerate(zip(view.shape, view.strides)))
    src = transfer.upload(device, flat)
    _run_poisoned(device, itemsize, flat[idx], lambda out: kernels.contiguize(device, out, src, view, itemsize))


@pytest.mark.parametrize("dtype", [zyx.uint8, zyx.float16, zyx.bool, zyx.int16], ids=lambda d: d.name)
def test_small_dtypes_api_views(device, bits_equal, dtype):
    """1- and 2-byte dtypes through the API on sizes past a work-group, through offset views."""
    a = raw((6, 520), dtype, seed=11)
    x = on_device(a, device)
    v, va = x[1:, 8:], a[1:, 8:]
    bits_equal(v.contiguous().numpy(), np.ascontiguousarray(va))
    bits_equal(x[:, 3:].contiguous().numpy(), np.ascontiguousarray(a[:, 3:]))
    bits_equal(x.flip(1).numpy(), np.flip(a, 1))
    bits_equal(v.flip(1).numpy(), np.flip(va, 1))
    bits_equal(x.flip(0).numpy(), np.flip(a, 0))
    bits_equal(x.roll(5, 1).numpy(), np.roll(a, 5, 1))
    bits_equal(x.roll(16, 1).numpy(), np.roll(a, 16, 1))
    bits_equal(x.roll(-2, 0).numpy(), np.roll(a, -2, 0))
    bits_equal(zyx.cat([x[1:, :8], v], 1).numpy(), np.concatenate([a[1:, :8], va], 1))
    bits_equal(zyx.cat([x[:, :3], x], 1).numpy(), np.concatenate([a[:, :3], a], 1))


# narrow vectors on every element size (register blocks of 16, 8, 4 and 2 lanes); streamed stores on the
# 2-, 4- and 8-byte sizes: on 1-byte elements they would build the narrow case's 16-lane block again, only
# streamed (the slowest build of this file, ~4 s)
_TRANSPOSE_TUNINGS = [(size, tun, name) for name, tun, sizes in
                      [("streamed", dict(stream_bytes=1), (2, 4, 8)), ("narrow", dict(vector_bytes=16), (1, 2, 4, 8)),
                       ("wide-streamed", dict(vector_bytes=64, stream_bytes=1), (2, 4, 8))] for size in sizes]


@pytest.mark.parametrize("itemsize, tun", [pytest.param(size, tun, id=f"{name}-{size}")
                                           for size, tun, name in _TRANSPOSE_TUNINGS])
def test_transposed_contiguize_full_tiles_poisoned(device, itemsize, tun):
    """The tiled transpose (CPUs) with whole tiles and edge tiles, butterfly register blocks of
    every vector width, aligned and unaligned output rows and a batch axis, into a poisoned
    buffer longer than the output: every element lands where NumPy puts it, nothing past the end."""
    from zyx.backend import transfer
    from zyx.ir.view import View

    bits = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[itemsize]
    rng = np.random.default_rng(itemsize)
    try:
        t = kernels.set_tunables(device, **tun) if tun else kernels.tunables(device)
        tv = 1 << (max(2, min(16, t.vector_bytes // itemsize)).bit_length() - 1)
        tile = max(2 * tv, kernels.TRANSPOSE_TILE_BYTES // itemsize)
        tile_l = max(2 * tv, kernels.TRANSPOSE_TILE_L_BYTES // itemsize)
        # rows not a multiple of the vector (stores test alignment), then a batch of aligned rows, then
        # rows shorter than a tile: a shorter tile that divides them, and one that leaves a partial tile
        for batch, rows, cols in ((1, tile_l + 5, 2 * tile + 3), (2, 2 * tile_l, tile + 1),
                                  (1, 3 * tile_l // 4, tile + 2), (2, tile_l // 2 + 7, 5)):
            a = rng.integers(0, np.iinfo(bits).max, (batch, rows, cols), dtype=bits, endpoint=True)
            want = np.ascontiguousarray(a.transpose(0, 2, 1))
            view = View((batch, cols, rows), (rows * cols, 1, cols), 0)  # the transposed view of a
            assert (kernels.transpose_axis(*kernels.fold_axes(view.shape, view.strides)[:2]) is not None
                    or settings.heuristics_kind(device) == "gpu")
            out = device.pool.allocate(a.nbytes + 64)
            transfer.write(out, np.full(a.nbytes + 64, 0xA5, dtype=np.uint8))
            kernels.contiguize(device, out, transfer.upload(device, a), view, itemsize)
            got = transfer.read(out, a.nbytes + 64)
            assert np.array_equal(got[: a.nbytes].view(bits).reshape(want.shape), want), (batch, rows, cols, tun)
            assert (got[a.nbytes:] == 0xA5).all(), "wrote past the end"
    finally:
        kernels.set_tunables(device)


def test_transposed_tile_length_divides_short_rows():
    """The transposed tiles' length: the preferred one when it divides the rows, else the longest multiple of
    the register block that does (down to a quarter), else the longest that fits (fewer partial tiles, which
    copy element by element)."""
    assert kernels.tile_length(6144, 512, 64) == 512
    assert kernels.tile_length(384, 512, 64) == 384
    assert kernels.tile_length(1280, 512, 64) == 320
    assert kernels.tile_length(300, 512, 64) == 256
    assert kernels.tile_length(517, 512, 64) == 512
    assert kernels.tile_length(40, 512, 64) == 64


# ---------------------------------------------------------------- roll of the last axis: two offset copies

# rows of one element, odd rows inside one work-group, an aligned row, whole work-groups plus a
# remainder (aligned and odd), many short rows
_ROLL_ROWS = [(3, 1), (5, 13), (4, 64), (2, 520), (300, 5), (2, 4099)]


@pytest.mark.parametrize("itemsize", [1, 2, 4, 8])
@pytest.mark.parametrize("rows,row", _ROLL_ROWS, ids=[f"{r}x{c}" for r, c in _ROLL_ROWS])
def test_roll_last_axis_poisoned(device, tuning, itemsize, rows, row):
    """Rolling the last axis runs as out[:, s:] = src[:, :L-s] and out[:, :s] = src[:, L-s:] over
    column ranges at global offsets (whole work-groups, then several rows of the rest per group,
    then the last rows): word-aligned and unaligned shifts, zero, negative and huge ones, into a
    poisoned buffer; every element lands where NumPy puts it, nothing past the end."""
    from zyx.backend import transfer

    a = _bits((rows, row), itemsize, seed=rows * row + itemsize)
    src = transfer.upload(device, a)
    for shift in (0, 1, 5, 8, -3, row - 1, -row, 7 * row + 3, -(10 ** 12) - 1):
        _run_poisoned(device, itemsize, np.roll(a, shift, 1),
                      lambda out, shift=shift: kernels.roll(device, out, src, rows, row, 1, shift, itemsize))


# the widest and the narrowest vectors (16 and 2 lanes); CI's step 3 (GPU heuristics) runs the GPU
# form on every element size and tuning through test_roll_last_axis_poisoned
@pytest.mark.parametrize("itemsize", [1, 8])
def test_roll_last_axis_gpu_shape_poisoned(device, monkeypatch, itemsize):
    """The GPU form of the last-axis roll (no words, vectors dividing the row and the shift),
    run on whatever device is present by reporting it as a GPU."""
    from dataclasses import replace

    from zyx.backend import transfer

    monkeypatch.setattr(device, "info", replace(device.info, kind="gpu"))
    for rows, row in ((3, 64), (2, 40), (5, 13), (1, 1000)):
        a = _bits((rows, row), itemsize, seed=rows + row)
        src = transfer.upload(device, a)
        for shift in (0, 4, 8, 16, 3, -8, 9 * row + 2):
            _run_poisoned(device, itemsize, np.roll(a, shift, 1),
                          lambda out, src=src, rows=rows, row=row, shift=shift:
                          kernels.roll(device, out, src, rows, row, 1, shift, itemsize))


# 1-byte elements (moved as words) and 8-byte ones (never widened); every element size runs the kernel
# in test_roll_last_axis_poisoned, and 2-byte ones the op in test_small_dtypes_api_views
@pytest.mark.parametrize("dtype", [zyx.uint8, zyx.float64], ids=lambda d: d.name)
def test_roll_last_axis_ranks_views_and_empties(device, bits_equal, dtype):
    """Through the op: the last axis of N-D tensors (rows = the leading axes flattened), of
    non-contiguous views, flattened rolls (dims=None), empty tensors, and the other axes as before."""
    a = raw((3, 4, 37), dtype, seed=11)
    x = on_device(a, device)
    for s in (0, 5, 8, -5, 37, 3 * 37 + 11, -(10 ** 12) - 1):
        bits_equal(x.roll(s, -1).numpy(), np.roll(a, s, -1))
        bits_equal(x.roll(s).numpy(), np.roll(a, s))
    bits_equal(x.roll((5, 2, -1), (2, 0, 1)).numpy(), np.roll(a, (5, 2, -1), (2, 0, 1)))
    bits_equal(x.roll(3, 1).numpy(), np.roll(a, 3, 1))
    for layout in ("strided", "transposed", "offset", "broadcast"):
        v, ref = make(layout, (6, 4, 70), dtype, device, seed=12)
        bits_equal(v.roll(5, -1).numpy(), np.roll(ref, 5, -1))
        bits_equal(v.roll(-13, 2).numpy(), np.roll(ref, -13, 2))
    for shape in ((0, 5), (4, 0), (2, 0, 3)):
        e = zyx.zeros(*shape, dtype=dtype, device=device)
        assert e.roll(3, -1).shape == shape and e.roll(2).shape == shape


def test_roll_last_axis_counts_one_kernel(device):
    """The two offset copies (and their remainder launches) count as one kernel."""
    x = on_device(raw((7, 300), zyx.uint8, seed=13), device)
    x.numpy()
    for s in (0, 5, 8):
        before = zyx.kernel_count()
        y = x.roll(s, 1).realize()  # a graph node: launched when realized
        assert zyx.kernel_count() - before == 1, s
        y.numpy()
