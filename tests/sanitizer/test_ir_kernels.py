"""IR kernels under Oclgrind: elementwise (fused chains, integer ops with the error flag, 16- and
8-bit float emulation), reduces (grouped/split reductions through local memory, several axes,
epilogues, arg reductions), row kernels (softmax, layer_norm), matmul register tiles and gathers;
through the API with the GPU heuristics, and with hand-picked opts the GPU heuristics do not choose
(vectors with a masked last one, clamped tiles, split with vector partials, unroll tails)."""
from __future__ import annotations

import numpy as np
import pytest

import zyx
import zyx.nn.functional as F
from zyx import dtype as dt
from zyx import settings
from zyx.backend import transfer
from zyx.codegen.ir_source import kernel_source
from zyx.ir import expr
from zyx.ir import symbolic as sym
from zyx.ir.kernel import Kernel, Opts, out_var, red_var
from zyx.kernels.ir_launch import launch_kernel
from zyx.opt.heuristics import default_opts


def rnd(shape, seed=0, dtype=np.float32) -> np.ndarray:
    return (np.random.default_rng(seed).random(shape) * 2 - 1).astype(dtype)


def t(a: np.ndarray, dev) -> zyx.Tensor:
    return zyx.from_numpy(np.ascontiguousarray(a), device=dev)


def close(got: zyx.Tensor, want: np.ndarray, rtol: float = 1e-5, atol: float = 1e-6) -> None:
    g = got.numpy()
    assert g.shape == want.shape, (g.shape, want.shape)
    np.testing.assert_allclose(g.astype(np.float64), np.asarray(want, np.float64), rtol=rtol, atol=atol)


def test_elementwise_float_chains_and_views(sim, needs):
    needs(zyx.float64)
    a, b = rnd((5, 7, 3), 1), rnd((3, 7, 5), 2)
    x, y = t(a, sim), t(b, sim)
    yt = y.permute(2, 1, 0)  # transposed input
    close((x * yt + 1.5).exp() - x.abs().sqrt(), np.exp(a * b.transpose(2, 1, 0) + 1.5) - np.sqrt(np.abs(a)))
    close((x[:, 1::2] / 3).tanh() + x[:1].expand(5, 7, 3)[:, 1::2], np.tanh(a[:, 1::2] / 3) + a[:1, 1::2])
    bt = b.transpose(2, 1, 0)
    close(zyx.where(x > yt, x, yt.sigmoid()), np.where(a > bt, a, 1 / (1 + np.exp(-bt))))
    c = rnd((33, 128), 4)  # 4096 elements or more: 4 outputs a work-item with the GPU heuristics
    close(t(c, sim) * 3 - t(c, sim).T.T.square(), c * 3 - c * c)
    d = rnd((9, 5), 3, np.float64)  # Oclgrind has cl_khr_fp64
    close(t(d, sim).sin() * 2 + (t(d, sim).T + 2).log().T, np.sin(d) * 2 + np.log(d.T + 2).T, rtol=1e-12)


