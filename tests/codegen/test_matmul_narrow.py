"""The CPU matmul tile for narrow outputs (3-4 vectors of columns: N = 48..64 float32 at 16 lanes): one
tile of ``MM_ROWS_WIDE`` rows spans every column. Checked as a heuristic choice (on a described device,
no OpenCL needed), run on the device with odd sizes (a clamped last row tile, a partial last vector, a
reduce tail) against NumPy, through the API with transposed and sliced operands, and in the tuner's
search space (the tile parameters are tried first on a matmul)."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import zyx
from zyx import dtype as dt
from zyx import settings
from zyx.ir import expr
from zyx.ir import symbolic as sym
from zyx.ir.kernel import Kernel, Opts, out_var, red_var
from zyx.opt import ir_tuning
from zyx.opt.heuristics import MM_ROWS_WIDE, default_opts

from ir_run import run_kernel as _run

AVX512 = SimpleNamespace(kind="cpu", preferred_vector_width={"float": 16, "double": 8})
AVX2 = SimpleNamespace(kind="cpu", preferred_vector_width={"float": 8, "double": 4})


def _matmul(n: int, m: int, kk: int, d=dt.float32) -> Kernel:
    """``out[i, j, 0] = sum_r a[i, r] * y[r, j]``: the kernel ``a @ y`` builds (a keepdim axis last)."""
    i, j, r = out_var(0, n), out_var(1, m), red_var(0, kk)
    a = expr.Load(1, d, sym.add(sym.mul(i, kk), r))
    y = expr.Load(2, d, sym.add(sym.mul(r, m), j))
    return Kernel((n, m, 1), (kk,), (d, d, d), expr.Reduce("sum", expr.Alu("mul", (a, y), d), d))


@pytest.fixture
def by_kind(monkeypatch):
    monkeypatch.setattr(settings, "HEURISTICS", "auto")  # the described device's own kind


@pytest.mark.parametrize("n, m, kk, up", [
    (25088, 64, 576, (MM_ROWS_WIDE, 4, 1)),    # im2col forward: every column in one tile
    (576, 64, 25088, (MM_ROWS_WIDE, 4, 1)),    # the weight gradient's long reduce
    (100, 48, 33, (MM_ROWS_WIDE, 3, 1)),       # three vectors of columns
    (1024, 1024, 1024, (8, 2, 1)),             # wide outputs keep the 8x2 tile
    (576, 32, 4096, (8, 2, 1)),                # two vectors: the 8x2 tile already spans them
    (8, 64, 4096, (4, 2, 1)),                  # too few rows for a 6-row tile
])
def test_narrow_outputs_get_a_tile_over_every_column(by_kind, n, m, kk, up):
    o = default_opts(_matmul(n, m, kk), 256, AVX512)
    assert o.upcast == up and o.vec == 16 and o.vec_axis == 1 and o.local == 1 and o.split == 1


def test_narrow_tile_needs_sixteen_lanes(by_kind):
    # with 8 lanes, 64 columns are 8 vectors: 6 x 8 accumulators would not fit AVX2's 16 registers
    o = default_opts(_matmul(25088, 64, 576), 256, AVX2)
    assert o.upcast == (8, 2, 1) and o.vec == 8


@pytest.mark.parametrize("n, m, kk", [
    (2509, 64, 57),   # 2509 = 6 * 418 + 1: a last row tile with one real row; an odd reduce (scalar tail)
    (37, 48, 130),    # three vectors; 37 rows: a last tile of 1 of 6
    (13, 63, 20),     # 63 columns: a partial last vector, guarded lane by lane
])
@pytest.mark.needs_device
def test_narrow_tile_matches_numpy(n, m, kk):
    k = _matmul(n, m, kk)
    rng = np.random.default_rng(n + m + kk)
    a = rng.standard_normal((n, kk)).astype(np.float32)
    y = rng.standard_normal((kk, m)).astype(np.float32)
    opts = Opts(local=1, upcast=(MM_ROWS_WIDE, 4, 1), unroll=2, vec=16, vec_axis=1)
    got = _run(k, opts, a, y)[..., 0]
    np.testing.assert_allclose(got, a @ y, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("shape, left_t, right_t", [
    ((2509, 57, 63), False, False),
    ((2509, 57, 64), True, False),    # a.T @ b: the left operand a transposed view
    ((61, 300, 64), False, True),     # a @ w.T (F.linear's layout)
])
@pytest.mark.needs_device
def test_narrow_products_through_the_api(shape, left_t, right_t):
    n, kk, m = shape
    rng = np.random.default_rng(n * kk + m)
    a = rng.standard_normal((kk, n) if left_t else (n, kk)).astype(np.float32)
    b = rng.standard_normal((m, kk) if right_t else (kk, m)).astype(np.float32)
    za, zb = zyx.tensor(a), zyx.tensor(b)
    if left_t:
        za, a = za.T, a.T
    if right_t:
        zb, b = zb.T, b.T
    np.testing.assert_allclose((za @ zb).numpy(), a @ b, rtol=1e-4, atol=1e-3)


@pytest.mark.needs_device
def test_sliced_left_operand_with_narrow_output():
    rng = np.random.default_rng(5)
    a = rng.standard_normal((300, 90)).astype(np.float32)
    b = rng.standard_normal((45, 64)).astype(np.float32)
    got = (zyx.tensor(a)[::2, 1::2] @ zyx.tensor(b)).numpy()  # rows and columns strided by 2
    np.testing.assert_allclose(got, a[::2, 1::2] @ b, rtol=1e-4, atol=1e-3)


def test_tuner_tries_matmul_tiles_first():
    names = [p.name for p in ir_tuning.opts_space(_matmul(576, 64, 25088), 256).params]
    assert names[:3] == ["up_last", "up_row", "unroll"] and {"local", "vec", "split"} <= set(names)
    plain = Kernel((64, 48), (), (dt.float32, dt.float32),
                   expr.Load(1, dt.float32, sym.add(sym.mul(out_var(0, 64), 48), out_var(1, 48))))
    assert [p.name for p in ir_tuning.opts_space(plain, 256).params][0] == "local"  # other kernels unchanged


@pytest.mark.parametrize("m, copies", [(8, 1), (32, 0), (64, 0), (65, 1)])
@pytest.mark.needs_device
def test_transposed_left_operand_is_copied_unless_narrow(monkeypatch, m, copies):
    """``x.T @ g`` (a weight gradient) reads ``x`` in place when the output's column count is in
    ``LEFT_IN_PLACE_COLUMNS``; other products copy it row-major first (one more kernel)."""
    from zyx.frontend import reduce as ops_reduce

    monkeypatch.setattr(ops_reduce, "TRANSPOSED_MIN", 1)  # as if the product were big
    rng = np.random.default_rng(m)
    x = rng.standard_normal((301, 45)).astype(np.float32)
    g = rng.standard_normal((301, m)).astype(np.float32)
    zx, zg = zyx.tensor(x).realize(), zyx.tensor(g).realize()
    before = zyx.kernel_count()
    got = (zx.T @ zg).realize()
    assert zyx.kernel_count() - before == 1 + copies
    np.testing.assert_allclose(got.numpy(), x.T @ g, rtol=1e-4, atol=1e-3)
