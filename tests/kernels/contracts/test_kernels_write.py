"""The in-place writers (write_slice, write_slice_rotating, write_slice_doff, x[...] = v) against NumPy.

Destinations hold a sentinel pattern so every byte outside the written box is checked to
keep its bits; sources are raw bit patterns of every dtype, contiguous or viewed.
"""
from __future__ import annotations

import numpy as np
import pytest

import zyx
from zyx.backend import errorflags

from contract_data import DTYPE_IDS, DTYPES, make, on_device, raw


def sentinel(shape: tuple[int, ...], dtype: zyx.DType) -> np.ndarray:
    """A recognizable destination: raw bits from a fixed seed."""
    return raw(shape, dtype, seed=999)


# ---------------------------------------------------------------- write_slice


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_write_slice_bits(device, bits_equal, dtype):
    d = sentinel((4, 6, 5), dtype)
    s = raw((2, 3, 5), dtype, seed=1)
    dest = on_device(d, device)
    assert zyx.write_slice(dest, on_device(s, device), [(1, 3), (2, 5), (0, 5)]) is dest
    d[1:3, 2:5, 0:5] = s
    bits_equal(dest.numpy(), d)
    s2 = raw((1, 6, 2), dtype, seed=2)
    zyx.write_slice(dest, on_device(s2, device), ((3, 4), (0, 6), (3, 5)))
    d[3:4, :, 3:5] = s2
    bits_equal(dest.numpy(), d)


@pytest.mark.parametrize("layout", ["strided", "transposed", "offset", "broadcast", "reversed"])
def test_write_slice_source_views(device, bits_equal, layout):
    src, ref = make(layout, (3, 4), zyx.float64, device, seed=3)
    d = sentinel((5, 6), zyx.float64)
    dest = on_device(d, device)
    zyx.write_slice(dest, src, [(2, 5), (1, 5)])
    d[2:5, 1:5] = ref
    bits_equal(dest.numpy(), d)


def test_write_slice_into_views(device, bits_equal):
    """A non-contiguous dest: the write lands in its storage, through its strides."""
    d = sentinel((6, 8), zyx.int32)
    base = on_device(d, device)
    view = base[1:, ::2].T  # shape (4, 5), strides (2, 8), offset 8
    s = raw((2, 3), zyx.int32, seed=4)
    out = zyx.write_slice(view, on_device(s, device), [(1, 3), (2, 5)])
    assert out is view
    d[1:, ::2].T[1:3, 2:5] = s
    bits_equal(base.numpy(), d)
    rev = base[::-1, ::-1]  # negative strides
    s2 = raw((2, 2), zyx.int32, seed=5)
    zyx.write_slice(rev, on_device(s2, device), [(0, 2), (3, 5)])
    d[::-1, ::-1][0:2, 3:5] = s2
    bits_equal(base.numpy(), d)


def test_write_slice_rank8_and_empty(device, bits_equal):
    shape = (2, 1, 3, 2, 1, 2, 3, 2)
    d = sentinel(shape, zyx.uint16)
    dest = on_device(d, device)
    s = raw((1, 1, 2, 2, 1, 1, 3, 1), zyx.uint16, seed=6)
    ranges = [(1, 2), (0, 1), (1, 3), (0, 2), (0, 1), (1, 2), (0, 3), (1, 2)]
    zyx.write_slice(dest, on_device(s, device), ranges)
    d[tuple(slice(a, b) for a, b in ranges)] = s
    bits_equal(dest.numpy(), d)
    before = zyx.kernel_count()
    zyx.write_slice(dest, zyx.zeros(0, 1, 3, 2, 1, 2, 3, 2, dtype=zyx.uint16, device=device),
                    [(1, 1)] + [(0, n) for n in shape[1:]])
    assert zyx.kernel_count() == before  # empty box: no launch
    bits_equal(dest.numpy(), d)


def test_write_slice_same_buffer_source(device, bits_equal):
    """Overlapping source and dest: the old values are read, as if copied first."""
    a = np.arange(10, dtype=np.float32)
    x = on_device(a, device)
    zyx.write_slice(x, x[:-1], [(1, 10)])
    a[1:] = a[:-1].copy()
    bits_equal(x.numpy(), a)


