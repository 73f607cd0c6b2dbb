"""Explicit vector lanes (``Opts.vec``): whole-vector loads/stores, gathers, vector accumulators.

Each kernel is built from the IR, run with vector opts on the device and compared with
NumPy, on shapes where the vector divides the axis and where it does not (fallback), with
pads (lane-wise guards), broadcast loads, transposed reads (gathers) and NaN in max/min.
Reductions over vector lanes must give the same bits on every run.
"""
from __future__ import annotations

import numpy as np
import pytest

from zyx import dtype as dt
from zyx.codegen.ir_source import kernel_source
from zyx.ir import expr
from zyx.ir import symbolic as sym
from zyx.ir.kernel import Kernel, Opts, out_var, red_var

from ir_run import run_kernel as _run

pytestmark = pytest.mark.needs_device




def _ld(buf: int, index: sym.Node, d=dt.float32, valid: sym.Node = sym.ONE) -> expr.Load:
    return expr.Load(buf, d, index, valid)


@pytest.mark.parametrize("shape, vec, up", [((6, 40), 8, 2), ((3, 20), 4, 1), ((5, 7), 8, 1)])
def test_elementwise_exp_max_with_broadcast(shape, vec, up):
    n, m = shape
    i, j = out_var(0, n), out_var(1, m)
    x = _ld(1, sym.add(sym.mul(i, m), j))
    row = _ld(2, i)  # broadcast along the vector axis: a scalar operand
    e = expr.Alu("exp", (expr.Alu("sub", (x, row), dt.float32),), dt.float32)
    body = expr.Alu("maximum", (e, expr.Alu("relu", (x,), dt.float32)), dt.float32)
    k = Kernel(shape, (), (dt.float32,) * 3, body)
    rng = np.random.default_rng(0)
    a = rng.normal(size=shape).astype(np.float32)
    a[0, 1] = np.nan
    r = rng.normal(size=n).astype(np.float32)
    got = _run(k, Opts(local=4, upcast=(1, up), vec=vec, vec_axis=1), a, r)
    want = np.maximum(np.exp(a - r[:, None]), np.where(np.isnan(a) | (a > 0), a, 0))
    np.testing.assert_allclose(got, want, rtol=1e-6, equal_nan=True)
    if m % vec == 0:
        assert f"const zyx_float{vec}_u *" in kernel_source(k, Opts(local=4, upcast=(1, up), vec=vec, vec_axis=1))


@pytest.mark.parametrize("d", [dt.float32, dt.float64], ids=lambda d: d.name)
@pytest.mark.parametrize("cmp", ["gt", "le", "eq", "ne"])
def test_where_on_lane_masks(d, cmp):
    """``where(a <cmp> b, a * 2, r)`` vectorizes: the comparison is a lane mask (int/long lanes), the
    select picks lane by lane; NaN compares as in the scalar code, a scalar condition picks whole vectors."""
    from zyx.ir.kernel import vectorizable

    n, m = 5, 24
    i, j = out_var(0, n), out_var(1, m)
    a, b, r = _ld(1, sym.add(sym.mul(i, m), j), d), _ld(2, j, d), _ld(3, i, d)
    mask = expr.Alu(cmp, (a, b), dt.bool_)
    body = expr.Alu("where", (mask, expr.Alu("mul", (a, expr.Const(2.0, d)), d), r), d)
    row_mask = expr.Alu("where", (expr.Alu("gt", (r, expr.Const(0.0, d)), dt.bool_), a, b), d)
    rng = np.random.default_rng(1)
    x = rng.integers(-2, 3, (n, m)).astype(d.numpy)
    x[1, 3], x[2, 5] = np.nan, -0.0
    y = rng.integers(-2, 3, m).astype(d.numpy)
    z = rng.normal(size=n).astype(d.numpy)
    op = {"gt": np.greater, "le": np.less_equal, "eq": np.equal, "ne": np.not_equal}[cmp]
    opts = Opts(local=1, upcast=(1, 2), vec=4, vec_axis=1)
    lanes = f"{'long' if d.itemsize == 8 else 'int'}4 "
    for k, want, masked in ((Kernel((n, m), (), (d,) * 4, body), np.where(op(x, y), x * 2, z[:, None]), True),
                            (Kernel((n, m), (), (d,) * 4, row_mask), np.where(z[:, None] > 0, x, y), False)):
        assert vectorizable(k)
        assert (lanes in kernel_source(k, opts)) == masked  # a per-row condition stays scalar
        np.testing.assert_array_equal(_run(k, opts, x, y, z), want)


