"""scatter_reduce(reduce="prod") gradients against PyTorch 2.13: include_self True/False, random
data without zeros, with single zeros (a src zero alone at its element, a zero self) and with
several zeros meeting at one element, along a non-leading dim."""
from __future__ import annotations

import numpy as np
import pytest

import zyx

torch = pytest.importorskip("torch")


def _case(seed: int, zeros: str, dim: int):
    rng = np.random.default_rng(seed)
    x0 = rng.uniform(0.5, 1.5, size=(5, 4)) * rng.choice([-1, 1], size=(5, 4))
    shape = (4, 3) if dim == 0 else (5, 3)  # (PyTorch's prod backward fails for a src larger than index)
    s0 = rng.uniform(0.5, 1.5, size=shape) * rng.choice([-1, 1], size=shape)
    idx = rng.integers(0, 5 if dim == 0 else 4, size=shape)
    if zeros in ("single", "many"):
        x0[1, :] = 0.0  # a zero self
        s0[0, 0] = 0.0  # src zeros: alone at their element unless "many"
        s0[2, 1] = 0.0
    if zeros == "many":
        if dim == 0:  # every src of column 2 is zero, all at one element
            s0[:, 2] = 0.0
            idx[:, 2] = 3
        else:  # three zeros of row 4 at one element
            s0[4, :] = 0.0
            idx[4, :] = 2
    return x0.astype(np.float32), s0.astype(np.float32), idx


@pytest.mark.parametrize("zeros", ["none", "single", "many"])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dim", [0, 1])
def test_prod_gradients_match_torch(zeros, include_self, dim):
    x0, s0, idx = _case(3 + dim, zeros, dim)
    xz, sz = zyx.tensor(x0).requires_grad_(), zyx.tensor(s0).requires_grad_()
    xt, st = torch.from_numpy(x0.copy()).requires_grad_(), torch.from_numpy(s0.copy()).requires_grad_()
    z = xz.scatter_reduce(dim, zyx.tensor(idx), sz, "prod", include_self=include_self)
    t = xt.scatter_reduce(dim, torch.from_numpy(idx), st, "prod", include_self=include_self)
    np.testing.assert_allclose(z.detach().numpy(), t.detach().numpy(), rtol=1e-6)
    g = np.random.default_rng(7).normal(size=tuple(t.shape)).astype(np.float32)
    z.backward(zyx.tensor(g))
    t.backward(torch.from_numpy(g))
    np.testing.assert_allclose(xz.grad.numpy(), xt.grad.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(sz.grad.numpy(), st.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_prod_gradient_float64_and_graph_use():
    rng = np.random.default_rng(11)
    x0 = rng.normal(size=(3, 5))
    s0 = rng.normal(size=(3, 4))
    s0[1, 1] = 0.0
    idx = rng.integers(0, 5, size=(3, 4))
    xz, sz = zyx.tensor(x0).requires_grad_(), zyx.tensor(s0).requires_grad_()
    xt, st = torch.from_numpy(x0.copy()).requires_grad_(), torch.from_numpy(s0.copy()).requires_grad_()
    (xz.exp().scatter_reduce(1, zyx.tensor(idx), sz * 2, "prod") ** 2).sum().backward()
    (xt.exp().scatter_reduce(1, torch.from_numpy(idx), st * 2, "prod") ** 2).sum().backward()
    np.testing.assert_allclose(xz.grad.numpy(), xt.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(sz.grad.numpy(), st.grad.numpy(), rtol=1e-10)
