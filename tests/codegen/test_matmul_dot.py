"""CPU matmuls whose right operand is a transposed view left in place (``a @ w.T`` with few columns or a small
product): the dot-product form (``heuristics._dot_form``: vectors along the contiguous reduce, a tile of
``MM_DOT`` x ``MM_DOT`` outputs); the 5-vector tile over every column of a GPT head (N = 65); and which
transposed right operands the frontend copies row-major first. Checked as heuristic choices (on a described
device, no OpenCL needed), run on the device with odd sizes (clamped last tiles, a reduce tail, a partial
last vector) against NumPy on poisoned outputs, through the API with a fused bias + gelu, and in the
tuner's search space."""
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
from zyx.opt.heuristics import MM_DOT, MM_DOT_MIN_REDUCE, MM_ROWS_WIDE5, default_opts

from ir_run import run_kernel as _run

AVX512 = SimpleNamespace(kind="cpu", preferred_vector_width={"float": 16, "double": 8})


def _matmul(n: int, m: int, kk: int, right_t: bool, d=dt.float32) -> Kernel:
    """``out[i, j, 0] = sum_r a[i, r] * y[r, j]``; with ``right_t`` ``y`` is ``w.T``, ``w`` (m, kk) row-major."""
    i, j, r = out_var(0, n), out_var(1, m), red_var(0, kk)
    a = expr.Load(1, d, sym.add(sym.mul(i, kk), r))
    y = expr.Load(2, d, sym.add(sym.mul(j, kk), r) if right_t else sym.add(sym.mul(r, m), j))
    return Kernel((n, m, 1), (kk,), (d, d, d), expr.Reduce("sum", expr.Alu("mul", (a, y), d), d))


@pytest.fixture
def by_kind(monkeypatch):
    monkeypatch.setattr(settings, "HEURISTICS", "auto")  # the described device's own kind


@pytest.mark.parametrize("n, m, kk, up", [
    (256, 10, 1024, (MM_DOT, 2, 1)),      # the MLP's last layer: 10 columns, 2 a tile
    (128, 768, 256, (MM_DOT, MM_DOT, 1)),
    (2, 3, 112, (2, 3, 1)),               # tiles no bigger than the output
])
def test_transposed_right_operand_gets_dot_products(by_kind, n, m, kk, up):
    o = default_opts(_matmul(n, m, kk, right_t=True), 256, AVX512)
    assert o.upcast == up and o.vec == 16 and o.vec_axis == 3 and o.local == 1


def test_a_bias_epilogue_keeps_the_dot_form(by_kind):
    """``x @ w.T + b``: the bias row is read contiguously along the columns, but only after the reduce; the
    products still run as dot products (the CNN's head: 3136 -> 10)."""
    k = _matmul(64, 10, 3136, right_t=True)
    j = out_var(1, 10)
    bias = expr.Load(3, dt.float32, j)
    k = Kernel(k.out_shape, k.red_shape, (*k.bufs, dt.float32), expr.Alu("add", (k.body, bias), dt.float32))
    o = default_opts(k, 256, AVX512)
    assert o.vec == 16 and o.vec_axis == 3 and o.upcast == (MM_DOT, 2, 1)


