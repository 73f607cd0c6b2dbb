"""Grouped reduction (``Opts.split``) and tails (sizes that vectors and tiles do not divide).

Split kernels are run on the device and compared with NumPy for every reduce op, the
accumulator dtypes (float32, float64, 16-bit floats accumulated in float32, int64 sums),
vector partials, several reduce axes, keepdim outputs, an epilogue after the reduce, NaN
and ties in argmax/argmin (the first extreme wins) and sizes that the split, vector and
unroll do not divide; every split result must have the same bits on a second run.
"""
from __future__ import annotations

import numpy as np
import pytest

import zyx
from zyx import dtype as dt
from zyx import settings
from zyx.codegen.ir_source import kernel_source
from zyx.ir import expr
from zyx.ir import symbolic as sym
from zyx.ir.kernel import Kernel, Opts, out_var, red_var
from zyx.ir.linearize import linearize
from zyx.kernels.ir_launch import launch_kernel
from zyx.opt.heuristics import default_opts

from ir_run import run_kernel as _run


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view(f"u{a.dtype.itemsize}")


def _row_reduce(op: str, rows: int, cols: int, src: dt.DType, acc: dt.DType) -> Kernel:
    i, r = out_var(0, rows), red_var(0, cols)
    x: expr.Expr = expr.Load(1, src, sym.add(sym.mul(i, cols), r))
    if acc is not src and op not in ("argmax", "argmin"):
        x = expr.Cast(x, acc)
    out = dt.int64 if op in ("argmax", "argmin") else acc
    return Kernel((rows, 1), (cols,), (out, src), expr.Reduce(op, x, out))


def _want(op: str, a: np.ndarray) -> np.ndarray:
    if op in ("argmax", "argmin"):
        return getattr(np, op)(a, axis=1)[:, None]  # NumPy: the first extreme, NaN wins
    return getattr(np, op)(a.astype(np.float64) if a.dtype.kind == "f" else a.astype(np.int64), axis=1, keepdims=True)


SPLITS = [Opts(local=8, split=4), Opts(local=16, split=16, unroll=2),
          Opts(local=4, split=2, vec=8, vec_axis=2, unroll=2)]


@pytest.mark.needs_device
@pytest.mark.parametrize("op", ["sum", "prod", "max", "min", "argmax", "argmin"])
@pytest.mark.parametrize("opts", SPLITS, ids=["s4", "s16u2", "s2v8u2"])
def test_split_row_reduce_float32(op, opts):
    rows, cols = 5, 1001  # 5 rows in groups of 2 tiles: a tile past the end; 1001: tails everywhere
    rng = np.random.default_rng(3)
    a = rng.uniform(0.99, 1.01, size=(rows, cols)).astype(np.float32)
    a[1, 500] = a[1, 700] = 2.0 if op != "argmin" else 0.5  # a tie: the first position wins
    a[2, 1000] = a[2, 3] = np.nan  # NaN wins max/min/argmax/argmin, the first one
    a[3, 17] = a[3, 900] = 3.0 if op != "argmin" else -3.0
    k = _row_reduce(op, rows, cols, dt.float32, dt.float32)
    got = _run(k, opts, a)
    want = _want(op, a)
    if op in ("argmax", "argmin"):
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=3e-6, equal_nan=True)
    assert np.array_equal(_bits(_run(k, opts, a)), _bits(got))  # same bits every run
    assert "barrier(CLK_LOCAL_MEM_FENCE)" in kernel_source(k, opts)


@pytest.mark.parametrize("src, acc, op", [(dt.float16, dt.float32, "sum"), (dt.bfloat16, dt.float32, "sum"),
                                          (dt.float16, dt.float16, "max"), (dt.int32, dt.int64, "sum"),
                                          (dt.int8, dt.int64, "argmin"), (dt.float64, dt.float64, "sum"),
                                          (dt.uint8, dt.uint8, "max")])
