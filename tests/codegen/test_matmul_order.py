"""The order of a CPU matmul's tiles in the global id (``Opts.rows_inner``): row tiles fastest when the
right operand is too big to stay cached and the left one is small ((64x4096)@(4096x4096): consecutive
work items share one column panel of the right operand). Checked as a heuristic choice (on a described
device, no OpenCL needed), run on the device with odd sizes and a batch axis against NumPy (poisoned
output), through the API, and in the tuner's search space."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import zyx
from zyx import dtype as dt
from zyx import settings
from zyx.codegen.ir_source import kernel_source
from zyx.ir import expr
from zyx.ir import symbolic as sym
from zyx.ir.kernel import Kernel, Opts, out_var, red_var
from zyx.opt import ir_tuning
from zyx.opt.heuristics import default_opts

from ir_run import run_kernel as _run

L3_32M = SimpleNamespace(kind="cpu", preferred_vector_width={"float": 16, "double": 8},
                         global_mem_cache_bytes=32 << 20)
UNREPORTED = SimpleNamespace(kind="cpu", preferred_vector_width={"float": 16, "double": 8})


def _matmul(n: int, m: int, kk: int, batch: int = 0, d=dt.float32) -> Kernel:
    """``out[(b,) i, j, 0] = sum_r a[(b,) i, r] * y[(b,) r, j]`` (the kernel ``a @ y`` builds)."""
    axes = [out_var(0, batch)] if batch else []
    i, j, r = out_var(len(axes), n), out_var(len(axes) + 1, m), red_var(0, kk)
    a_idx, y_idx = sym.add(sym.mul(i, kk), r), sym.add(sym.mul(r, m), j)
    if batch:
        a_idx = sym.add(sym.mul(axes[0], n * kk), a_idx)
        y_idx = sym.add(sym.mul(axes[0], kk * m), y_idx)
    body = expr.Reduce("sum", expr.Alu("mul", (expr.Load(1, d, a_idx), expr.Load(2, d, y_idx)), d), d)
    shape = ((batch,) if batch else ()) + (n, m, 1)
    return Kernel(shape, (kk,), (d, d, d), body)


@pytest.fixture
def by_kind(monkeypatch):
    monkeypatch.setattr(settings, "HEURISTICS", "auto")  # the described device's own kind


@pytest.mark.parametrize("n, m, kk, device, inner", [
    (64, 4096, 4096, L3_32M, True),        # 8 row tiles would each stream the 64 MiB right operand
    (24, 2048, 2560, L3_32M, True),        # a 20 MiB right operand, 3 row tiles
    (64, 4096, 4096, UNREPORTED, True),    # no cache size reported: a typical share is assumed
    (512, 1024, 4096, L3_32M, True),       # a 16 MiB right operand: more than a quarter of the cache
    (2048, 2048, 2048, L3_32M, True),
    (1024, 1024, 1024, L3_32M, False),     # both operands stay cached: the usual order
    (25088, 256, 576, L3_32M, False),      # a tall left operand: streaming it per column tile costs more
    (4096, 1024, 1024, L3_32M, False),     # the right operand stays cached
    (8, 4096, 4096, L3_32M, True),         # two row tiles of 4 rows
    (1, 4096, 4096, L3_32M, False),        # one row tile: nothing to share
    (4096, 4096, 4096, UNREPORTED, True),  # both too big: the left operand is re-read fewer times
])
def test_row_tiles_inner_when_the_right_operand_streams(by_kind, n, m, kk, device, inner):
    assert default_opts(_matmul(n, m, kk), 256, device).rows_inner is inner


def test_narrow_outputs_keep_the_usual_order(by_kind):
    # one tile spans every column: there is no column panel to share
    assert not default_opts(_matmul(64, 64, 1 << 20), 256, L3_32M).rows_inner


@pytest.mark.parametrize("n, m, kk, batch", [
    (37, 70, 19, 0),    # a last row tile of 5 of 8, a partial last column vector, an odd reduce (scalar tail)
    (16, 96, 64, 3),    # a batch axis: row tiles fastest inside each batch
    (9, 33, 5, 2),
])
@pytest.mark.needs_device
def test_rows_inner_matches_numpy(n, m, kk, batch):
    k = _matmul(n, m, kk, batch)
    rng = np.random.default_rng(n + m + kk)
    a = rng.standard_normal(((batch,) if batch else ()) + (n, kk)).astype(np.float32)
    y = rng.standard_normal(((batch,) if batch else ()) + (kk, m)).astype(np.float32)
    upcast = ((1,) if batch else ()) + (8, 2, 1)
    vec_axis = len(upcast) - 2
    inner = Opts(local=1, upcast=upcast, unroll=2, vec=16, vec_axis=vec_axis, rows_inner=True)
    assert "row tiles inner" in kernel_source(k, inner)
    got = _run(k, inner, a, y)[..., 0]
    np.testing.assert_allclose(got, a @ y, rtol=1e-5, atol=1e-4)
    usual = _run(k, Opts(local=1, upcast=upcast, unroll=2, vec=16, vec_axis=vec_axis), a, y)[..., 0]
    np.testing.assert_array_equal(got, usual)  # the same sums in the same order: only the item order moved


@pytest.mark.needs_device
def test_api_matmul_with_a_streamed_right_operand():
    rng = np.random.default_rng(7)
    a = rng.standard_normal((24, 2048)).astype(np.float32)
    b = rng.standard_normal((2560, 2048)).astype(np.float32)  # used transposed: a @ b.T, F.linear's layout
    got = (zyx.tensor(a) @ zyx.tensor(b).T).numpy()
    np.testing.assert_allclose(got, a @ b.T, rtol=1e-4, atol=1e-3)


def test_tuner_searches_the_tile_order():
    k = _matmul(64, 4096, 4096)
    space = ir_tuning.opts_space(k, 256)
    assert "rows_inner" in [p.name for p in space.params][:4]  # with the tile shapes, first
    base = Opts(local=1, upcast=(8, 2, 1), unroll=2, vec=16, vec_axis=1)
    cfg = ir_tuning.to_config(k, base)
    assert cfg["rows_inner"] == 0
    assert ir_tuning.from_config(k, base, {**cfg, "rows_inner": 1}).rows_inner is True
