"""In-place writes and tensors of variable size (README "Variable sizes"): every in-place write into a
tensor of variable size raises ``ShapeError`` and writes nothing (the tensor it was sliced from keeps
its values); a tensor of variable size as the *source* of an in-place write into a static tensor is
read at its bound values (checked against NumPy)."""
from __future__ import annotations

import numpy as np
import pytest

import zyx
import zyx.nn.init as init
from zyx.frontend.tensor import VarTensor

pytestmark = pytest.mark.needs_device

RNG = np.random.default_rng(1709)
XN = RNG.standard_normal((6, 4)).astype(np.float32)
YN = RNG.standard_normal((6, 4)).astype(np.float32)
T = zyx.Variable("t", 0, 6)
S = zyx.Variable("s", 0, 4)
C = zyx.Variable("c", 0, 2)  # a column start whose slice of 2 stays inside the 4 columns
N = zyx.Variable("n", 0, 5)  # narrow(0, 1, n) stays inside the 6 rows: a variable size, not by value
FRAGMENT = "in-place writes into a tensor of variable size are not supported"


def _ix(*rows: int) -> zyx.Tensor:
    return zyx.tensor(np.array(rows, np.int64))


# (id, how the tensor of variable size is made from X and t, the in-place write, the label the message
# starts with); each write is one every in-place path of Tensor, nn.init and the optimizers has
SLICE = lambda X, t: X[:T.bind(t)]  # noqa: E731 - a table of one-line makers
WRITES = [
    ("setitem_int", SLICE, lambda a: a.__setitem__(0, 1.0), "x[...] = value"),
    ("setitem_slice", SLICE, lambda a: a.__setitem__(slice(1, 2), 1.0), "x[...] = value"),
    ("setitem_ellipsis_tensor", SLICE, lambda a: a.__setitem__(Ellipsis, zyx.zeros(4)), "x[...] = value"),
    ("setitem_column", SLICE, lambda a: a.__setitem__((slice(None), 1), 2.0), "x[...] = value"),
    ("setitem_int_tensor_index", SLICE, lambda a: a.__setitem__(_ix(0, 1), 5.0), "x[...] = value"),
    ("setitem_list_index", SLICE, lambda a: a.__setitem__([0, 1], 5.0), "x[...] = value"),
    ("setitem_mixed_index", SLICE, lambda a: a.__setitem__((slice(None), _ix(3)), 5.0), "x[...] = value"),
    ("setitem_bool_mask", SLICE, lambda a: a.__setitem__(a > 0, 0.0), "x[...] = value"),
    ("index_put_", SLICE, lambda a: a.index_put_((_ix(0, 1),), zyx.tensor(7.0)), "index_put_"),
    ("index_put_accumulate", SLICE, lambda a: a.index_put_([_ix(0, 0)], zyx.ones(2, 4), accumulate=True),
     "index_put_"),
    ("scatter_src", SLICE, lambda a: a.scatter_(0, _ix(0, 1, 0, 1).reshape(1, 4), zyx.ones(1, 4)), "scatter_"),
    ("scatter_value", SLICE, lambda a: a.scatter_(1, _ix(0, 2).reshape(1, 2), value=3.0), "scatter_"),
    ("scatter_add_", SLICE, lambda a: a.scatter_add_(0, _ix(0, 1, 0, 1).reshape(1, 4), zyx.ones(1, 4)),
     "scatter_add_"),
    ("write_slice", SLICE, lambda a: zyx.write_slice(a, zyx.ones(1, 4), [(0, 1), (0, 4)]), "write_slice"),
    ("write_slice_rotating", SLICE, lambda a: zyx.write_slice_rotating(a, zyx.ones(1, 4), 0, 1),
     "write_slice_rotating"),
    ("write_slice_doff", SLICE, lambda a: zyx.write_slice_doff(a, zyx.ones(1, 4), 0, _ix(0)), "write_slice_doff"),
    ("assign", SLICE, lambda a: a._assign(a + 1.0), "_assign"),
    ("init_zeros_", SLICE, init.zeros_, "x[...] = value"),
    ("init_uniform_", SLICE, init.uniform_, "x[...] = value"),
    ("sgd_param", SLICE, lambda a: zyx.optim.SGD([a], lr=0.1), "SGD: params[0]"),
    ("adam_param_group", SLICE, lambda a: zyx.optim.Adam([{"params": [zyx.zeros(2)]}, {"params": a}]),
     "Adam: params[0]"),
    # views of a tensor of variable size keep the variable size: still refused
    ("transposed_view", SLICE, lambda a: a.T.__setitem__(0, 1.0), "x[...] = value"),
    ("column_view", SLICE, lambda a: a[:, 0].index_put_((_ix(0),), zyx.tensor(1.0)), "index_put_"),
    ("flattened_view", SLICE, lambda a: a.reshape(-1).scatter_(0, _ix(0), value=1.0), "scatter_"),
    ("contiguous_is_itself", SLICE, lambda a: a.contiguous().__setitem__(0, 1.0), "x[...] = value"),
    # the other ways to get a variable size: a variable start, an affine bound, narrow, expand
    ("variable_start", lambda X, t: X[S.bind(min(t, 4)):], lambda a: a.__setitem__(0, 1.0), "x[...] = value"),
    ("variable_start_inner", lambda X, t: X[:, S.bind(min(t, 4)):], lambda a: a.__setitem__((0, 0), 1.0),
     "x[...] = value"),
    ("affine_bound", lambda X, t: X[:T.bind(min(t, 5)) + 1], lambda a: a.__setitem__(_ix(0), 1.0),
     "x[...] = value"),
    ("narrow", lambda X, t: X.narrow(0, 1, N.bind(min(t, 5))), lambda a: a.scatter_add_(
        1, _ix(0).reshape(1, 1), zyx.ones(1, 1)), "scatter_add_"),
    ("expand", lambda X, t: X[:1].expand(T.bind(t), 4), lambda a: a.__setitem__(0, 1.0), "x[...] = value"),
]


