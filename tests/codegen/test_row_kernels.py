"""Row kernels (``ir.kernel.row_kernel``): a reduce broadcast back along the output's last axis fused
with the elementwise work that reads it, each row's reduces computed once before a loop over its outputs.

Softmax, log_softmax and layer_norm over the last dim are one kernel each; results are compared with
PyTorch (float32 tightly, 16-bit floats within their precision) on sizes the vector width does not
divide, 3-D and non-contiguous inputs, and must have the same bits on a second run. Reduces over
another dim are not row-fused and still give the right values.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

import zyx
import zyx.nn.functional as F
from zyx import dtype as dt
from zyx.ir import expr
from zyx.ir import symbolic as sym
from zyx.ir.kernel import Kernel, Opts, out_var, red_var, row_kernel

torch = pytest.importorskip("torch")


def _count(fn):
    before = zyx.kernel_count()
    out = fn().realize()
    return zyx.kernel_count() - before, out


def _rng(shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape).astype(np.float32) * 3


def test_row_kernel_detection():
    i, j, r = out_var(0, 4), out_var(1, 8), red_var(0, 8)
    x = expr.Load(1, dt.float32, sym.add(sym.mul(i, 8), j))
    row = expr.Reduce("max", expr.Load(1, dt.float32, sym.add(sym.mul(i, 8), r)), dt.float32)
    assert row_kernel(Kernel((4, 8), (8,), (dt.float32, dt.float32), expr.Alu("sub", (x, row), dt.float32)))
    col = expr.Reduce("sum", expr.Load(1, dt.float32, sym.add(sym.mul(r, 8), j)), dt.float32)  # reads o1
    assert not row_kernel(Kernel((4, 8), (8,), (dt.float32, dt.float32), expr.Alu("sub", (x, col), dt.float32)))
    plain = expr.Reduce("sum", expr.Load(1, dt.float32, sym.add(sym.mul(i, 8), r)), dt.float32)
    assert not row_kernel(Kernel((4, 1), (8,), (dt.float32, dt.float32), plain))


@pytest.mark.parametrize("shape", [(7, 1001), (2, 3, 37)])
def test_softmax_family_one_kernel(shape):
    x = _rng(shape)
    zx = zyx.tensor(x).realize()
    tx = torch.from_numpy(x)
    n, out = _count(lambda: zx.softmax(-1))
    assert n == 1
    np.testing.assert_allclose(out.numpy(), torch.softmax(tx, -1).numpy(), rtol=1e-5, atol=1e-7)
    n, out = _count(lambda: F.log_softmax(zx, -1))
    assert n == 1
    np.testing.assert_allclose(out.numpy(), torch.log_softmax(tx, -1).numpy(), rtol=1e-5, atol=1e-5)
    again = F.log_softmax(zx, -1).numpy()
    assert np.array_equal(again.view(np.uint32), out.numpy().view(np.uint32))  # same bits every run


def test_layer_norm_one_kernel():
    x, g, b = _rng((7, 1001)), _rng((1001,), 1), _rng((1001,), 2)
    zx, zg, zb = (zyx.tensor(a).realize() for a in (x, g, b))
    n, out = _count(lambda: F.layer_norm(zx, (1001,), zg, zb))
    assert n == 1
    want = torch.nn.functional.layer_norm(*(torch.from_numpy(a) for a in (x,)), (1001,), torch.from_numpy(g),
                                          torch.from_numpy(b)).numpy()
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=2e-5)


def test_non_contiguous_and_other_dims():
    x = _rng((24, 10))
    zx = zyx.tensor(x).realize()
    tx = torch.from_numpy(x)
    n, out = _count(lambda: zx.T.softmax(-1))  # rows read with a stride
    assert n == 1
    np.testing.assert_allclose(out.numpy(), torch.softmax(tx.T, -1).numpy(), rtol=1e-5, atol=1e-7)
    n, out = _count(lambda: zx.softmax(0))  # reduce over the first dim: not a row kernel
    np.testing.assert_allclose(out.numpy(), torch.softmax(tx, 0).numpy(), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("name", ["float16", "bfloat16"])
def test_16bit(name):
    x = _rng((5, 67))
    tx = torch.from_numpy(x).to(getattr(torch, name))
    zx = zyx.tensor(tx.float().numpy()).cast(getattr(dt, name)).realize()
    n, out = _count(lambda: zx.softmax(-1))
    assert n == 1 and out.dtype.name == name
    want = torch.softmax(tx.float(), -1).to(getattr(torch, name)).float().numpy()
    got = out.cast(dt.float32).numpy()
    tol = 1e-2 if name == "bfloat16" else 1e-3
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * 1e-2)
    g = zyx.ones(67, dtype=getattr(dt, name))
    got = F.layer_norm(zx, (67,), g, g).cast(dt.float32).numpy()
    want = torch.nn.functional.layer_norm(tx.float(), (67,), torch.ones(67), torch.ones(67)).to(
        getattr(torch, name)).float().numpy()
    np.testing.assert_allclose(got, want, rtol=tol * 2, atol=tol * 2)


def test_few_long_rows_are_not_row_fused():
    x = _rng((1 << 16,))
    zx = zyx.tensor(x).realize()
    n, out = _count(lambda: zx.softmax(-1))
    assert n > 1  # one work item per row would leave the device idle
    np.testing.assert_allclose(out.numpy(), torch.softmax(torch.from_numpy(x), -1).numpy(), rtol=1e-5, atol=1e-9)
    small = zyx.tensor(x[:100]).realize()
    n, out = _count(lambda: small.softmax(0))
    assert n == 1
    np.testing.assert_allclose(out.numpy(), torch.softmax(torch.from_numpy(x[:100]), 0).numpy(), rtol=1e-5,
                               atol=1e-9)


def _softmax_kernel(rows: int, cols: int) -> Kernel:
    i, j, r = out_var(0, rows), out_var(1, cols), red_var(0, cols)
    f = dt.float32
    x, xr = (expr.Load(1, f, sym.add(sym.mul(i, cols), c)) for c in (j, r))
    m = expr.Reduce("max", xr, f)
    s = expr.Reduce("sum", expr.Alu("exp", (expr.Alu("sub", (xr, m), f),), f), f)
    e = expr.Alu("exp", (expr.Alu("sub", (x, m), f),), f)
    return Kernel((rows, cols), (cols,), (f, f), expr.Alu("div", (e, s), f))


@pytest.mark.parametrize("vec,unroll,cols", [(1, 1, 203), (4, 1, 203), (16, 2, 203), (16, 1, 17), (1, 2, 9)])
def test_row_kernel_opts(vec, unroll, cols):  # one-step loops and one-element tails included
    import pyopencl as cl

    from zyx.codegen.ir_source import kernel_source
    from zyx.kernels.ir_launch import launch_kernel

    k = _softmax_kernel(3, cols)
    opts = Opts(local=2, vec=vec, vec_axis=2, unroll=unroll)
    src = kernel_source(k, opts)
    # exp(x - max) is computed once per element (each unrolled copy, the tail) and kept in ``out``
    calls = re.findall(r"zyx_exp_float\d*\(v\d", src)
    assert len(calls) == unroll + (1 if cols % (vec * unroll) else 0)
    x = _rng((3, cols))
    dev = zyx.default_device()
    zx = zyx.tensor(x).realize()
    outs = []
    for _ in range(2):
        out = zyx.zeros(3, cols).realize()
        launch_kernel(dev, k, opts, [out._data.buffer.cl, zx._data.buffer.cl])
        res = np.empty((3, cols), np.float32)
        cl.enqueue_copy(dev.queue, res, out._data.buffer.cl)
        outs.append(res)
    np.testing.assert_allclose(outs[0], torch.softmax(torch.from_numpy(x), -1).numpy(), rtol=1e-5, atol=1e-8)
    assert np.array_equal(outs[0].view(np.uint32), outs[1].view(np.uint32))