def test_dot_form_needs_a_long_reduce_and_a_transposed_operand(by_kind):
    short = default_opts(_matmul(128, 128, MM_DOT_MIN_REDUCE // 2, right_t=True), 256, AVX512)
    assert short.vec_axis == 1  # vectors along the columns, as before
    plain = default_opts(_matmul(256, 10, 1024, right_t=False), 256, AVX512)
    assert plain.vec_axis != 3


@pytest.mark.parametrize("n, m, kk, up, d", [
    (37, 10, 1030, (4, 2, 1), dt.float32),    # a last row tile of 1 of 4; a reduce tail of 6 past the vectors
    (5, 7, 100, (4, 4, 1), dt.float32),       # clamped last tiles on both axes
    (256, 10, 1024, (4, 2, 1), dt.float32),
    (19, 9, 77, (4, 4, 1), dt.float64),       # 8 lanes of double
])
@pytest.mark.needs_device
def test_dot_form_matches_numpy(n, m, kk, up, d):
    k = _matmul(n, m, kk, right_t=True, d=d)
    rng = np.random.default_rng(n + m + kk)
    a = rng.standard_normal((n, kk)).astype(d.numpy)
    w = rng.standard_normal((m, kk)).astype(d.numpy)
    got = _run(k, Opts(local=1, upcast=up, vec=16 if d is dt.float32 else 8, vec_axis=3), a, w)[..., 0]
    np.testing.assert_allclose(got, a @ w.T, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("n, m, kk", [
    (2048, 65, 256),   # a GPT head: 4 full vectors and one of a single column
    (2048, 80, 256),
])
def test_five_vectors_of_columns_get_one_tile(by_kind, n, m, kk):
    o = default_opts(_matmul(n, m, kk, right_t=False), 256, AVX512)
    assert o.upcast == (MM_ROWS_WIDE5, 5, 1) and o.vec == 16 and o.vec_axis == 1


@pytest.mark.parametrize("n, m, kk", [(37, 65, 70), (13, 80, 20), (9, 70, 301)])
@pytest.mark.needs_device
def test_five_vector_tile_matches_numpy(n, m, kk):
    k = _matmul(n, m, kk, right_t=False)
    rng = np.random.default_rng(n * m + kk)
    a = rng.standard_normal((n, kk)).astype(np.float32)
    y = rng.standard_normal((kk, m)).astype(np.float32)
    got = _run(k, Opts(local=1, upcast=(MM_ROWS_WIDE5, 5, 1), unroll=2, vec=16, vec_axis=1), a, y)[..., 0]
    np.testing.assert_allclose(got, a @ y, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("n, kk, m, copies", [
    (256, 1024, 10, 0),    # 10 columns: dot products along the reduce, no copy
    (128, 256, 768, 1),    # batch-1 GPT's qkv: copied row-major (2^21 multiply-adds or more)
    (8, 1024, 1024, 0),    # one row tile: each element of w is read once anyway
    (16, 64, 64, 0),       # a small product: the copy's launch costs more
    (1, 2048, 20000, 0),   # a decode step's LM head (2^25 multiply-adds or more): the copy would read w twice
    (4, 4096, 8200, 0),    # a few rows: dot products read w once
    (16, 4096, 600, 1),    # a row tile of 16 over a large product: copied
])
@pytest.mark.needs_device
def test_which_transposed_right_operands_are_copied(n, kk, m, copies):
    rng = np.random.default_rng(n + kk + m)
    x = rng.standard_normal((n, kk)).astype(np.float32)
    w = rng.standard_normal((m, kk)).astype(np.float32)
    zx, zw = zyx.tensor(x).realize(), zyx.tensor(w).realize()
    before = zyx.kernel_count()
    got = (zx @ zw.T).realize()
    assert zyx.kernel_count() - before == 1 + copies
    np.testing.assert_allclose(got.numpy(), x @ w.T, rtol=1e-4, atol=1e-3)


@pytest.mark.needs_device
def test_linear_with_gelu_in_dot_form():
    """``gelu(x @ w.T + b)`` with 10 columns: one kernel, the bias and gelu after the dot products."""
    from math import erf

    rng = np.random.default_rng(3)
    x = rng.standard_normal((67, 300)).astype(np.float32)
    w = rng.standard_normal((10, 300)).astype(np.float32) * 0.1
    b = rng.standard_normal(10).astype(np.float32)
    zx, zw, zb = (zyx.tensor(v).realize() for v in (x, w, b))
    before = zyx.kernel_count()
    got = zyx.nn.functional.gelu(zyx.nn.functional.linear(zx, zw, zb)).realize()
    assert zyx.kernel_count() - before == 1
    y = (x.astype(np.float64) @ w.T.astype(np.float64)) + b
    want = 0.5 * y * (1 + np.vectorize(erf)(y / np.sqrt(2)))
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-4)


def test_tuner_space_holds_the_tiles():
    space = {p.name: p.values for p in ir_tuning.opts_space(_matmul(2048, 65, 256, right_t=False), 256).params}
    assert 5 in space["up_last"] and MM_ROWS_WIDE5 in space["up_row"]
    k = _matmul(256, 10, 1024, right_t=True)
    base = default_opts(k, 256, AVX512)
    cfg = ir_tuning.to_config(k, base)
    assert cfg["vec_axis"] == 3 and ir_tuning.from_config(k, base, {**cfg, "up_last": 4}).vec_axis == 3
