"""In-place arithmetic operators (``x += y`` ...) against PyTorch: values, dtypes, aliasing, views,
autograd and the errors PyTorch raises."""
from __future__ import annotations

import operator

import numpy as np
import pytest

import zyx
import zyx.nn as nn
from zyx.errors import AutogradError, DTypeError, ShapeError

pytestmark = pytest.mark.skipif(not zyx.devices(), reason="no OpenCL device available")
torch = pytest.importorskip("torch")

RNG = np.random.default_rng(7)
IOPS = [("+", operator.iadd), ("-", operator.isub), ("*", operator.imul), ("/", operator.itruediv),
        ("//", operator.ifloordiv), ("%", operator.imod), ("**", operator.ipow)]
BIT_IOPS = [("&", operator.iand), ("|", operator.ior), ("^", operator.ixor), ("<<", operator.ilshift),
            (">>", operator.irshift)]


def _same_object_written(op, a: np.ndarray, b, dtype: str) -> None:
    """``x op= y`` keeps the object, writes its storage, and equals PyTorch's in-place result."""
    x = zyx.tensor(a.copy(), dtype=dtype)
    alias = x
    y = zyx.tensor(b, dtype=dtype) if isinstance(b, np.ndarray) else b
    tx = torch.tensor(a.copy(), dtype=getattr(torch, dtype))
    ty = torch.tensor(b, dtype=getattr(torch, dtype)) if isinstance(b, np.ndarray) else b
    x = op(x, y)
    tx = op(tx, ty)
    assert x is alias and x.dtype.name == dtype
    np.testing.assert_allclose(alias.numpy().astype(np.float64), tx.numpy().astype(np.float64), rtol=1e-6)


@pytest.mark.parametrize("symbol,op", IOPS, ids=[s for s, _ in IOPS])
def test_float_operators_match_pytorch(symbol: str, op) -> None:
    a = RNG.uniform(0.5, 3, (3, 5)).astype(np.float32)
    b = RNG.uniform(0.5, 2, (5,)).astype(np.float32)  # broadcast along the rows
    _same_object_written(op, a, b, "float32")
    _same_object_written(op, a, 1.5, "float32")


INT_IOPS = IOPS[:3] + IOPS[4:6] + BIT_IOPS  # no true division (a float result) nor ** into int32


@pytest.mark.parametrize("symbol,op", INT_IOPS, ids=[s for s, _ in INT_IOPS])
def test_integer_operators_match_pytorch(symbol: str, op) -> None:
    a = RNG.integers(1, 50, (4, 3)).astype(np.int32)
    b = RNG.integers(1, 4, (4, 3)).astype(np.int32)
    _same_object_written(op, a, b, "int32")
    _same_object_written(op, a, 3, "int32")


def test_bool_logic_in_place() -> None:
    a, b = RNG.random(7) > 0.5, RNG.random(7) > 0.5
    for op in (operator.iand, operator.ior, operator.ixor):
        _same_object_written(op, a, b, "bool")


def test_views_and_other_references_see_the_write() -> None:
    base = zyx.tensor(np.arange(12, dtype=np.float32).reshape(3, 4))
    row, col_view = base[1], base.T
    held = [base]
    base += 100
    expected = np.arange(12, dtype=np.float32).reshape(3, 4) + 100
    np.testing.assert_array_equal(held[0].numpy(), expected)
    np.testing.assert_array_equal(row.numpy(), expected[1])
    np.testing.assert_array_equal(col_view.numpy(), expected.T)


def test_write_through_a_strided_view_and_0d_and_empty() -> None:
    base = zyx.tensor(np.zeros((4, 6), np.float32))
    v = base[:, ::2].T  # non-contiguous: every other column, transposed
    v += zyx.tensor(np.arange(12, dtype=np.float32).reshape(3, 4))
    expected = np.zeros((4, 6), np.float32)
    expected[:, ::2] = np.arange(12, dtype=np.float32).reshape(3, 4).T
    np.testing.assert_array_equal(base.numpy(), expected)
    s = zyx.tensor(np.float32(2.0))
    s *= 4
    assert s.shape == () and float(s) == 8.0
    e = zyx.zeros(0, 3)
    e += 1
    assert e.shape == (0, 3)


