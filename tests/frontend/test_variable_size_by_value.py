"""Ops without a variable form read a tensor of variable size at its bound values (README "Variable
sizes"): their results are plain tensors whose ``shape``, ``size()`` and ``numel()`` are Python ints
(no ``BoundVariable``/``BoundExpr`` may leak into a plain shape, nor into a kernel's sizes), and
their values equal NumPy's at each bound value. Ops with a variable form keep it."""
from __future__ import annotations

import math

import numpy as np
import pytest

import zyx
import zyx.nn.functional as F
from zyx.frontend.tensor import VarTensor
from zyx.ir.variable import BoundExpr, BoundVariable

pytestmark = pytest.mark.needs_device

RNG = np.random.default_rng(163)
XN = RNG.standard_normal((10, 5)).astype(np.float32)
T = zyx.Variable("t_by_value", 1, 10)
VALUES = (3, 7)
X = None  # the device tensor of XN (creating it needs a device)


@pytest.fixture(autouse=True, scope="module")
def inputs() -> None:
    global X
    X = zyx.tensor(XN)


def _torch(f):
    def run(a):
        torch = pytest.importorskip("torch")  # the device-free tier has no PyTorch
        return f(torch.from_numpy(a)).numpy()
    return run


def _zeros_index(rows: int) -> zyx.Tensor:
    return zyx.tensor(np.zeros((rows, 5), np.int64))


# name: (the op on the variable slice ``a = X[:t]`` (and ``t``), the same on NumPy's ``XN[:t]``)
OPS = {
    "cat_dim0": (lambda a, t: zyx.cat([a, a], 0), lambda a: np.concatenate([a, a], 0)),
    "cat_dim1": (lambda a, t: zyx.cat([a, a, a], 1), lambda a: np.concatenate([a, a, a], 1)),
    "cat_with_static": (lambda a, t: zyx.cat([a, X], 0), lambda a: np.concatenate([a, XN], 0)),
    "stack": (lambda a, t: zyx.stack([a, a], 1), lambda a: np.stack([a, a], 1)),
    "stack_transposed": (lambda a, t: zyx.stack([a.T, a.T]), lambda a: np.stack([a.T, a.T])),
    "pad": (lambda a, t: a.pad((1, 2, 2, 0)), lambda a: np.pad(a, ((2, 0), (1, 2)))),
    "pad_reflect": (lambda a, t: F.pad(a[None], (1, 1), mode="reflect"),
                    lambda a: np.pad(a[None], ((0, 0), (0, 0), (1, 1)), mode="reflect")),
    "reshape_minus_one": (lambda a, t: a.reshape(-1), lambda a: a.reshape(-1)),
    "reshape_transposed": (lambda a, t: a.T.reshape(5, -1), lambda a: a.T),
    "reshape_variable_first": (lambda a, t: a.reshape(t, 5, 1), lambda a: a[:, :, None]),
    "expand": (lambda a, t: a.unsqueeze(0).expand(3, -1, -1), lambda a: np.broadcast_to(a, (3, *a.shape))),
    "expand_to_variable": (lambda a, t: a[:, :1].expand(t, 4), lambda a: np.broadcast_to(a[:, :1], (len(a), 4))),
    "contiguous_transposed": (lambda a, t: a.T.contiguous(), lambda a: a.T),
    "clone": (lambda a, t: a.clone(), lambda a: a),
    "flip": (lambda a, t: a.flip(0), lambda a: a[::-1]),
    "roll": (lambda a, t: a.roll(1, 0), lambda a: np.roll(a, 1, 0)),
    "tril": (lambda a, t: a.tril(), np.tril),
    "cumsum": (lambda a, t: a.cumsum(0), lambda a: a.cumsum(0)),
    "cummax": (lambda a, t: a.cummax(0), _torch(lambda a: a.cummax(0)[0])),  # values and indices
    "sort": (lambda a, t: a.sort(0).values, lambda a: np.sort(a, 0)),
    "argsort": (lambda a, t: a.argsort(0), lambda a: np.argsort(a, 0, kind="stable")),
    "index_select": (lambda a, t: a.index_select(1, zyx.tensor([0, 2])), lambda a: a[:, [0, 2]]),
    "index_by_tensor": (lambda a, t: a[zyx.tensor([0, 2])], lambda a: a[[0, 2]]),
    "index_by_variable_tensor": (lambda a, t: X[zyx.arange(t) % 3], lambda a: XN[np.arange(len(a)) % 3]),
    "scatter_add_variable_source": (lambda a, t: zyx.zeros(3, 5).scatter_add(0, _zeros_index(len(a)), a),
                                    lambda a: np.concatenate([a.sum(0, keepdims=True), np.zeros((2, 5))])),
    "scatter_add_into_variable": (lambda a, t: a.scatter_add(0, _zeros_index(2), X[:2]),
                                  lambda a: a + np.concatenate([XN[:2].sum(0, keepdims=True),
                                                                np.zeros((len(a) - 1, 5))])),
    "ellipsis_slice": (lambda a, t: a[..., 1:3], lambda a: a[..., 1:3]),
}


