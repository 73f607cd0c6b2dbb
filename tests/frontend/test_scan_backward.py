"""Gradients of cumprod, cummax/cummin and logcumsumexp against PyTorch's (zyx/frontend/scan_backward.py)."""
from __future__ import annotations

import numpy as np
import pytest

import zyx

pytestmark = pytest.mark.needs_device

OPS = {
    "cumprod": lambda x, d: x.cumprod(d),
    "logcumsumexp": lambda x, d: x.logcumsumexp(d),
    "cummax": lambda x, d: x.cummax(d)[0],
    "cummin": lambda x, d: x.cummin(d).values,
}


def _data(op: str, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    rng = np.random.default_rng(0)
    if op in ("cummax", "cummin"):  # few values: ties, so gradients pile up on the last of equal extrema
        return rng.integers(-2, 3, size=shape).astype(dtype)
    a = rng.standard_normal(shape).astype(dtype)
    if op == "cumprod":  # zeros: none, one, two in a lane, and one first
        flat = a.reshape(shape[0], -1)
        flat[1, 3] = 0
        flat[2, 2] = flat[2, 6] = 0
        flat[3, 0] = 0
    return a


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_scan_gradients_match_torch(torch, op, dtype):
    a = _data(op, (5, 9), dtype)
    g = np.random.default_rng(1).standard_normal(a.shape).astype(dtype)
    for dim in (0, 1, -1):
        x = zyx.tensor(a, requires_grad=True)
        t = torch.tensor(a, requires_grad=True)
        (OPS[op](x, dim) * zyx.tensor(g)).sum().backward()
        (OPS[op](t, dim) * torch.tensor(g)).sum().backward()
        rtol = 1e-5 if dtype == np.float32 else 1e-12
        np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=rtol, atol=rtol)


def test_scan_gradients_rank0_and_views(torch):
    for op in OPS:
        x = zyx.tensor(1.5, requires_grad=True)
        OPS[op](x, 0).backward()
        assert x.grad.item() == 1.0
    a = np.random.default_rng(2).standard_normal((4, 3, 6)).astype(np.float32)
    for op in OPS:
        x = zyx.tensor(a, requires_grad=True)
        t = torch.tensor(a, requires_grad=True)
        OPS[op](x.permute(2, 0, 1), 1).sum().backward()  # a non-contiguous input, a middle axis
        OPS[op](t.permute(2, 0, 1), 1).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_no_gradient_for_indices_and_ints():
    x = zyx.tensor([1.0, 3.0, 2.0], requires_grad=True)
    values, indices = x.cummax(0)
    assert values.requires_grad and not indices.requires_grad
    assert zyx.tensor([1, 2, 3]).cumprod(0).dtype is zyx.int64