def test_elementwise_integers_and_error_flag(sim):
    rng = np.random.default_rng(4)
    a = rng.integers(-50, 50, (7, 9)).astype(np.int32)
    b = rng.integers(1, 9, (7, 9)).astype(np.int32)
    x, y = t(a, sim), t(b, sim)
    np.testing.assert_array_equal((x // y + x % y * 3).numpy(), a // b + a % b * 3)
    np.testing.assert_array_equal(((x & 7) | y.T.T ^ 5).numpy(), (a & 7) | b ^ 5)
    np.testing.assert_array_equal(zyx.where(x > y, x, -y).numpy(), np.where(a > b, a, -b))
    zero = t(np.where(b > 4, 0, b).astype(np.int32), sim)
    with pytest.raises(zyx.DivisionByZeroError):
        (x // zero).numpy()  # the error flag (an atomic_or) set by some work-items


@pytest.mark.parametrize("dtype", [zyx.bfloat16, zyx.float16, zyx.float8_e4m3, zyx.float8_e5m2],
                         ids=lambda d: d.name)
def test_emulated_float_arithmetic_and_casts(sim, dtype):
    """16- and 8-bit floats stored in their width, computed in float32, each result rounded (Oclgrind
    has no cl_khr_fp16, so float16 takes the emulated path too)."""
    a, b = rnd((5, 13), 5), rnd((13, 5), 6)
    x, y = t(a, sim).cast(dtype), t(b, sim).cast(dtype)
    ha, hb = a.astype(dtype.numpy), b.astype(dtype.numpy)
    got = (x * y.T + 0.25).cast(zyx.float32).numpy()
    want = ((ha.astype(np.float32) * hb.T.astype(np.float32)).astype(dtype.numpy).astype(np.float32)
            + np.float32(0.25)).astype(dtype.numpy).astype(np.float32)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(x.cast(zyx.int32).numpy(), ha.astype(np.float32).astype(np.int32))
    np.testing.assert_array_equal(x.T.cast(zyx.float64).numpy(), ha.T.astype(np.float64))
    np.testing.assert_array_equal(x.cast(zyx.bfloat16).numpy().view(np.uint16),
                                  ha.astype(np.float32).astype(zyx.bfloat16.numpy).view(np.uint16))


@pytest.mark.parametrize("shape, axis", [((3, 301), 1), ((1001,), None), ((5, 3, 299), (1, 2)), ((301, 3), 0),
                                         ((2, 7, 5), 1), ((7, 64), 1)])
def test_reduces(sim, shape, axis):
    """Few outputs over a long axis take grouped (split) reductions with local-memory partials."""
    a = rnd(shape, 7)
    a.reshape(-1)[len(a.reshape(-1)) // 3] = 5.0
    x = t(a, sim)
    close(x.sum(axis), a.astype(np.float64).sum(axis), rtol=1e-5, atol=1e-5)
    close(x.max(axis), a.max(axis))
    close(x.mean(axis, keepdim=True) * 2, a.mean(axis, keepdims=True) * 2, atol=1e-5)
    close(x.var(axis), a.var(axis, ddof=1), rtol=1e-4, atol=1e-6)
    if axis is None or isinstance(axis, int):
        np.testing.assert_array_equal(x.argmax(axis).numpy(), a.argmax(axis))
        np.testing.assert_array_equal(x.argmin(axis).numpy(), a.argmin(axis))
    ints = (a * 100).astype(np.int32)
    np.testing.assert_array_equal(t(ints, sim).sum(axis).numpy(), ints.astype(np.int64).sum(axis))
    h = a.astype(np.float16)
    close(t(h, sim).sum(axis), h.astype(np.float32).sum(axis), rtol=2e-3, atol=2e-2)


def test_reduce_opts_are_split_on_the_simulator(sim):
    k = Kernel((1,), (1001,), (dt.float32, dt.float32), expr.Reduce("sum", expr.Load(1, dt.float32, red_var(0, 1001)),
                                                                     dt.float32))
    o = default_opts(k, sim.max_work_group_size, sim.info)
    assert o.split > 1 and "barrier(CLK_LOCAL_MEM_FENCE)" in kernel_source(k, o)


@pytest.mark.parametrize("mode", ["gpu", "cpu"])
def test_row_kernels(sim, monkeypatch, mode):
    """GPU: one row a work-item, scalar loops; CPU: vector loops, softmax storing exp(x - max) and reading it
    back."""
    monkeypatch.setattr(settings, "HEURISTICS", mode)
    a = rnd((5, 37), 8) * 4
    x = t(a, sim)
    e = np.exp(a - a.max(1, keepdims=True))
    close(x.softmax(-1), e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-7)
    close(x.log_softmax(-1), np.log(e / e.sum(1, keepdims=True)), rtol=1e-5, atol=1e-5)
    w, b = rnd(37, 9), rnd(37, 10)
    mu = a.mean(1, keepdims=True)
    want = (a - mu) / np.sqrt(((a - mu) ** 2).mean(1, keepdims=True) + 1e-5) * w + b
    close(F.layer_norm(x, (37,), t(w, sim), t(b, sim)), want, rtol=1e-4, atol=1e-5)
    close(x.T.softmax(0), (e / e.sum(1, keepdims=True)).T, rtol=1e-5, atol=1e-7)  # a column softmax


@pytest.mark.parametrize("mode", ["gpu", "cpu"])
@pytest.mark.parametrize("n, m, k", [(12, 20, 9), (13, 7, 11), (1, 9, 5), (17, 16, 8)])
def test_matmul_through_the_api(sim, monkeypatch, mode, n, m, k):
    """GPU: 4 x 4 register tiles where the sizes divide; CPU: rows x 2 vectors, clamped last tiles."""
    monkeypatch.setattr(settings, "HEURISTICS", mode)
    a, b = rnd((n, k), 11), rnd((k, m), 12)
    close(t(a, sim) @ t(b, sim), a @ b, rtol=1e-5, atol=1e-5)
    close(t(a.T, sim).T @ t(b, sim), a @ b, rtol=1e-5, atol=1e-5)  # a transposed operand
    c = rnd((3, n, k), 13)
    close(t(c, sim) @ t(b, sim), c @ b, rtol=1e-5, atol=1e-5)  # batched


def _matmul(n: int, m: int, kk: int) -> Kernel:
    i, j, r = out_var(0, n), out_var(1, m), red_var(0, kk)
    a = expr.Load(1, dt.float32, sym.add(sym.mul(i, kk), r))
    b = expr.Load(2, dt.float32, sym.add(sym.mul(r, m), j))
    return Kernel((n, m), (kk,), (dt.float32,) * 3, expr.Reduce("sum", expr.Alu("mul", (a, b), dt.float32), dt.float32))


def _rows(op: str, rows: int, cols: int) -> Kernel:
    i, r = out_var(0, rows), red_var(0, cols)
    out = dt.int64 if op.startswith("arg") else dt.float32
    x = expr.Load(1, dt.float32, sym.add(sym.mul(i, cols), r))
    return Kernel((rows, 1), (cols,), (out, dt.float32), expr.Reduce(op, x, out))


def _ew(rows: int, cols: int) -> Kernel:
    i, j = out_var(0, rows), out_var(1, cols)
    v = expr.Load(1, dt.float32, sym.add(sym.mul(i, cols), j))
    return Kernel((rows, cols), (), (dt.float32, dt.float32), expr.Alu("exp", (expr.Alu("mul", (v, v), dt.float32),),
                                                                      dt.float32))


def _run(sim, k: Kernel, opts: Opts, *inputs: np.ndarray) -> np.ndarray:
    ins = [transfer.upload(sim, np.ascontiguousarray(a)) for a in inputs]
    out = sim.pool.allocate(k.numel * k.out_dtype.itemsize)  # fresh: a skipped element is an uninitialized read
    launch_kernel(sim, k, opts, [out.cl] + [b.cl for b in ins])
    return transfer.read(out).view(k.out_dtype.numpy).reshape(k.out_shape)


HAND_OPTS = [
    ("matmul clamped 4x4 tiles", lambda: _matmul(13, 11, 7), Opts(local=8, upcast=(4, 4), unroll=2)),
    ("matmul 2x2 tiles, vec 4 masked", lambda: _matmul(9, 10, 5), Opts(local=4, upcast=(2, 1), vec=4, vec_axis=1)),
    ("split 16, unroll tail", lambda: _rows("sum", 5, 301), Opts(local=32, split=16, unroll=2)),
    ("split 4 with vector partials", lambda: _rows("max", 3, 203), Opts(local=8, split=4, vec=4, vec_axis=2)),
    ("argmax split 8", lambda: _rows("argmax", 3, 129), Opts(local=16, split=8)),
    ("reduce vec 8 + scalar tail", lambda: _rows("sum", 3, 45), Opts(local=2, vec=8, vec_axis=2, unroll=2)),
    ("elementwise vec 4 masked, upcast 2", lambda: _ew(5, 13), Opts(local=4, upcast=(1, 2), vec=4, vec_axis=1)),
]


@pytest.mark.parametrize("name, make, opts", HAND_OPTS, ids=[h[0] for h in HAND_OPTS])
def test_hand_picked_opts(sim, name, make, opts):
    k = make()
    if len(k.bufs) == 3:  # a matmul
        n, m = k.out_shape
        kk = k.red_shape[0]
        ins = [rnd((n, kk), 20), rnd((kk, m), 21)]
        want = ins[0] @ ins[1]
    elif k.red_shape:
        ins = [rnd((k.out_shape[0], k.red_shape[0]), 22)]
        op = k.body.op
        want = getattr(np, op)(ins[0], axis=1)[:, None] if op.startswith("arg") else \
            getattr(np, op)(ins[0].astype(np.float64), axis=1, keepdims=True)
    else:
        ins = [rnd(k.out_shape, 23)]
        want = np.exp(ins[0] * ins[0])
    got = _run(sim, k, opts, *ins)
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=1e-5, atol=1e-5)


def test_gathers(sim):
    rng = np.random.default_rng(14)
    w = rnd((11, 7), 15)
    ix = rng.integers(0, 11, (3, 5)).astype(np.int64)
    np.testing.assert_array_equal(F.embedding(t(ix, sim).T, t(w, sim)).numpy(), w[ix.T])
    with pytest.raises(IndexError, match="index out of range"):  # checked on the device, never read
        F.embedding(t(np.array([1, 11, 2], np.int64), sim), t(w, sim)).numpy()