def _tensors(y):
    if isinstance(y, (tuple, list)):
        for z in y:
            yield from _tensors(z)
    else:
        yield y


def _check_shape(y, want: tuple[int, ...]) -> None:
    shape = y.shape
    assert tuple(int(d) for d in shape) == want
    if type(y) is VarTensor:  # a variable size is the bound variable or expression itself, else an int
        assert all(type(d) in (int, BoundVariable, BoundExpr) for d in shape), shape
        return
    assert type(shape) is tuple and all(type(d) is int for d in shape), f"a non-int size in {shape!r}"
    assert y.size() == shape and all(type(y.size(d)) is int for d in range(y.ndim))
    assert type(y.numel()) is int and y.numel() == math.prod(want)


@pytest.mark.parametrize("name", list(OPS))
def test_ops_without_a_variable_form_give_int_shapes_and_numpy_values(name):
    op, ref = OPS[name]
    for t in VALUES:
        a = X[:T.bind(t)]
        assert type(a) is VarTensor
        got = list(_tensors(op(a, T.bind(t))))
        want = ref(XN[:t])
        for y in got[:1]:  # cummax: the values first (its indices are checked by shape)
            _check_shape(y, want.shape)
            np.testing.assert_allclose(y.numpy(), want, rtol=1e-5, atol=1e-6)
        for y in got[1:]:
            _check_shape(y, want.shape)


def test_a_plain_result_of_a_variable_slice_feeds_shape_code():
    """Code that computes with a by-value result's shape sees ints (``cat`` once left ``t + 10``)."""
    for t in VALUES:
        y = zyx.cat([X[:T.bind(t)], X], 0)
        n = y.shape[0]
        assert type(n) is int and n == t + 10
        assert zyx.zeros(y.shape).shape == (t + 10, 5)
        np.testing.assert_allclose((y.reshape(5, -1) * 2).numpy(), np.concatenate([XN[:t], XN]).reshape(5, -1) * 2)


def test_jit_keys_a_by_value_op_by_the_bound_value():
    """A capture that reads a variable slice by value (``cat``) keys its plan by the value: each call
    gets the result of its own value, with int sizes."""
    @zyx.jit
    def f(x, t):
        return zyx.cat([x[:t], x[:t].flip(0)], 1)

    for t in (*VALUES, VALUES[0]):
        y = f(X, T.bind(t))
        assert y.shape == (t, 10) and all(type(d) is int for d in y.shape)
        np.testing.assert_allclose(y.numpy(), np.concatenate([XN[:t], XN[:t][::-1]], 1))


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_a_large_mode_pad_of_a_variable_slice(mode):
    """A reflect/replicate/circular pad large enough for the padding kernel reads a variable slice at its bound
    value (int shapes, NumPy's values) and passes the gradient back to the tensor it was sliced from."""
    a = RNG.standard_normal((400, 300)).astype(np.float32)
    rows = zyx.Variable("pad_rows_by_value", 1, 400)
    numpy_mode = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}[mode]
    for t, grad in ((250, False), (399, False), (250, True)):
        x = zyx.tensor(a, requires_grad=grad)
        y = F.pad(x[:rows.bind(t)][None], (3, 2, 1, 4), mode=mode)
        _check_shape(y, (1, t + 5, 305))
        np.testing.assert_array_equal(y.numpy(), np.pad(a[:t][None], ((0, 0), (1, 4), (3, 2)), mode=numpy_mode))
        if not grad:
            continue
        (y * y).sum().backward()
        torch = pytest.importorskip("torch")
        tx = torch.tensor(a, requires_grad=True)
        (torch.nn.functional.pad(tx[:t][None], (3, 2, 1, 4), mode=mode) ** 2).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-5)
