"""Fixes from a user-perspective audit of the op surface against PyTorch 2.13 CPU: error types PyTorch
code catches, PyTorch keyword arguments and PyTorch-named methods, compared on random data."""
from __future__ import annotations

import numpy as np
import pytest

import zyx

torch = pytest.importorskip("torch")
RNG = np.random.default_rng(7)
pytestmark = pytest.mark.needs_device


def _close(z, t, rtol=1e-6, atol=1e-6):
    got, want = z.numpy(), t.numpy()
    assert got.shape == want.shape, (got.shape, want.shape)
    assert z.dtype.name == str(t.dtype).replace("torch.", ""), (z.dtype.name, t.dtype)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol)


@pytest.mark.parametrize("call", [
    lambda x: x.cumsum(1), lambda x: x.cumprod(-2), lambda x: x.cummax(3), lambda x: x.logcumsumexp(2),
    lambda x: x.flip(2), lambda x: x.roll(1, 5),
], ids=["cumsum", "cumprod", "cummax", "logcumsumexp", "flip", "roll"])
def test_contract_dim_out_of_range_is_index_error(call):
    # API.md: a dim out of range is an IndexError (PyTorch code catches that), still a ContractError
    x = zyx.zeros(3)
    with pytest.raises(IndexError, match="out of range"):
        call(x)
    with pytest.raises(zyx.ContractError):
        call(x)
    with pytest.raises(zyx.ShapeError):
        call(x)


def test_contract_rank0_dim_is_index_error():
    with pytest.raises(IndexError, match="rank 0"):
        zyx.tensor(1.0).flip(0)
    _close(zyx.tensor(2.5).cumsum(0), torch.tensor(2.5).cumsum(0))  # dim 0 of a scalar is allowed, as PyTorch


def test_flip_repeated_dim_is_runtime_error():
    with pytest.raises(RuntimeError, match="names an axis twice"):
        zyx.zeros(3, 4).flip((1, 1))
    with pytest.raises(zyx.ContractError):
        zyx.zeros(3, 4).flip((0, -2))