@pytest.mark.parametrize("t", (0, 3, 6))
@pytest.mark.parametrize(("make", "write", "what"), [w[1:] for w in WRITES], ids=[w[0] for w in WRITES])
def test_an_in_place_write_into_a_variable_size_raises_and_writes_nothing(make, write, what, t):
    X = zyx.tensor(XN)
    a = make(X, t)
    assert type(a) is VarTensor
    with pytest.raises(zyx.ShapeError, match=FRAGMENT) as info:
        write(a)
    assert str(info.value).startswith(f"{what}: "), str(info.value)
    assert "int bounds" in str(info.value) and ".clone()" in str(info.value)  # what to do instead
    np.testing.assert_array_equal(X.numpy(), XN)
    np.testing.assert_array_equal(a.numpy(), make(zyx.tensor(XN), t).numpy())  # and a reads as before


def test_other_tensors_of_variable_size_refuse_writes_too():
    for a in (zyx.arange(T.bind(3), dtype=zyx.float32), zyx.ones(2, 2).pad((0, T.bind(1)))):
        assert type(a) is VarTensor
        with pytest.raises(zyx.ShapeError, match=FRAGMENT):
            a[0] = 5.0
        with pytest.raises(zyx.ShapeError, match=FRAGMENT):
            a.index_put_((_ix(0),), zyx.tensor(5.0))
    np.testing.assert_array_equal(zyx.arange(T.bind(3), dtype=zyx.float32).numpy(), np.arange(3))


def test_a_write_under_jit_raises_at_the_capture_and_writes_nothing():
    X = zyx.tensor(XN)

    @zyx.jit
    def step(x, t):
        x[:t][0] = 1.0
        return x * 2.0

    with pytest.raises(zyx.ShapeError, match=FRAGMENT):
        step(X, T.bind(3))
    np.testing.assert_array_equal(X.numpy(), XN)


def test_a_variable_size_cannot_be_made_to_require_grad_for_an_optimizer():
    a = zyx.tensor(XN)[:T.bind(3)]
    with pytest.raises(zyx.AutogradError, match="variable size"):
        a.requires_grad = True
    assert a.requires_grad is False
    a.requires_grad = False  # allowed: nothing to change