def test_write_slice_reused_position_shares_kernel(device):
    """The box origin is a kernel argument: moving the box builds nothing new."""
    from zyx.backend.program import BuildStats

    dest = zyx.zeros(8, 4, device=device)
    src = zyx.ones(1, 4, device=device)
    zyx.write_slice(dest, src, [(0, 1), (0, 4)])
    builds = BuildStats.source_builds + BuildStats.binary_loads
    for row in range(1, 8):
        zyx.write_slice(dest, src, [(row, row + 1), (0, 4)])
    assert BuildStats.source_builds + BuildStats.binary_loads == builds
    assert dest.numpy().sum() == 32


# ---------------------------------------------------------------- write_slice_rotating


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_write_slice_rotating_bits(device, bits_equal, dtype):
    d = sentinel((7, 3, 4), dtype)
    dest = on_device(d, device)
    for position in (5, 13, -2, 0, -(2 ** 70) + 3):  # wraps, reduces, Python modulo for negatives
        s = raw((4, 3, 4), dtype, seed=abs(position) % 1000)
        zyx.write_slice_rotating(dest, on_device(s, device), 0, position)
        for r in range(4):
            d[(position % 7 + r) % 7] = s[r]
        bits_equal(dest.numpy(), d)


@pytest.mark.parametrize("pos_dtype", [zyx.int32, zyx.uint32])
def test_write_slice_rotating_device_position(device, bits_equal, pos_dtype):
    d = sentinel((2, 9, 3), zyx.float32)
    dest = on_device(d, device)
    for position, modulus in [(7, None), (4, 5), (2 ** 31 - 1 if pos_dtype is zyx.int32 else 2 ** 32 - 1, 6)]:
        m = 9 if modulus is None else modulus
        pos = zyx.tensor([position], dtype=pos_dtype, device=device)
        s = raw((2, 3, 3), zyx.float32, seed=position % 97)
        zyx.write_slice_rotating(dest, on_device(s, device), 1, pos, modulus=modulus)
        for r in range(3):
            d[:, (position % m + r) % m] = s[:, r]
        bits_equal(dest.numpy(), d)
    neg = zyx.tensor([-1], dtype=zyx.int32, device=device)
    if pos_dtype is zyx.int32:
        s = raw((2, 2, 3), zyx.float32, seed=7)
        zyx.write_slice_rotating(dest, on_device(s, device), 1, neg)
        d[:, 8], d[:, 0] = s[:, 0], s[:, 1]
        bits_equal(dest.numpy(), d)


def test_write_slice_rotating_position_read_at_run_time(device, bits_equal):
    """The position tensor is read when the kernel runs: updates between launches are seen."""
    d = np.zeros((4, 2), np.float32)
    dest = on_device(d, device)
    pos = zyx.tensor([0], dtype=zyx.int32, device=device)
    for step in range(6):
        zyx.write_slice_rotating(dest, zyx.full((1, 2), float(step), device=device), 0, pos)
        pos[0] = step + 1  # a device-side update, no host read-back of dest
        d[step % 4] = step
    bits_equal(dest.numpy(), d)


def test_write_slice_rotating_last_axis_and_views(device, bits_equal):
    d = sentinel((3, 10), zyx.bfloat16)
    dest = on_device(d, device)
    src, ref = make("transposed", (3, 4), zyx.bfloat16, device, seed=8)
    zyx.write_slice_rotating(dest, src, -1, 8)
    for r in range(4):
        d[:, (8 + r) % 10] = ref[:, r]
    bits_equal(dest.numpy(), d)
    view = dest[:, 1::2]  # non-contiguous dest: ring over its 5 columns
    s = raw((3, 2), zyx.bfloat16, seed=9)
    zyx.write_slice_rotating(view, on_device(s, device), 1, 4)
    d[:, 1::2][:, 4], d[:, 1::2][:, 0] = s[:, 0], s[:, 1]
    bits_equal(dest.numpy(), d)


# ---------------------------------------------------------------- write_slice_doff


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_write_slice_doff_bits(device, bits_equal, dtype):
    d = sentinel((6, 5), dtype)
    dest = on_device(d, device)
    for offset in (0, 2, 4):
        s = raw((2, 5), dtype, seed=offset)
        zyx.write_slice_doff(dest, on_device(s, device), 0, zyx.tensor([offset], device=device))
        d[offset:offset + 2] = s
        bits_equal(dest.numpy(), d)


