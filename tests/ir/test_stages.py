"""Two-stage reduces (``ir.stages``) and the rule that chooses them (``opt.heuristics.reduce_groups``).

The stage kernels are checked as IR (shapes, buffers, what the second stage reads), by the rule on
CPU- and GPU-like devices, and run on the device against NumPy: a column reduce with an epilogue,
reduces that the chunk count does not divide (the last elements folded in by stage 2), several
reduce axes, every splittable op and the accumulator dtypes.
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from zyx import dtype as dt
from zyx.ir import expr, stages
from zyx.ir import symbolic as sym
from zyx.ir.kernel import Kernel, out_var, red_var
from zyx.ir.rewrite import walk
from zyx.op import Op
from zyx.opt.heuristics import STAGE_CHUNK_MIN, default_opts, reduce_groups

CPU = SimpleNamespace(kind="cpu", compute_units=2, preferred_vector_width={"float": 8, "double": 4})
GPU = SimpleNamespace(kind="gpu", compute_units=132, preferred_vector_width={"float": 1, "double": 1})


def _column(op: str, rows: int, cols: int, src: dt.DType = dt.float32, acc: dt.DType = dt.float32,
            epilogue: bool = False) -> Kernel:
    """``op`` over the rows of a (rows, cols) buffer (a reduce over the leading axis), ``/ p0 + 1`` after
    it when ``epilogue``."""
    o, r = out_var(0, cols), red_var(0, rows)
    x: expr.Expr = expr.Load(1, src, sym.add(sym.mul(r, cols), o))
    if acc is not src:
        x = expr.Cast(x, acc)
    body: expr.Expr = expr.Reduce(op, x, acc)
    params: tuple[dt.DType, ...] = ()
    if epilogue:
        body = expr.Alu(Op.ADD, (expr.Alu(Op.DIV, (body, expr.Param(0, acc)), acc), expr.Const(1.0, acc)), acc)
        params = (acc,)
    return Kernel((cols,), (rows,), (acc, src), body, params)


def _channels(n: int, c: int, hw: int, last: bool = True) -> Kernel:
    """A per-channel sum of (n, c, hw) over (n, hw) (two reduce axes, the outer one split), stored
    channels-last (n, hw, c) when ``last``."""
    o, r0, r1 = out_var(0, c), red_var(0, n), red_var(1, hw)
    inner = sym.add(sym.mul(r1, c), o) if last else sym.add(sym.mul(o, hw), r1)
    load = expr.Load(1, dt.float32, sym.add(sym.mul(r0, c * hw), inner))
    return Kernel((c,), (n, hw), (dt.float32, dt.float32), expr.Reduce(Op.SUM, load, dt.float32))


def test_stage_kernels_structure():
    k = _column(Op.SUM, 1000, 32, epilogue=True)
    first, last = stages.partial_kernel(k, 8), stages.final_kernel(k, 8)
    assert first.out_shape == (8, 32) and first.red_shape == (125,) and first.bufs == (dt.float32, dt.float32)
    assert isinstance(first.body, expr.Reduce)  # the reduce alone: the epilogue runs once, in stage 2
    load = next(e for e in walk(first.body) if isinstance(e, expr.Load))
    assert sym.evaluate(load.index, {"o0": 3, "o1": 5, "r0": 7}) == (3 * 125 + 7) * 32 + 5
    assert last.out_shape == (32,) and last.red_shape == (8,) and last.bufs == (dt.float32,) * 3
    assert last.params == k.params and isinstance(last.body, expr.Alu)
    part = next(e for e in walk(last.body) if isinstance(e, expr.Load))
    assert part.buf == 2 and sym.evaluate(part.index, {"o0": 5, "r0": 3}) == 3 * 32 + 5
    assert not any(isinstance(e, expr.Cond) for e in walk(last.body))


def test_a_chunk_count_that_does_not_divide():
    k = _column(Op.MAX, 1003, 4)
    assert stages.chunk(k, 8) == (125, 3)
    last = stages.final_kernel(k, 8)
    assert last.red_shape == (11,)  # 8 partials, then the 3 elements the chunks left
    assert any(isinstance(e, expr.Cond) for e in walk(last.body))
    # several reduce axes split only where the chunk count divides the outer one
    assert stages.chunk(_channels(64, 32, 784), 8) == (8, 0) and stages.chunk(_channels(63, 32, 784), 8) is None
    assert stages.partial_kernel(_channels(64, 32, 784), 8).red_shape == (8, 784)


def test_what_cannot_split():
    assert stages.the_reduce(_column(Op.ARGMAX, 1 << 16, 4, acc=dt.int64)) is None
    a, b = _column(Op.SUM, 1 << 16, 4), _column(Op.MAX, 1 << 16, 4)
    two = Kernel(a.out_shape, a.red_shape, a.bufs, expr.Alu(Op.ADD, (a.body, b.body), dt.float32))
    assert stages.the_reduce(two) is None and reduce_groups(two, CPU) == 1
    with pytest.raises(ValueError, match="no two-stage split"):
        stages.partial_kernel(two, 4)


def test_reduce_groups_rule():
    few = _column(Op.SUM, 50176, 32)  # BatchNorm's per-channel statistics of (64, 32, 28, 28)
    assert reduce_groups(few, CPU) == 8  # 2 vectors of outputs: 8 chunks make 16 for 2 cores
    assert reduce_groups(few, None) == 1  # no device, no rule
    assert reduce_groups(_column(Op.SUM, 1 << 24, 1), CPU) == 256  # a long full reduce: 256 chunks
    assert reduce_groups(_column(Op.SUM, 1 << 24, 1), GPU) == 1024  # 132 compute units to fill
    assert reduce_groups(_column(Op.SUM, 256, 1024), CPU) == 1  # a bias gradient: enough outputs
    assert reduce_groups(_column(Op.SUM, 50176, 512), CPU) == 1  # 32 vectors of outputs fill 2 cores
    assert reduce_groups(_column(Op.SUM, 50176, 512), GPU) > 1  # not 132 compute units
    assert reduce_groups(_column(Op.SUM, 2 * STAGE_CHUNK_MIN - 1, 32), CPU) == 1  # too short to pay a launch
    assert reduce_groups(_column(Op.SUM, 4096, 16), CPU) == 1  # too little work in all
    assert reduce_groups(_channels(64, 32, 784), CPU) == 8  # channels-last: divides the batch axis
    assert reduce_groups(_channels(61, 32, 784), CPU) == 1  # no chunk count divides a prime batch
    # NCHW: each channel streams contiguous vectors of its own, and 32 of them keep 2 cores busy
    assert reduce_groups(_channels(64, 32, 784, last=False), CPU) == 1
    assert reduce_groups(_channels(128, 4, 784, last=False), CPU) > 1  # 4 do not
    g = reduce_groups(_column(Op.SUM, 1_000_003, 8), CPU)
    assert g > 1 and stages.chunk(_column(Op.SUM, 1_000_003, 8), g)[0] >= STAGE_CHUNK_MIN
    mm = Kernel((64, 64), (1 << 16,), (dt.float32,) * 3, expr.Reduce(Op.SUM, expr.Alu(Op.MUL, (
        expr.Load(1, dt.float32, sym.add(sym.mul(out_var(0, 64), 1 << 16), red_var(0, 1 << 16))),
        expr.Load(2, dt.float32, sym.add(sym.mul(red_var(0, 1 << 16), 64), out_var(1, 64)))), dt.float32),
        dt.float32))
    assert reduce_groups(mm, GPU) == 1  # matmuls tile instead


def _run_two_stages(k: Kernel, groups: int, *inputs: np.ndarray) -> np.ndarray:
    import zyx
    from zyx.backend import transfer
    from zyx.kernels.ir_launch import launch_kernel

    dev = zyx.default_device()
    ins = [transfer.upload(dev, np.ascontiguousarray(a)) for a in inputs]
    first, last = stages.partial_kernel(k, groups), stages.final_kernel(k, groups)
    part = dev.pool.allocate(first.numel * first.out_dtype.itemsize)
    out = dev.pool.allocate(k.numel * k.out_dtype.itemsize)
    params = [expr.param_value(2.0, d) for d in k.params]
    args1 = [part.cl, *(b.cl for b in ins), *params]
    launch_kernel(dev, first, default_opts(first, dev.info.max_work_group_size, dev.info), args1)
    args2 = [out.cl, *(b.cl for b in ins), part.cl, *params]
    launch_kernel(dev, last, default_opts(last, dev.info.max_work_group_size, dev.info), args2)
    return transfer.read(out, k.numel * k.out_dtype.itemsize).view(k.out_dtype.numpy).reshape(k.out_shape)


_NP = {Op.SUM: np.sum, Op.MAX: np.max, Op.MIN: np.min, Op.PROD: np.prod}


@pytest.mark.needs_device
@pytest.mark.parametrize("op", [Op.SUM, Op.MAX, Op.MIN, Op.PROD])
@pytest.mark.parametrize("rows, cols, groups", [(50176, 32, 8), (10007, 33, 12), (9001, 1, 256), (4099, 5, 2)])
def test_two_stages_match_numpy(op, rows, cols, groups):
    rng = np.random.default_rng(rows + cols)
    a = (rng.uniform(0.999, 1.001, (rows, cols)) if op == Op.PROD else rng.standard_normal((rows, cols)))
    a = a.astype(np.float32)
    k = _column(op, rows, cols, epilogue=op == Op.SUM)
    got = _run_two_stages(k, groups, a)
    want = _NP[op](a.astype(np.float64), axis=0)
    if op == Op.SUM:
        want = want / 2.0 + 1
    if op == Op.SUM:  # a float32 sum: a few roundings of its partial sums
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6 * np.sqrt(rows) * float(np.abs(want).max()))
    else:
        np.testing.assert_allclose(got, want, rtol=1e-4 if op == Op.PROD else 0)
    assert np.array_equal(got.view(np.uint32), _run_two_stages(k, groups, a).view(np.uint32))  # same bits again


@pytest.mark.needs_device
def test_two_stages_accumulator_dtypes_and_axes():
    rng = np.random.default_rng(3)
    halves = rng.uniform(-1, 1, (20001, 3)).astype(np.float16)
    got = _run_two_stages(_column(Op.SUM, 20001, 3, dt.float16, dt.float32), 7, halves)  # float32 partials
    np.testing.assert_allclose(got, halves.astype(np.float64).sum(0), rtol=1e-5, atol=1e-4)
    ints = rng.integers(-1000, 1000, (30011, 4)).astype(np.int32)
    got = _run_two_stages(_column(Op.SUM, 30011, 4, dt.int32, dt.int64), 9, ints)
    assert np.array_equal(got, ints.astype(np.int64).sum(0))
    got = _run_two_stages(_column(Op.MAX, 30011, 4, dt.int32, dt.int32), 9, ints)
    assert np.array_equal(got, ints.max(0))
    x = rng.standard_normal((64, 32, 784)).astype(np.float32)
    got = _run_two_stages(_channels(64, 32, 784, last=False), 8, x)
    np.testing.assert_allclose(got, x.astype(np.float64).sum((0, 2)), rtol=1e-5)
