"""Gradients at the edges PyTorch's op tests reach: views of 0-d and size-1 leaves, 1-D matmul operands,
equal and infinite operands, constant bases outside log's domain, saturated activations and
``scatter(reduce="multiply")``. Each case compares with PyTorch CPU autograd, NaN and infinities included."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest

import zyx

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.needs_device


def _grads(fn_zyx: Callable, fn_torch: Callable, *values: Any, dtype: Any = np.float32) -> None:
    """The leaves' gradients of ``fn(*leaves).sum()`` in zyx equal PyTorch's (NaN where it has NaN)."""
    arrays = [np.asarray(v, dtype=dtype) for v in values]
    zs = [zyx.tensor(a, requires_grad=True) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    out_z, out_t = fn_zyx(*zs), fn_torch(*ts)
    np.testing.assert_allclose(out_z.numpy(), out_t.detach().numpy(), rtol=1e-6, atol=1e-6)
    out_z.sum().backward()
    out_t.sum().backward()
    for z, t in zip(zs, ts):
        assert z.grad is not None and tuple(z.grad.shape) == tuple(t.grad.shape)
        np.testing.assert_allclose(z.grad.numpy(), t.grad.numpy(), rtol=1e-6, atol=1e-6)


VIEWS = {
    "reshape_to_0d": (lambda x: x.reshape(()), [3.0]),
    "reshape_0d_to_1": (lambda x: x.reshape(1), 3.0),
    "squeeze": (lambda x: x.squeeze(), [[3.0]]),
    "squeeze_dim": (lambda x: x.squeeze(0), [[3.0, 4.0]]),
    "unsqueeze_0d": (lambda x: x.unsqueeze(0), 3.0),
    "permute_size1": (lambda x: x.permute(1, 0), [[3.0]]),
    "expand_0d": (lambda x: x.expand(3), 3.0),
    "expand_size1": (lambda x: x.expand(2, 3), [[3.0]]),
    "int_index": (lambda x: x[0], [3.0]),
    "int_index_2d": (lambda x: x[0, 0], [[3.0]]),
}


@pytest.mark.parametrize("name", list(VIEWS))
def test_view_of_a_small_leaf_has_a_gradient(name):
    # A view that covers the whole leaf was taken for an in-place write into it.
    fn, value = VIEWS[name]
    _grads(fn, fn, value)


@pytest.mark.parametrize("shapes", [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 2)), ((2, 2, 3), (3,)),
                                    ((3,), (2, 3, 2))])
def test_matmul_with_a_1d_operand(shapes):
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal(s) for s in shapes)
    _grads(lambda x, y: x @ y, lambda x, y: x @ y, a, b)


def test_dot_backward():
    _grads(lambda x, y: x.dot(y), lambda x, y: x.dot(y), [1.0, 2.0, 3.0], [4.0, -5.0, 6.0])


def test_logaddexp_of_equal_operands_splits_the_gradient():
    a = [1.0, 2.0, 0.0, 5.0, -3.0, np.inf, -1e30, 3e38]
    b = [1.0, 3.0, 0.0, 5.0, -3.0, 1.0, -1e30, 3e38]
    _grads(lambda x, y: x.logaddexp(y), torch.logaddexp, a, b)
    _grads(lambda x, y: x.logaddexp2(y), torch.logaddexp2, a, b)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_atan2_gradient_at_the_origin_is_zero(dtype):
    # found by tests/fuzz (seed 5140): 1 / (a*a + b*b) is inf at (0, 0), where PyTorch gives 0
    a = [0.0, 1e-30, 1e-30, 0.0, 1e20, np.inf, 0.0, 1.0]
    b = [0.0, 1e-30, 0.0, 1e-30, 1e20, 1.0, np.inf, -2.0]
    _grads(zyx.atan2, torch.atan2, a, b, dtype=dtype)


@pytest.mark.parametrize("fn", ["maximum", "minimum"])
def test_maximum_gradient_with_a_nan_goes_to_both(fn):
    # found by tests/fuzz (seed 5154): PyTorch passes the gradient to both sides where one is NaN
    a = [np.nan, 1.0, 2.0, np.nan, 3.0]
    b = [0.0, np.nan, 2.0, np.nan, -1.0]
    _grads(getattr(zyx, fn), getattr(torch, fn), a, b)


@pytest.mark.parametrize("fn", ["elu", "selu", "celu"])
def test_elu_family_gradient_at_nan_passes_through(fn):
    # found by tests/fuzz (seed 5351): PyTorch's rule picks the exp side only where x <= 0
    x = [np.nan, -1.0, 0.0, 2.0, -np.inf, np.inf]
    _grads(getattr(zyx.nn.functional, fn), getattr(torch.nn.functional, fn), x)


@pytest.mark.parametrize("base", [-2.0, 0.0, 2.0, 1.0])
def test_pow_of_a_constant_base(base):
    # math.log(base) raised ValueError for base <= 0; PyTorch gives nan (base < 0) and -inf or 0 (base 0)
    x = [0.0, 2.0, -2.0, 0.5, 3.0]
    _grads(lambda e: base ** e, lambda e: base ** e, x)


def test_pow_exponent_gradient_keeps_a_nan_from_above():
    # found by tests/fuzz (seed 6163): PyTorch multiplies the incoming gradient outside its where, so
    # a NaN there stays NaN even where base 0 and exponent >= 0 give 0
    e = [-0.5, 0.0, 1.5]
    _grads(lambda x: (0.0 ** x) * float("nan"), lambda x: (0.0 ** x) * float("nan"), e)
    _grads(lambda a, x: (a ** x) * float("nan"), lambda a, x: (a ** x) * float("nan"), [0.0, 0.0, 2.0], e)


@pytest.mark.parametrize("exponent", [-1.5, -1.0, 0.0, 0.5, 2.0, 3.0])
def test_pow_by_a_constant_exponent(exponent):
    x = [0.0, 2.0, -2.0, 0.5]
    _grads(lambda a: a ** exponent, lambda a: a ** exponent, x)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sigmoid_gradient_saturates_to_zero(dtype):
    x = [-1e4, -1000.0, -104.0, -89.0, -20.0, 0.0, 20.0, 89.0, 1000.0, 1e4, -np.inf, np.inf, -3e38, 3e38]
    _grads(lambda a: a.sigmoid(), torch.sigmoid, x, dtype=dtype)


# PyTorch has no derivative for scatter with reduce; its values are scatter_reduce's "prod" with self
# included, whose gradient (zeros in self or src included) is the one to match.
@pytest.mark.parametrize("case", ["distinct", "repeated", "zeros", "zero_src_repeated"])
def test_scatter_multiply_gradient(case):
    self_v = {"distinct": [1.0, 2.0, 3.0, 4.0], "repeated": [1.5, 2.0, -3.0, 4.0],
              "zeros": [0.0, 2.0, 3.0, 4.0], "zero_src_repeated": [2.0, 0.0, 3.0, 4.0]}[case]
    src_v = {"distinct": [5.0, -6.0, 7.0], "repeated": [5.0, -6.0, 7.0],
             "zeros": [0.0, 6.0, 7.0], "zero_src_repeated": [0.0, 6.0, 0.0]}[case]
    index = {"distinct": [2, 0, 3], "repeated": [1, 1, 3], "zeros": [0, 0, 2], "zero_src_repeated": [1, 1, 1]}[case]
    idx_z, idx_t = zyx.tensor(np.array(index, dtype=np.int64)), torch.tensor(index)
    _grads(lambda s, u: s.scatter(0, idx_z, u, reduce="multiply"),
           lambda s, u: s.scatter_reduce(0, idx_t, u, "prod", include_self=True), self_v, src_v)


def test_scatter_multiply_gradient_2d_and_scalar_value():
    rng = np.random.default_rng(3)
    s, u = rng.standard_normal((3, 4)), rng.standard_normal((2, 4))
    index = np.array([[0, 1, 2, 0], [0, 2, 2, 1]])
    idx_z, idx_t = zyx.tensor(index), torch.tensor(index)
    _grads(lambda a, b: a.scatter(0, idx_z, b, reduce="multiply"),
           lambda a, b: a.scatter_reduce(0, idx_t, b, "prod", include_self=True), s, u)
    _grads(lambda a: a.scatter(0, idx_z, value=-1.5, reduce="multiply"),
           lambda a: a.scatter_reduce(0, idx_t, torch.full(index.shape, -1.5, dtype=a.dtype), "prod"), s)