@pytest.mark.needs_device
def test_split_accumulator_dtypes(src, acc, op):
    rows, cols = 3, 777
    rng = np.random.default_rng(4)
    if src.is_float:
        a = rng.normal(size=(rows, cols))
        if src is dt.bfloat16:
            host = zyx.tensor(a.astype(np.float32)).cast(dt.bfloat16).cast(dt.float32).numpy()
            a, inp = host, zyx.tensor(a.astype(np.float32)).cast(dt.bfloat16).realize()
        else:
            a = a.astype(src.numpy)
            inp = None
    else:
        a = rng.integers(0, 120, size=(rows, cols)).astype(src.numpy)
        a[:, 5] = 2**31 - 1 if src is dt.int32 else a[:, 5]  # an int64 sum: no int32 wrap-around
        inp = None
    k = _row_reduce(op, rows, cols, src, acc)
    opts = Opts(local=8, split=8, unroll=2)
    if inp is None:
        got = _run(k, opts, a)
    else:  # bfloat16 has no NumPy dtype: hand the device buffer over
        import pyopencl as cl

        dev = zyx.default_device()
        out = zyx.zeros(*k.out_shape, dtype=k.out_dtype).realize()
        launch_kernel(dev, k, opts, [out._data.buffer.cl, inp._data.buffer.cl])
        got = np.empty(k.out_shape, k.out_dtype.numpy)
        cl.enqueue_copy(dev.queue, got, out._data.buffer.cl)
    want = _want(op, a.astype(np.float32) if src.is_float and src.itemsize < 4 else a)
    if src is dt.float16 and acc is dt.float16:
        np.testing.assert_array_equal(got, want.astype(np.float16))  # max is exact
    elif src.is_float:
        np.testing.assert_allclose(got, want, rtol=1e-5 if src.itemsize < 8 else 1e-12)
    else:
        np.testing.assert_array_equal(got, want)
    if src is dt.int32:
        assert got.dtype == np.int64 and got[0, 0] > 2**31


@pytest.mark.needs_device
def test_split_two_reduce_axes_keepdim_and_epilogue():
    # out[i] = sum_{p,q} x[p, i, q] * 2 + c[i] over a (3, 4, 130) input: reduce axes (0, 2)
    n, p, q = 4, 3, 130
    i, r0, r1 = out_var(1, n), red_var(0, p), red_var(1, q)
    x = expr.Load(1, dt.float32, sym.add(sym.mul(r0, n * q), sym.mul(i, q), r1))
    red = expr.Reduce("sum", expr.Alu("mul", (x, expr.Const(2.0, dt.float32)), dt.float32), dt.float32)
    body = expr.Alu("add", (red, expr.Load(2, dt.float32, i)), dt.float32)
    k = Kernel((1, n, 1), (p, q), (dt.float32,) * 3, body)
    rng = np.random.default_rng(5)
    a = rng.normal(size=(p, n, q)).astype(np.float32)
    c = rng.normal(size=n).astype(np.float32)
    want = (a.astype(np.float64) * 2).sum(axis=(0, 2)) + c
    for opts in (Opts(local=8, split=8, vec=4, vec_axis=4), Opts(local=32, split=32)):
        got = _run(k, opts, a, c)
        np.testing.assert_allclose(got.reshape(n), want, rtol=1e-5)
        assert np.array_equal(_bits(_run(k, opts, a, c)), _bits(got))


def test_split_program_structure():
    k = _row_reduce("sum", 4, 1000, dt.float32, dt.float32)
    prog = linearize(k, Opts(local=1, split=8, vec=4, vec_axis=2))
    seq = [ins.op for ins in prog.instrs]
    assert prog.split == 8 and prog.local == 8  # the work-group holds at least one whole split group
    assert seq.index("hreduce") < seq.index("combine") < seq.index("store")
    assert next(ins for ins in prog.instrs if ins.op == "loop").arg == ("r0", 31)  # 31 x 8 items x 4 lanes
    assert linearize(k, Opts(split=3)).split == 1 and linearize(k, Opts(split=512)).split == 1
    src = kernel_source(k, Opts(local=1, split=8, vec=4, vec_axis=2))
    assert "zyx_sid == 0" in src and "__local float zyx_part" in src and "for (int rt = 0; rt < 1; rt++)" in src


def test_split_heuristics(monkeypatch):
    from types import SimpleNamespace

    monkeypatch.setattr(settings, "HEURISTICS", "auto")  # by each device's own kind

    cpu = SimpleNamespace(kind="cpu", compute_units=2, preferred_vector_width={"float": 8, "double": 4})
    gpu = SimpleNamespace(kind="gpu", compute_units=132, preferred_vector_width={"float": 1, "double": 1})
    full = _row_reduce("sum", 1, 1 << 20, dt.float32, dt.float32)
    rows = _row_reduce("max", 4096, 1024, dt.float32, dt.float32)
    assert default_opts(full, 1024, cpu).split == 16 and default_opts(rows, 1024, cpu).split == 1
    assert default_opts(full, 1024, gpu).split == 256 and default_opts(rows, 1024, gpu).split == 128
    assert default_opts(_row_reduce("sum", 1 << 16, 1024, dt.float32, dt.float32), 1024, gpu).split == 1
    assert default_opts(_row_reduce("sum", 8, 64, dt.float32, dt.float32), 1024, gpu).split == 1


