"""Matmul register tiles (``upcast`` on the row and column axes, ``vec`` on the columns).

A tile that does not divide its axis computes its copies past the end at the axis's last
coordinate (clamped: no test inside the reduce loop) and masks only their stores; an axis
whose last vector is partial guards its loads lane by lane. Each case runs on the device
into a poisoned output and is compared with NumPy: odd sizes, reduce tails, batches.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

import zyx
from zyx import dtype as dt
from zyx import settings
from zyx.codegen.ir_source import kernel_source
from zyx.ir import expr
from zyx.ir import symbolic as sym
from zyx.ir.kernel import Kernel, Opts, out_var, red_var
from zyx.opt.heuristics import default_opts

from ir_run import run_kernel as _run


def _matmul(batch: int, n: int, m: int, kk: int, d=dt.float32) -> Kernel:
    """``out[b, i, j] = sum_r a[b, i, r] * y[b, r, j]`` (no batch axis when ``batch`` is 0)."""
    i, j, r = out_var(1, n), out_var(2, m), red_var(0, kk)
    bv = out_var(0, batch) if batch else sym.ZERO
    a = expr.Load(1, d, sym.add(sym.mul(bv, n * kk), sym.mul(i, kk), r))
    y = expr.Load(2, d, sym.add(sym.mul(bv, kk * m), sym.mul(r, m), j))
    return Kernel((max(batch, 1), n, m), (kk,), (d, d, d), expr.Reduce("sum", expr.Alu("mul", (a, y), d), d))


def _loop_body(src: str) -> str:
    return src[src.index("for (int r0"):src.index("\n    }\n", src.index("for (int r0"))]


@pytest.mark.parametrize("batch, n, m, kk, up, unroll", [
    (0, 13, 40, 9, (6, 2), 2),    # a last row tile with 1 of 6 rows, a last column tile with 1 of 2 vectors
    (0, 7, 24, 33, (6, 2), 2),    # 6 does not divide 7; a scalar reduce tail
    (0, 5, 16, 16, (6, 2), 2),    # the tile is cut to the axis
    (3, 10, 16, 12, (6, 2), 4),   # batched
    (2, 25, 17, 31, (6, 2), 2),   # a partial last vector: lane guards on the columns, clamped rows
    (0, 11, 56, 20, (7, 3), 1),
    (0, 20, 48, 70, (8, 2), 2),   # the default CPU tile, a last row tile with 4 of 8 rows
])
@pytest.mark.needs_device
def test_clamped_tiles_match_numpy(batch, n, m, kk, up, unroll):
    k = _matmul(batch, n, m, kk)
    rng = np.random.default_rng(n * m + kk)
    x = rng.standard_normal((max(batch, 1), n, kk)).astype(np.float32)
    y = rng.standard_normal((max(batch, 1), kk, m)).astype(np.float32)
    opts = Opts(local=1, upcast=(1, *up), unroll=unroll, vec=8, vec_axis=2)
    got = _run(k, opts, x, y)
    np.testing.assert_allclose(got, x @ y, rtol=1e-5, atol=1e-5)
    body = _loop_body(kernel_source(k, opts))
    if m % 8 == 0:  # whole vectors: nothing in the reduce loop is tested
        assert "?" not in body and "if (" not in body
    assert np.array_equal(_run(k, opts, x, y).view(np.uint32), got.view(np.uint32))  # same bits every run


def test_clamped_copy_reads_the_last_row_and_stores_behind_one_test():
    k = _matmul(0, 13, 32, 8)
    src = kernel_source(k, Opts(local=1, upcast=(1, 6, 2), unroll=2, vec=8, vec_axis=2))
    # rows 12..17 in the last tile: copies 1..5 read row 12 there (a whole-tile test, not one per load)
    assert re.search(r"\(g1 < 2\)\*\d+", _loop_body(src))
    assert "if ((g1 < 2))" in src and ".s7;" not in src  # whole-vector stores only


@pytest.mark.parametrize("shape_a, shape_b", [
    ((37, 45), (45, 50)), ((3, 13, 20), (3, 20, 24)), ((6, 8), (8, 16)), ((100, 3), (3, 1000)),
])
@pytest.mark.needs_device
def test_default_matmul_through_the_api(shape_a, shape_b):
    rng = np.random.default_rng(len(shape_a) + shape_b[-1])
    a = rng.standard_normal(shape_a).astype(np.float32)
    b = rng.standard_normal(shape_b).astype(np.float32)
    got = (zyx.tensor(a) @ zyx.tensor(b)).numpy()
    np.testing.assert_allclose(got, a @ b, rtol=1e-5, atol=1e-5)


def test_cpu_default_is_the_8x2_tile(monkeypatch):
    from types import SimpleNamespace

    monkeypatch.setattr(settings, "HEURISTICS", "auto")  # by the device's own kind

    cpu = SimpleNamespace(kind="cpu", preferred_vector_width={"float": 8, "double": 4})
    o = default_opts(_matmul(0, 1024, 1024, 1024), 256, cpu)
    assert o.upcast == (1, 8, 2) and o.vec == 8 and o.vec_axis == 2 and o.unroll == 2 and o.local == 1
    o = default_opts(_matmul(0, 1001, 1000, 1000), 256, cpu)  # 125 vectors: the last column tile is clamped,
    assert o.upcast == (1, 8, 2) and o.vec == 8  # and so is the last row tile (1 of 8 rows)
    o = default_opts(_matmul(0, 12, 64, 64), 256, cpu)  # too few rows for 8: a dividing 4
    assert o.upcast == (1, 4, 2)