def test_write_slice_doff_axis_ranges_views(device, bits_equal):
    d = sentinel((4, 9, 3), zyx.float16)
    dest = on_device(d, device)
    s = raw((2, 3, 3), zyx.float16, seed=10)
    off = zyx.tensor(5, dtype=zyx.int64, device=device)  # rank 0 is fine: one element
    zyx.write_slice_doff(dest, on_device(s, device), 1, off, ranges=[(1, 3), (0, 3), (0, 3)])
    d[1:3, 5:8] = s
    bits_equal(dest.numpy(), d)
    offsets = zyx.tensor([0, 3, 6], dtype=zyx.int64, device=device)
    src, ref = make("reversed", (4, 2, 3), zyx.float16, device, seed=11)
    zyx.write_slice_doff(dest, src, 1, offsets[2])  # offset view into a longer tensor
    d[:, 6:8] = ref
    bits_equal(dest.numpy(), d)


@pytest.mark.parametrize("offset", [-1, 5, 2 ** 62])
def test_write_slice_doff_out_of_range_raises_at_read(device, bits_equal, offset):
    d = sentinel((6, 4), zyx.float32)
    dest = on_device(d, device)
    s = zyx.ones(2, 4, device=device)
    zyx.write_slice_doff(dest, s, 0, zyx.tensor([offset], device=device))  # no host read-back here
    assert errorflags.pending(device) >= 1
    with pytest.raises(zyx.ContractError, match=rf"write_slice_doff: offset = {offset} .*out of range"):
        dest.numpy()
    bits_equal(dest.numpy(), d)  # nothing was written; the error is reported once


def test_write_slice_doff_error_at_synchronize(device):
    dest = zyx.zeros(3, 2, device=device)
    zyx.write_slice_doff(dest, zyx.ones(2, 2, device=device), 0, zyx.tensor([2], device=device))
    with pytest.raises(zyx.ContractError, match="offset = 2"):
        zyx.synchronize()
    assert dest.numpy().sum() == 0


# ---------------------------------------------------------------- indexed assignment


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_setitem_tensor_bits(device, bits_equal, dtype):
    d = sentinel((5, 6), dtype)
    x = on_device(d, device)
    s = raw((2, 6), dtype, seed=12)
    x[1:3] = on_device(s, device)
    d[1:3] = s
    bits_equal(x.numpy(), d)
    col = raw((5,), dtype, seed=13)
    x[:, 4] = on_device(col, device)
    d[:, 4] = col
    bits_equal(x.numpy(), d)


def test_setitem_cases(device, values_equal):
    a = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    x = on_device(a, device)
    before = x[1]  # a view taken before the writes sees them
    cases = [
        ((1, slice(None), 2), 7.0),                 # scalar broadcast
        ((slice(None), slice(None, None, 2)), np.float32(-1)),
        ((Ellipsis, slice(4, None, -2)), np.array([10.0, 20.0, 30.0], np.float32)),  # negative step
        ((None, 2, 3), np.array([[1, 2, 3, 4, 5]], np.float32)),
        ((0, 0, 0), 99.0),                          # rank-0 box
        ((slice(2, 2),), 5.0),                      # empty box
        ((slice(None, None, -1), 1), np.arange(5, dtype=np.float32)),
    ]
    for index, value in cases:
        x[index] = on_device(value, device) if isinstance(value, np.ndarray) else value
        a[index] = value
        values_equal(x.numpy(), a)
    values_equal(before.numpy(), a[1])


def test_setitem_converts_and_aliases(device, values_equal):
    x = zyx.zeros(2, 3, dtype=zyx.int16, device=device)
    x[0] = zyx.tensor([1.9, -2.9, 3.0], device=device)  # cast to the dest dtype (truncation)
    x[1, 1:] = True
    values_equal(x.numpy(), np.array([[1, -2, 3], [0, 1, 1]], np.int16))
    y = zyx.tensor(np.arange(6, dtype=np.float32), device=device)
    y[1:] = y[:-1]  # overlapping source and dest
    values_equal(y.numpy(), np.array([0, 0, 1, 2, 3, 4], np.float32))
    base = zyx.zeros(4, 4, device=device)
    t = base.T  # writing through a transposed view lands in base's storage
    t[0] = zyx.tensor([1.0, 2.0, 3.0, 4.0], device=device)
    values_equal(base.numpy()[:, 0], np.array([1, 2, 3, 4], np.float32))