def test_module_parameters_updated_by_a_hand_written_sgd_step() -> None:
    """The loop from PyTorch tutorials: with rebinding it silently trained nothing."""
    zyx.manual_seed(0)
    m = nn.Linear(3, 2)
    x = zyx.tensor(RNG.standard_normal((5, 3)).astype(np.float32))
    before = m.weight.numpy().copy()
    (m(x) ** 2).mean().backward()
    grad = m.weight.grad.numpy()
    with zyx.no_grad():
        for p in m.parameters():
            p -= 0.1 * p.grad
    np.testing.assert_allclose(m.weight.numpy(), before - 0.1 * grad, rtol=1e-6)


def test_autograd_through_an_in_place_op_on_a_non_leaf() -> None:
    a = zyx.tensor(RNG.standard_normal(4), dtype="float64", requires_grad=True)
    ta = torch.tensor(a.numpy(), requires_grad=True)
    h, th = a * 2, ta * 2
    h *= a
    th *= ta
    h.sum().backward()
    th.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-12)


def test_leaf_that_requires_grad_is_refused_outside_no_grad() -> None:
    w = zyx.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(AutogradError, match=r"x \+= y"):
        w += 1
    np.testing.assert_array_equal(w.numpy(), [1.0, 2.0])


def test_errors_as_pytorch_and_nothing_written() -> None:
    i = zyx.tensor([1, 2, 3], dtype="int64")
    with pytest.raises(DTypeError, match="float32 .*int64|int64"):
        i += 1.5  # PyTorch: result type Float can't be cast to Long
    with pytest.raises(DTypeError):
        i /= 2  # true division gives a float
    flags = zyx.tensor([True, False])
    with pytest.raises(DTypeError, match="bool"):
        flags += 1
    small = zyx.tensor(np.ones(3, np.float32))
    with pytest.raises(ShapeError, match=r"\(3,\).*\(2, 3\)"):
        small += zyx.tensor(np.ones((2, 3), np.float32))  # would broadcast x up
    np.testing.assert_array_equal(i.numpy(), [1, 2, 3])
    np.testing.assert_array_equal(flags.numpy(), [True, False])
    np.testing.assert_array_equal(small.numpy(), np.ones(3, np.float32))


def test_lower_precision_float_destination_keeps_its_dtype() -> None:
    h = zyx.tensor(np.array([1.0, 2.5], np.float16))
    h += zyx.tensor(np.array([0.25, 0.25], np.float64))  # float64 result written into float16, as PyTorch
    assert h.dtype.name == "float16"
    np.testing.assert_array_equal(h.numpy(), np.array([1.25, 2.75], np.float16))


def test_method_forms_match_pytorch() -> None:
    a = RNG.uniform(-2, 2, (3, 4)).astype(np.float32)
    b = RNG.uniform(0.5, 2, (4,)).astype(np.float32)
    cases = [("add_", (b,), {"alpha": 2.5}), ("sub_", (b,), {}), ("mul_", (b,), {}),
             ("div_", (b,), {"rounding_mode": "floor"}), ("clamp_", (-0.5, 0.75), {}), ("zero_", (), {}),
             ("fill_", (3.25,), {}), ("copy_", (b,), {})]
    for name, args, kwargs in cases:
        x = zyx.tensor(a.copy())
        tx = torch.tensor(a.copy())
        zargs = [zyx.tensor(v) if isinstance(v, np.ndarray) else v for v in args]
        targs = [torch.tensor(v) if isinstance(v, np.ndarray) else v for v in args]
        assert getattr(x, name)(*zargs, **kwargs) is x, name
        getattr(tx, name)(*targs, **kwargs)
        np.testing.assert_allclose(x.numpy(), tx.numpy(), rtol=1e-6, err_msg=name)


def test_method_forms_convert_and_check_like_pytorch() -> None:
    i = zyx.tensor([1, 5, 9], dtype="int32")
    i.copy_(zyx.tensor([1.7, -2.2, 3.9]))  # copy_ converts (truncates toward zero), as PyTorch
    np.testing.assert_array_equal(i.numpy(), torch.tensor([1, 5, 9], dtype=torch.int32).copy_(
        torch.tensor([1.7, -2.2, 3.9])).numpy())
    i.fill_(zyx.tensor(7))
    np.testing.assert_array_equal(i.numpy(), [7, 7, 7])
    with pytest.raises(DTypeError, match="clamp_"):
        i.clamp_(0.5)  # a float bound gives a float result: PyTorch refuses it in place too
    with pytest.raises(ShapeError, match="one-element"):
        i.fill_(zyx.tensor([1, 2]))
    np.testing.assert_array_equal(i.numpy(), [7, 7, 7])
