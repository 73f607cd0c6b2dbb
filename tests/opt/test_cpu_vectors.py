"""CPU heuristics (zyx/opt/heuristics.py) on where explicit vector lanes go. A reduce shorter than a vector: a
channels-last 2x2 max pool reads a small window table contiguously along the reduce, but its lanes belong
along the contiguous outputs (16 channels a vector, not 2 window places); with outputs that are not
contiguous the reduce keeps them. Plain arithmetic: over a flat index PoCL vectorizes it across work items
by itself, over two axes (a per-channel operand, BatchNorm's input gradient) it gets explicit vectors
(measured 0.55 -> 0.05 ms at 12544 x 64)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from zyx import dtype as dt
from zyx import settings
from zyx.ir import expr
from zyx.ir import symbolic as sym
from zyx.ir.kernel import Kernel, out_var, red_var
from zyx.opt.heuristics import default_opts

AVX512 = SimpleNamespace(kind="cpu", preferred_vector_width={"float": 16, "double": 8}, compute_units=2)


@pytest.fixture(autouse=True)
def by_kind(monkeypatch):
    monkeypatch.setattr(settings, "HEURISTICS", "auto")  # the described device's own kind


def _pool(channels_last: bool) -> Kernel:
    """max over a 2x2 window of x (8, 16, 16, 32) (channels last) or (8, 32, 16, 16), times a (2, 2) table
    read along the window: out (8, 8, 8, 32) or (8, 32, 8, 8)."""
    o = [out_var(i, s) for i, s in enumerate((8, 8, 8, 32) if channels_last else (8, 32, 8, 8))]
    r0, r1 = red_var(0, 2), red_var(1, 2)
    if channels_last:
        n, i, j, c = o
        xi = sym.add(sym.mul(n, 8192), sym.mul(i, 1024), sym.mul(r0, 512), sym.mul(j, 64), sym.mul(r1, 32), c)
    else:
        n, c, i, j = o
        xi = sym.add(sym.mul(n, 8192), sym.mul(c, 256), sym.mul(i, 32), sym.mul(r0, 16), sym.mul(j, 2), r1)
    x = expr.Load(1, dt.float32, xi)
    table = expr.Load(2, dt.float32, sym.add(sym.mul(r0, 2), r1))
    body = expr.Reduce("max", expr.Alu("mul", (x, table), dt.float32), dt.float32)
    return Kernel((8, 8, 8, 32) if channels_last else (8, 32, 8, 8), (2, 2), (dt.float32,) * 3, body)


def test_short_reduce_vectorizes_along_contiguous_outputs():
    o = default_opts(_pool(True), 256, AVX512)
    assert o.vec == 16 and o.vec_axis == 3  # the channels, not the window


def test_short_reduce_keeps_its_lanes_when_outputs_are_strided():
    o = default_opts(_pool(False), 256, AVX512)
    assert (o.vec, o.vec_axis) == (2, 5)  # the last window axis, as before


def _affine(rows: int, cols: int) -> Kernel:
    """``(x - m) * s``: x (rows, cols) with per-column m and s, or (``rows`` 0) a flat x (cols,) with scalars."""
    if rows:
        i, j = out_var(0, rows), out_var(1, cols)
        xi, pi, shape = sym.add(sym.mul(i, cols), j), j, (rows, cols)
    else:
        xi, pi, shape = out_var(0, cols), sym.num(0), (cols,)
    x, m, s = (expr.Load(b, dt.float32, idx) for b, idx in ((1, xi), (2, pi), (3, pi)))
    body = expr.Alu("mul", (expr.Alu("sub", (x, m), dt.float32), s), dt.float32)
    return Kernel(shape, (), (dt.float32,) * 4, body)


def test_plain_arithmetic_over_two_axes_gets_explicit_vectors():
    o = default_opts(_affine(12544, 64), 256, AVX512)
    assert o.vec == 16 and o.vec_axis == 1


def test_plain_arithmetic_over_a_flat_index_is_left_to_pocl():
    o = default_opts(_affine(0, 1 << 16), 256, AVX512)
    assert o.vec == 1