def test_the_ways_out_the_message_names_work():
    X = zyx.tensor(XN)
    t = T.bind(3)
    X[:int(t)] = 0.0  # the full tensor with int bounds
    want = XN.copy()
    want[:3] = 0.0
    np.testing.assert_array_equal(X.numpy(), want)
    c = zyx.tensor(XN)[:t].clone()  # a plain copy
    assert type(c) is zyx.Tensor
    c[0] = 9.0
    cn = XN[:3].copy()
    cn[0] = 9.0
    np.testing.assert_array_equal(c.numpy(), cn)


# ------------------------------------------------------------------ a variable size as the source

def _np_scatter(w: np.ndarray, idx: np.ndarray, src: np.ndarray, add: bool) -> None:
    for i in range(idx.shape[0]):
        for j in range(idx.shape[1]):
            if add:
                w[idx[i, j], j] += src[i, j]
            else:
                w[idx[i, j], j] = src[i, j]


SCATTER_IDX = np.array([[5, 0, 2, 1], [0, 4, 3, 3]], np.int64)  # unique per column: scatter_ is defined


def _rows(t: int) -> np.ndarray:
    return np.array([5, 0, 3, 1, 4, 2][:t], np.int64)


# (id, write into Y from the tensor of variable size a = X[:t] (t its bound value), NumPy's write into
# w from s = XN[:t]); the index tensors and write positions follow t, the destinations are static
SOURCES = [
    ("setitem_slice", lambda Y, a, t: Y.__setitem__(slice(1, 1 + t), a),
     lambda w, s, t: w.__setitem__(slice(1, 1 + t), s)),
    ("setitem_column", lambda Y, a, t: Y.__setitem__((slice(0, t), 2), a[:, 0]),
     lambda w, s, t: w.__setitem__((slice(0, t), 2), s[:, 0])),
    ("setitem_tensor_index", lambda Y, a, t: Y.__setitem__(zyx.tensor(_rows(t)), a),
     lambda w, s, t: w.__setitem__(_rows(t), s)),
    ("index_put_", lambda Y, a, t: Y.index_put_((zyx.tensor(_rows(t)),), a),
     lambda w, s, t: w.__setitem__(_rows(t), s)),
    ("index_put_accumulate", lambda Y, a, t: Y.index_put_((zyx.tensor(_rows(t) % 2),), a, accumulate=True),
     lambda w, s, t: np.add.at(w, _rows(t) % 2, s)),
    ("scatter_", lambda Y, a, t: Y.scatter_(0, zyx.tensor(SCATTER_IDX), a),
     lambda w, s, t: _np_scatter(w, SCATTER_IDX, s, False)),
    ("scatter_add_", lambda Y, a, t: Y.scatter_add_(0, zyx.tensor(SCATTER_IDX), a),
     lambda w, s, t: _np_scatter(w, SCATTER_IDX, s, True)),
    ("write_slice", lambda Y, a, t: zyx.write_slice(Y, a, [(6 - t, 6), (0, 4)]),
     lambda w, s, t: w.__setitem__(slice(6 - t, 6), s)),
    ("write_slice_rotating", lambda Y, a, t: zyx.write_slice_rotating(Y, a, 0, 5),
     lambda w, s, t: w.__setitem__((np.arange(t) + 5) % 6, s)),
    ("write_slice_doff", lambda Y, a, t: zyx.write_slice_doff(Y, a, 0, _ix(1)),
     lambda w, s, t: w.__setitem__(slice(1, 1 + t), s)),
]


@pytest.mark.parametrize("t", (2, 5))
@pytest.mark.parametrize(("write", "np_write"), [s[1:] for s in SOURCES], ids=[s[0] for s in SOURCES])
def test_a_variable_size_as_the_source_is_read_at_its_bound_values(write, np_write, t):
    X, Y = zyx.tensor(XN), zyx.tensor(YN)
    a = X[:T.bind(t)]
    assert type(a) is VarTensor
    write(Y, a, t)
    want = YN.copy()
    np_write(want, XN[:t].copy(), t)
    np.testing.assert_allclose(Y.numpy(), want, rtol=1e-6, atol=1e-7)  # sums may add in another order
    np.testing.assert_array_equal(X.numpy(), XN)  # the source is only read


