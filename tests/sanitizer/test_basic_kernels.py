"""Random (rand/randn/randint), fill, the strided copy behind reading a view, and casts between
dtypes (16- and 8-bit float emulation included) under Oclgrind, compared with NumPy and, for the
random bits, with the same draw on the default device (itself checked against a host Philox in
tests/frontend/test_random.py)."""
from __future__ import annotations

import numpy as np
import pytest

import zyx

RANDOM = [("rand", zyx.float32), ("rand", zyx.float64), ("rand", zyx.bfloat16), ("rand", zyx.float16),
          ("rand", zyx.float8_e4m3), ("randn", zyx.float32), ("randn", zyx.bfloat16),
          ("randint", zyx.int64), ("randint", zyx.int32), ("randint", zyx.uint8)]


def _draw(fn: str, dtype, shape, dev):
    if fn == "randint":
        return zyx.randint(-3 if dtype.name != "uint8" else 0, 100, shape, dtype=dtype, device=dev)
    return getattr(zyx, fn)(*shape, dtype=dtype, device=dev)


@pytest.mark.needs_device  # the reference draw runs on the default device
@pytest.mark.parametrize("fn, dtype", RANDOM, ids=[f"{f}-{d.name}" for f, d in RANDOM])
def test_random(sim, needs, fn, dtype):
    needs(dtype)
    shape = (3, 37)  # 111 values: not a whole number of Philox blocks or work-groups
    out = []
    for dev in (sim, zyx.default_device()):
        zyx.manual_seed(1234)
        _draw(fn, dtype, (5,), dev)  # start mid-block
        out.append(_draw(fn, dtype, shape, dev).numpy())
    got, ref = out
    np.testing.assert_array_equal(got.view(f"u{got.dtype.itemsize}"), ref.view(f"u{ref.dtype.itemsize}"))
    v = got.astype(np.float64)
    if fn == "rand":
        assert (v >= 0).all() and (v < 1).all() and 0.2 < v.mean() < 0.8
    elif fn == "randn":
        assert -1 < v.mean() < 1 and 0.3 < v.std() < 3
    else:
        assert v.min() >= (0 if dtype.name == "uint8" else -3) and v.max() < 100


@pytest.mark.parametrize("dtype", [zyx.uint8, zyx.int16, zyx.float32, zyx.float64], ids=lambda d: d.name)
def test_fill_and_strided_reads(sim, needs, dtype):
    needs(dtype)
    f = zyx.full((3, 37), 7, dtype=dtype, device=sim)
    np.testing.assert_array_equal(f.numpy(), np.full((3, 37), 7, dtype=dtype.numpy))
    a = (np.arange(5 * 9 * 3) % 101).astype(dtype.numpy).reshape(5, 9, 3)
    x = zyx.from_numpy(a, device=sim)
    for view, want in ((x.permute(2, 0, 1), a.transpose(2, 0, 1)), (x[1:4, ::2, 1:], a[1:4, ::2, 1:]),
                       (x[:1].expand(4, 9, 3), np.broadcast_to(a[:1], (4, 9, 3)))):
        np.testing.assert_array_equal(view.numpy(), want)  # a strided view read back through a graph copy


CASTS = [(zyx.float32, zyx.bfloat16), (zyx.bfloat16, zyx.float16), (zyx.float16, zyx.float8_e4m3),
         (zyx.float8_e5m2, zyx.float32), (zyx.float64, zyx.float8_e5m2), (zyx.float32, zyx.int8),
         (zyx.int64, zyx.bfloat16), (zyx.uint8, zyx.float16), (zyx.float32, zyx.bool), (zyx.bool, zyx.float64)]


@pytest.mark.parametrize("src, dst", CASTS, ids=[f"{s.name}-{d.name}" for s, d in CASTS])
def test_casts_of_views(sim, needs, src, dst):
    needs(src, dst)
    rng = np.random.default_rng(3)
    base = (rng.random((7, 11)) * 60 - 30).astype(np.float32)
    base[0, :4] = [np.nan, np.inf, -np.inf, -0.0]
    a = base.astype(src.numpy) if not src.is_int else np.nan_to_num(base, posinf=9, neginf=-9).astype(src.numpy)
    x = zyx.from_numpy(a, device=sim)
    got = x.T[1:, ::2].cast(dst).numpy()
    view = a.T[1:, ::2]
    if dst.is_int and src.is_float:
        keep = np.isfinite(view.astype(np.float64))
        np.testing.assert_array_equal(got[keep], view.astype(np.float64)[keep].astype(dst.numpy))
        return
    want = view.astype(np.float32).astype(dst.numpy) if src.name not in ("float64", "int64", "bool") \
        else view.astype(dst.numpy)
    np.testing.assert_array_equal(np.isnan(got.astype(np.float64)), np.isnan(want.astype(np.float64)))
    ok = ~np.isnan(want.astype(np.float64))
    np.testing.assert_array_equal(got.astype(np.float64)[ok], want.astype(np.float64)[ok])