@pytest.mark.needs_device
def test_split_through_the_tensor_api():
    rng = np.random.default_rng(6)
    a = rng.normal(size=1_000_003).astype(np.float32)  # prime: stage 2 takes the chunks' leftover; argmax: one kernel
    t = zyx.tensor(a)
    s1, s2 = t.sum().numpy(), t.sum().numpy()
    assert _bits(np.asarray(s1)) == _bits(np.asarray(s2))
    np.testing.assert_allclose(s1, a.astype(np.float64).sum(), rtol=1e-4)
    a[123_457] = 50.0
    a[999_999] = 50.0
    assert int(zyx.tensor(a).argmax().numpy()) == 123_457


# ------------------------------------------------------------------ tails (task: odd sizes keep vectors)

@pytest.mark.needs_device
@pytest.mark.parametrize("shape, vec, up", [((7, 1001), 8, 2), ((3, 13), 4, 4)])
def test_masked_last_vector_elementwise(shape, vec, up):
    n, m = shape
    i, j = out_var(0, n), out_var(1, m)
    x = expr.Load(1, dt.float32, sym.add(sym.mul(i, m), j))
    k = Kernel(shape, (), (dt.float32, dt.float32), expr.Alu("exp", (x,), dt.float32))
    opts = Opts(local=4, upcast=(1, up), vec=vec, vec_axis=1)
    a = np.random.default_rng(7).normal(size=shape).astype(np.float32)
    np.testing.assert_allclose(_run(k, opts, a), np.exp(a), rtol=1e-6)
    src = kernel_source(k, opts)
    assert f"(__global const zyx_float{vec}_u *)" in src and f"(__global zyx_float{vec}_u *)" in src  # whole vectors


@pytest.mark.needs_device
def test_masked_register_tiles_matmul():
    n, m, kk = 13, 19, 7
    i, j, r = out_var(0, n), out_var(1, m), red_var(0, kk)
    a = expr.Load(1, dt.float32, sym.add(sym.mul(i, kk), r))
    b = expr.Load(2, dt.float32, sym.add(sym.mul(r, m), j))
    k = Kernel((n, m, 1), (kk,), (dt.float32,) * 3, expr.Reduce("sum", expr.Alu("mul", (a, b), dt.float32), dt.float32))
    rng = np.random.default_rng(8)
    x, y = rng.normal(size=(n, kk)).astype(np.float32), rng.normal(size=(kk, m)).astype(np.float32)
    for opts in (Opts(local=1, upcast=(4, 2, 1), unroll=4, vec=4, vec_axis=1), Opts(local=2, upcast=(3, 5, 1))):
        np.testing.assert_allclose(_run(k, opts, x, y)[..., 0], x @ y, rtol=1e-5, atol=1e-6)


@pytest.mark.needs_device
@pytest.mark.parametrize("dtype", [dt.float32, dt.float64])
def test_reduce_tail_loop_and_column_reduce(dtype):
    rows, cols = 6, 1001
    rng = np.random.default_rng(9)
    a = rng.normal(size=(rows, cols)).astype(dtype.numpy)
    row = _row_reduce("sum", rows, cols, dtype, dtype)
    opts = Opts(local=2, unroll=2, vec=16 if dtype is dt.float32 else 8, vec_axis=2)
    np.testing.assert_allclose(_run(row, opts, a), _want("sum", a), rtol=1e-5)
    assert "for (int rt = 0; rt < 9; rt++)" in kernel_source(row, opts)  # 1001 = 31 x 32 + 9
    i, r = out_var(1, cols), red_var(0, rows)
    col = Kernel((1, cols), (rows,), (dtype, dtype),
                 expr.Reduce("max", expr.Load(1, dtype, sym.add(sym.mul(r, cols), i)), dtype))
    copts = default_opts(col, 256, zyx.default_device().info)
    np.testing.assert_array_equal(_run(col, copts, a)[0], a.max(axis=0))
    if settings.heuristics_kind(zyx.default_device()) == "cpu":
        assert copts.vec > 1  # 1001 columns: vectors with a masked last one, not scalar


@pytest.mark.needs_device
def test_split_shrinks_to_the_kernels_own_work_group_limit(monkeypatch):
    # A kernel whose CL_KERNEL_WORK_GROUP_SIZE (register pressure on a GPU) is below the
    # work-group a split needs runs with a smaller split instead of failing to launch.
    from zyx.backend import launch as launch_mod

    monkeypatch.setattr(launch_mod.CompiledKernel, "work_group_size", property(lambda self: 4))
    launched = []
    real = launch_mod.launch
    monkeypatch.setattr(launch_mod, "launch",
                        lambda ck, g, loc, a, **kw: launched.append(loc) or real(ck, g, loc, a, **kw))
    a = np.random.default_rng(5).standard_normal((3, 777)).astype(np.float32)
    k = _row_reduce("sum", 3, 777, dt.float32, dt.float32)
    got = _run(k, Opts(local=16, split=16), a)
    np.testing.assert_allclose(got, _want("sum", a), rtol=1e-5)
    assert launched and launched[-1][0] <= 4
