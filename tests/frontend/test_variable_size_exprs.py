"""Affine expressions of a bound zyx.Variable as sizes, starts and operands (``t + 1``, ``2 * t``,
``10 - t``): values against NumPy at several bound values (min and max included), one compile for
the whole range, one jit plan; an expression whose range leaves the tensor goes by value."""
from __future__ import annotations

import numpy as np
import pytest
from varsize_checks import close, flat_compiles, np_softmax

import zyx
import zyx.nn.functional as F
from zyx.backend.program import BuildStats
from zyx.frontend.tape import plan_stats
from zyx.frontend.tensor import VarTensor
from zyx.ir.variable import BoundExpr

pytestmark = pytest.mark.needs_device

RNG = np.random.default_rng(162)
XN = RNG.standard_normal((10, 5)).astype(np.float32)
X = None  # the device tensor of XN, made by ``inputs`` (creating it needs a device)
T = zyx.Variable("t", 0, 10)
T1 = zyx.Variable("t1", 1, 7)
VALUES = (0, 1, 4, 9, 10)


@pytest.fixture(autouse=True, scope="module")
def inputs() -> None:
    global X
    X = zyx.tensor(XN)


def test_slices_by_expressions_keep_one_kernel_and_the_expression_as_the_size():
    q = zyx.tensor(RNG.standard_normal((3, 5)).astype(np.float32))
    qn = q.numpy()

    def check(v):
        t = T.bind(v)
        y = X[:t + 1]  # the end may pass the tensor (t = 10): Python's clamp, still one kernel
        assert type(y) is VarTensor
        close(y, XN[:v + 1])
        if v < 10:
            assert type(y.shape[0]) is BoundExpr and y.shape == (v + 1, 5)
        close(X[10 - t:], XN[10 - v:])  # a start that counts down
        close(X[2 * t:], XN[2 * v:])  # past the end from t = 5 on: empty, as Python
        close(X[1 + t * 0:], XN[1:])  # 0 * t: a plain int, nothing read
        close(X[:t + 1].sum(0), XN[:v + 1].sum(0), rtol=1e-5, atol=1e-5)
        close(X[:t + 1].mean(0), XN[:v + 1].mean(0), rtol=1e-5, atol=1e-5)
        close(X[:t + 1].softmax(0), np_softmax(XN[:v + 1], 0), rtol=1e-5, atol=1e-6)
        close((q @ X[:t + 1].T).softmax(-1) @ X[:t + 1], np_softmax(qn @ XN[:v + 1].T, -1) @ XN[:v + 1],
               rtol=1e-4, atol=1e-5)
    flat_compiles(check, VALUES)


def test_narrow_expand_reshape_pad_and_arange_take_expressions():
    row = zyx.tensor(XN[:1])

    def check(v):
        t = T1.bind(v)
        close(X.narrow(0, t - 1, 4), XN[v - 1:v + 3])  # starts 0..6: every value in range
        close(X.narrow(0, 1, t + 2) * 2.0, XN[1:v + 3] * 2)
        close(X.narrow(0, 8 - t, t), XN[8 - v:8])
        e = row.expand(t + 3, 5)
        assert type(e) is VarTensor and e.shape == (v + 3, 5)
        close(e + X[:t + 3], XN[:1] + XN[:v + 3])
        close(row.expand(2 * t, 5), np.broadcast_to(XN[:1], (2 * v, 5)))
        close(X[:t + 1].reshape(t + 1, 5, 1).sum(1), XN[:v + 1].reshape(v + 1, 5, 1).sum(1))
        close(F.pad(X[:t], (0, 0, 1, t - 1), value=2.0),
               np.pad(XN[:v], ((1, v - 1), (0, 0)), constant_values=2.0))
        close(zyx.arange(t + 1), np.arange(v + 1))
        close(zyx.arange(t - 1, 2 * t), np.arange(v - 1, 2 * v))
    flat_compiles(check, (1, 2, 5, 7))


def test_expressions_as_elementwise_operands_are_kernel_arguments():
    def check(v):
        t = T.bind(v)
        close(X * (t + 1) - 2 * t, XN * (v + 1) - 2 * v, rtol=1e-6)
        close((10 - t) / X[:t + 1], (10 - v) / XN[:v + 1], rtol=1e-6)
        close(zyx.arange(10) < t + 1, np.arange(10) < v + 1)
    flat_compiles(check, VALUES)


def test_expressions_whose_range_leaves_the_tensor_go_by_value():
    for v in (0, 4):  # t - 1 < 0 for t = 0: counts from the end, as Python
        y = X[:T.bind(v) - 1]
        assert type(y) is not VarTensor
        close(y, XN[:v - 1])
    y = X.narrow(0, T.bind(3) + 1, 4)  # start + length up to 15 > 10: checked by value
    assert type(y) is not VarTensor
    close(y, XN[4:8])
    with pytest.raises(IndexError):
        X.narrow(0, T.bind(8) + 1, 4)
    with pytest.raises(zyx.ShapeError, match="outside its range"):
        T.bind(11) + 1
    big = zyx.Variable("big", 0, 1 << 30)  # a step counter: its range is far larger than its value
    a = zyx.arange(big.bind(3) + 1)
    assert type(a) is not VarTensor
    close(a, np.arange(4))


def test_jit_replays_one_plan_for_expressions_and_takes_them_as_arguments():
    @zyx.jit
    def step(x, t):
        k = x[:t + 1]
        return (k * (t + 1)).sum(0), x[2 * t:].exp(), zyx.arange(t + 1) * 1

    offset = zyx.jit(lambda x, e: x[:e] * e)
    c0 = plan_stats["captures"]
    step(X, T.bind(2))
    offset(X, T.bind(2) + 1)
    compiles = BuildStats.programs()
    for v in (0, 10, 5, 1, 9):
        a, b, c = step(X, T.bind(v))
        close(a, (XN[:v + 1] * (v + 1)).sum(0), rtol=1e-5, atol=1e-5)
        close(b, np.exp(XN[2 * v:]), rtol=1e-6)
        close(c, np.arange(v + 1))
        close(offset(X, T.bind(v) + 1), XN[:v + 1] * (v + 1))
    assert plan_stats["captures"] - c0 == 2
    assert BuildStats.programs() == compiles, "a new bound value compiled a kernel"


def test_other_uses_of_an_expression_read_its_value():
    for v in (2, 6):
        t = T.bind(v)
        close(X[t + 1], XN[v + 1])
        close(X[t - 1, 2], XN[v - 1, 2])
        assert [p.shape[0] for p in X.split(t + 1)] == [p.shape[0] for p in np.array_split(XN, range(v + 1, 10, v + 1))]
        close(X.roll(t + 1, 0), np.roll(XN, v + 1, 0))
        assert zyx.zeros(t + 1, 2).shape == (v + 1, 2)
        close(zyx.cat([X[:t + 1], X[:2]]), np.concatenate([XN[:v + 1], XN[:2]]))


def test_ring_write_at_an_expression_position_replays_under_jit():
    ring = zyx.Variable("ring_pos", 0, 100)

    @zyx.jit
    def write(dest, src, p):
        zyx.write_slice_rotating(dest, src, 0, p + 1)
        return dest * 1.0

    dest = zyx.zeros(4, 5).realize()
    want = np.zeros((4, 5), np.float32)
    c0 = plan_stats["captures"]
    for i in (0, 1, 2, 3, 4, 9):
        got = write(dest, zyx.tensor(XN[i:i + 1]), ring.bind(i))
        want[(i + 1) % 4] = XN[i]
        close(got, want)
    assert plan_stats["captures"] - c0 == 1