@pytest.mark.parametrize("t", (0, 2, 3))
def test_a_source_sliced_from_the_destination_is_read_before_the_write(t):
    X = zyx.tensor(XN)
    X[2:2 + t] = X[:T.bind(t)]  # overlapping rows when t = 3
    want = XN.copy()
    want[2:2 + t] = XN[:t].copy()
    np.testing.assert_array_equal(X.numpy(), want)
    X = zyx.tensor(XN)
    X.index_put_((zyx.tensor(_rows(t)),), X[:T.bind(t)])
    want = XN.copy()
    want[_rows(t)] = XN[:t].copy()
    np.testing.assert_array_equal(X.numpy(), want)


def test_a_variable_size_as_a_gradient_and_a_checkpoint_value():
    """The optimizers' in-place update reads a gradient of variable size at its bound values, and
    load_state_dict copies one into a static parameter."""
    X = zyx.tensor(XN)
    p = zyx.tensor(YN[:3], requires_grad=True)
    p.grad = X[:T.bind(3)]
    zyx.optim.SGD([p], lr=0.5).step()
    np.testing.assert_allclose(p.detach().numpy(), YN[:3] - 0.5 * XN[:3], rtol=1e-6)
    lin = zyx.nn.Linear(4, 3)
    lin.load_state_dict({"weight": X[:T.bind(3)], "bias": X[0, :3]})
    np.testing.assert_array_equal(lin.weight.detach().numpy(), XN[:3])
    np.testing.assert_array_equal(lin.bias.detach().numpy(), XN[0, :3])
    np.testing.assert_array_equal(X.numpy(), XN)


# A slice or narrow at a variable start with a static length is a plain tensor, but a gathered copy where
# PyTorch has a view of X: a write into it (or into a view of it) would not reach X, so it is refused too.
GATHERED = [
    ("slice", lambda X, s: X[S.bind(s):S.bind(s) + 2]),
    ("narrow", lambda X, s: X.narrow(0, S.bind(s), 2)),
    ("inner_axis", lambda X, s: X[:, C.bind(s % 3):C.bind(s % 3) + 2]),
]
GATHERED_WRITES = [
    ("setitem", lambda b: b.__setitem__(0, 1.0), "x[...] = value"),
    ("setitem_view", lambda b: b[0:1].__setitem__(0, 1.0), "x[...] = value"),
    ("transposed_view", lambda b: b.T.__setitem__(0, 1.0), "x[...] = value"),
    ("index_put_", lambda b: b.index_put_((_ix(0),), zyx.tensor(7.0)), "index_put_"),
    ("scatter_add_", lambda b: b.scatter_add_(0, _ix(0, 1).reshape(1, 2), zyx.ones(1, 2)), "scatter_add_"),
    ("write_slice", lambda b: zyx.write_slice(b, zyx.ones(1, 2), [(0, 1), (0, 2)]), "write_slice"),
]


@pytest.mark.parametrize("make", [m for _, m in GATHERED], ids=[i for i, _ in GATHERED])
@pytest.mark.parametrize("write,label", [(w, lab) for _, w, lab in GATHERED_WRITES],
                         ids=[i for i, _, _ in GATHERED_WRITES])
@pytest.mark.parametrize("s", [1, 3])
def test_writes_into_a_slice_at_a_variable_start_raise(make, write, label: str, s: int) -> None:
    X = zyx.tensor(XN)
    b = make(X, s)
    assert type(b) is not VarTensor and all(type(d) is int for d in b.shape)
    before = b.numpy().copy()
    with pytest.raises(zyx.ShapeError, match="sliced at a variable start") as info:
        write(b)
    assert str(info.value).startswith(label) and ".clone()" in str(info.value)
    np.testing.assert_array_equal(X.numpy(), XN)
    np.testing.assert_array_equal(b.numpy(), before)


def test_a_clone_of_a_slice_at_a_variable_start_is_writable() -> None:
    X = zyx.tensor(XN)
    c = X[S.bind(2):S.bind(2) + 2].clone()
    c[0] = 5.0
    want = XN[2:4].copy()
    want[0] = 5.0
    np.testing.assert_array_equal(c.numpy(), want)
    np.testing.assert_array_equal(X.numpy(), XN)