def test_setitem_errors_leave_dest_untouched(device, values_equal):
    x = zyx.tensor(np.arange(6, dtype=np.int8).reshape(2, 3), device=device)
    with pytest.raises(zyx.ShapeError):
        x[0] = zyx.ones(4, dtype=zyx.int8, device=device)
    with pytest.raises(IndexError):
        x[5] = 1
    with pytest.raises(zyx.DTypeError):
        x[0, 0] = 300  # does not fit int8 (PyTorch refuses it too)
    b = zyx.zeros(1, 3, device=device).expand(2, 3)
    with pytest.raises(zyx.ContractError, match="broadcast"):
        b[:, 0] = 1.0  # two elements of the box share one memory location
    b[0] = 2.0  # one row of a broadcast view is an ordinary view: allowed, as in PyTorch
    assert b.tolist() == [[2.0] * 3] * 2
    values_equal(x.numpy(), np.arange(6, dtype=np.int8).reshape(2, 3))


def test_setitem_matches_torch(device, torch):
    a = np.zeros((4, 5), np.float32)
    x = on_device(a, device)
    t = torch.from_numpy(a.copy())
    for index, value in [((slice(1, 3), slice(None, None, 2)), 3.0), ((Ellipsis, -1), 4.0), ((0,), 1.0)]:
        x[index] = value
        t[index] = value
    assert (x.numpy() == t.numpy()).all()


def test_writes_order_with_lazy_work(device, values_equal):
    """Pending lazy readers of dest see the old values; lazy sources and offsets are realized first."""
    x = zyx.zeros(3, device=device)
    y = x + 1  # pending: reads x when realized
    x[0] = 5.0
    values_equal(y.numpy(), np.ones(3, np.float32))
    values_equal(x.numpy(), np.array([5, 0, 0], np.float32))
    d = zyx.zeros(4, 2, device=device)
    zyx.write_slice_doff(d, zyx.ones(2, 2, device=device) * 3, 0, zyx.tensor([1], device=device) + 1)
    values_equal(d.numpy(), np.array([[0, 0], [0, 0], [3, 3], [3, 3]], np.float32))


# ---------------------------------------------------------------- widened words and exact grids


@pytest.mark.parametrize("dtype", [zyx.uint8, zyx.float16, zyx.bool, zyx.float32], ids=lambda d: d.name)
@pytest.mark.parametrize("local", [None, 7])
def test_writers_words_and_exact_grid(device, bits_equal, dtype, local):
    """Boxes whose column offset, width and row stride are multiples of 2, 4 or 8 elements
    are written as words; the others element by element over exact grids (2-D past 64
    columns, with a remainder work-group per row). Every byte outside the box keeps its bits."""
    from zyx.kernels import contracts as kernels

    try:
        if local:
            kernels.set_tunables(device, local_size=local)
        d = sentinel((7, 336), dtype)
        dest = on_device(d, device)
        for (r0, r1), (c0, c1) in [((1, 4), (8, 264)), ((2, 6), (3, 300)), ((0, 7), (16, 24)), ((3, 5), (5, 18)),
                                   ((0, 7), (0, 336))]:
            s = raw((r1 - r0, c1 - c0), dtype, seed=r0 + c0)
            zyx.write_slice(dest, on_device(s, device), [(r0, r1), (c0, c1)])
            d[r0:r1, c0:c1] = s
            bits_equal(dest.numpy(), d)
        view = dest[:, 8:]  # an offset view: its offset joins the word alignment
        s = raw((2, 328), dtype, seed=3)
        zyx.write_slice_rotating(view, on_device(s, device), 0, 6)  # wraps rows 6, 0
        d[6, 8:], d[0, 8:] = s[0], s[1]
        bits_equal(dest.numpy(), d)
        s = raw((7, 260), dtype, seed=4)
        zyx.write_slice_rotating(dest, on_device(s, device), 1, 330)  # ring along the columns
        cols = (330 + np.arange(260)) % 336
        d[:, cols] = s
        bits_equal(dest.numpy(), d)
        for off in (2, 0, 5):
            s = raw((2, 333), dtype, seed=off)
            zyx.write_slice_doff(dest[:, 3:], s_t := on_device(s, device), 0, zyx.tensor([off], device=device))
            d[off:off + 2, 3:] = s
            bits_equal(dest.numpy(), d)
            del s_t
        s = raw((3, 40), dtype, seed=7)
        zyx.write_slice_doff(dest, on_device(s, device), 0, zyx.tensor([4], device=device),
                             ranges=[(0, 3), (16, 56)])
        d[4:7, 16:56] = s
        bits_equal(dest.numpy(), d)
    finally:
        kernels.set_tunables(device)
