"""The byte kernels with streamed (non-temporal) stores forced on, against NumPy, bit for bit.

By default only outputs of ``stream_bytes`` (MiBs on CPUs) or more are streamed; here
``stream_bytes=1`` makes every vectorized store take that path on small, odd shapes:
destinations not aligned to the vector (write_slice at odd positions, concat at odd
columns) fall back to plain stores, tails stay scalar, and work-items own consecutive
vectors (``chunked`` loop) whatever ``per_item`` is.
"""
from __future__ import annotations

import numpy as np
import pytest

import zyx
from zyx import settings
from zyx.kernels import contracts as kernels

from contract_data import make, on_device, raw

DTYPES = (zyx.uint8, zyx.float16, zyx.float32, zyx.float64)


@pytest.fixture
def streaming(request, device):
    """``device`` with every vectorized store streamed, ``per_item`` = request.param (indirect)."""
    kernels.set_tunables(device, stream_bytes=1, per_item=request.param)
    try:
        yield device
    finally:
        kernels.set_tunables(device)


def _per_item(cases, ones):
    """(case, per_item) parameters: 3 vectors per work-item (the chunked loop over several) on every
    case, 1 on the cases in ``ones`` (the loop of one: a narrower and a wider element, not each)."""
    return [pytest.param(case, k, id=f"per_item{k}-{getattr(case, 'name', case)}")
            for k in (1, 3) for case in cases if k == 3 or case in ones]


def test_stream_decision(device):
    tun = kernels.Tunables(stream_bytes=1024)
    assert kernels.streams(tun, 1024, 8) and not kernels.streams(tun, 1023, 8)
    assert not kernels.streams(tun, 1 << 30, 1)  # scalar stores never stream
    if settings.heuristics_kind(device) == "gpu":
        assert kernels.default_tunables(device).stream_bytes == kernels.NEVER


@pytest.mark.parametrize("dtype, streaming", _per_item(DTYPES, (zyx.uint8, zyx.float64)), indirect=["streaming"])
def test_streamed_copies(streaming, bits_equal, dtype):
    device = streaming
    a = raw((5, 96), dtype, seed=1)
    x = on_device(a, device)
    bits_equal(x.flip(1).numpy(), np.flip(a, 1))
    bits_equal(x.flip(0).numpy(), np.flip(a, 0))
    bits_equal(x.roll(2, 0).numpy(), np.roll(a, 2, 0))
    bits_equal(x[1:, 32:].contiguous().numpy(), np.ascontiguousarray(a[1:, 32:]))
    b = raw((5, 37), dtype, seed=2)  # odd column: the second part's rows start unaligned
    bits_equal(zyx.cat([x, on_device(b, device), x], 1).numpy(), np.concatenate([a, b, a], 1))
    bits_equal(x.tril().numpy(), np.tril(a))
    bits_equal(x.triu(3).numpy(), np.triu(a, 3))
    m = np.random.default_rng(3).random(a.shape) < 0.3
    bits_equal(x.masked_fill(on_device(m, device), 1).numpy(), np.where(m, np.array(1).astype(a.dtype), a))
    n = 16 * 11 + 5  # vector tail done element by element
    f = raw((n,), dtype, seed=4)
    mf = np.arange(n) % 3 == 0
    bits_equal(on_device(f, device).masked_fill(on_device(mf, device), 0).numpy(),
               np.where(mf, np.array(0).astype(f.dtype), f))


@pytest.mark.parametrize("dtype, streaming", _per_item(DTYPES, (zyx.float16, zyx.float32)), indirect=["streaming"])
def test_streamed_writes(streaming, bits_equal, dtype):
    device = streaming
    d = raw((9, 3, 64), dtype, seed=5)
    dest = on_device(d, device)
    for row, col in ((2, 0), (5, 1), (0, 7)):  # col > 0: rows start off the vector alignment
        s = raw((3, 3, 32), dtype, seed=row + col)
        dest[row:row + 3, :, col:col + 32] = on_device(s, device)
        d[row:row + 3, :, col:col + 32] = s
        bits_equal(dest.numpy(), d)
    s = raw((4, 3, 64), dtype, seed=6)
    zyx.write_slice_rotating(dest, on_device(s, device), 0, 7)
    for r in range(4):
        d[(7 + r) % 9] = s[r]
    bits_equal(dest.numpy(), d)
    zyx.write_slice_doff(dest, on_device(s, device), 0, zyx.tensor([3], device=device))
    d[3:7] = s
    bits_equal(dest.numpy(), d)
    view = dest[:, 1, 1:]  # dest rows of 63 at an odd element offset
    v = raw((9, 63), dtype, seed=7)
    zyx.write_slice_doff(view, on_device(v[2:5], device), 0, zyx.tensor([2], device=device))
    d[2:5, 1, 1:] = v[2:5]
    bits_equal(dest.numpy(), d)


@pytest.mark.parametrize("layout, streaming", _per_item(["transposed", "reversed", "strided"], ("transposed",)),
                         indirect=["streaming"])
def test_streamed_contiguize_views(streaming, bits_equal, layout):
    x, ref = make(layout, (6, 40, 48), zyx.float32, streaming, seed=8)
    bits_equal(x.contiguous().numpy(), np.ascontiguousarray(ref))