def test_transposed_read_gathers_and_pad_guards():
    n, m = 8, 12
    i, j = out_var(0, n), out_var(1, m)
    t = _ld(1, sym.add(sym.mul(j, n), i))  # x.T: lanes (along j) are n apart -> a gather
    inside = sym.land(sym.ge(j, 2), sym.lt(j, 10))  # a pad of 2 on both sides of a (n, 8) input
    p = expr.Load(2, dt.float32, sym.add(sym.mul(i, 8), sym.add(j, -2)), inside, 0)
    k = Kernel((n, m), (), (dt.float32,) * 3, expr.Alu("add", (t, p), dt.float32))
    a = np.arange(n * m, dtype=np.float32).reshape(m, n)
    b = np.arange(n * 8, dtype=np.float32).reshape(n, 8) + 0.5
    opts = Opts(local=2, vec=4, vec_axis=1)
    src = kernel_source(k, opts)
    assert "(float4)(" in src and "(__global zyx_float4_u *)" in src
    np.testing.assert_array_equal(_run(k, opts, a, b), a.T + np.pad(b, ((0, 0), (2, 2))))


@pytest.mark.parametrize("op", ["sum", "max", "min", "prod"])
@pytest.mark.parametrize("cols, vec, unroll", [(48, 16, 1), (96, 8, 3), (40, 4, 2), (21, 4, 1)])
def test_row_reduce_vector_accumulator(op, cols, vec, unroll):
    rows = 5
    i, r = out_var(0, rows), red_var(0, cols)
    x = _ld(1, sym.add(sym.mul(i, cols), r))
    k = Kernel((rows, 1), (cols,), (dt.float32,) * 2, expr.Reduce(op, x, dt.float32))
    rng = np.random.default_rng(1)
    a = rng.uniform(0.9, 1.1, size=(rows, cols)).astype(np.float32)
    a[2, cols - 1] = np.nan  # the last lane: NaN must win max/min wherever it is
    opts = Opts(local=2, unroll=unroll, vec=vec, vec_axis=2)
    got = _run(k, opts, a)
    want = getattr(np, op)(a.astype(np.float64), axis=1, keepdims=True)
    np.testing.assert_allclose(got, want, rtol=2e-6, equal_nan=True)
    assert np.array_equal(_run(k, opts, a).view(np.uint32), got.view(np.uint32))  # same bits every run
    if cols % vec == 0:
        assert "hreduce" not in kernel_source(k, opts) and f".s{vec - 1:x}" in kernel_source(k, opts)


def test_float64_reduce_and_matmul_tile():
    n, m, kk = 12, 32, 20
    i, j, r = out_var(0, n), out_var(1, m), red_var(0, kk)
    a = _ld(1, sym.add(sym.mul(i, kk), r), dt.float64)
    b = _ld(2, sym.add(sym.mul(r, m), j), dt.float64)
    k = Kernel((n, m, 1), (kk,), (dt.float64,) * 3, expr.Reduce("sum", expr.Alu("mul", (a, b), dt.float64), dt.float64))
    rng = np.random.default_rng(2)
    x, y = rng.normal(size=(n, kk)), rng.normal(size=(kk, m))
    opts = Opts(local=1, upcast=(4, 2, 1), unroll=4, vec=8, vec_axis=1)
    src = kernel_source(k, opts)
    assert "double8 acc" in src and src.count("const zyx_double8_u *") >= 2
    got = _run(k, opts, x, y)
    np.testing.assert_allclose(got[..., 0], x @ y, rtol=1e-12)


def test_unfit_vector_falls_back():
    i = out_var(0, 10)
    k = Kernel((10,), (), (dt.int32, dt.int32),
               expr.Alu("add", (_ld(1, i, dt.int32), expr.Const(1, dt.int32)), dt.int32))
    src = kernel_source(k, Opts(local=2, vec=8, vec_axis=0))
    assert "zyx_int8_u" not in src and "int8" not in src
    np.testing.assert_array_equal(_run(k, Opts(local=2, vec=8, vec_axis=0), np.arange(10, dtype=np.int32)),
                                  np.arange(1, 11, dtype=np.int32))
