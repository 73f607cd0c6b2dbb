"""Fused backward of the row-wise functions (issue 30): kernel counts of each backward and its values against
PyTorch. The forward is realized first, so a backward's kernels are its own (its row statistics, stored by the
forward, are read rather than recomputed)."""
from __future__ import annotations

import numpy as np
import pytest

import zyx
import zyx.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional
pytestmark = pytest.mark.needs_device

N, D = 48, 96  # not multiples of a vector or work-group size


def _backward(fn, arrays, requires):
    """``fn``'s zyx and torch results on ``arrays`` (those marked in ``requires`` need grad): the kernels zyx's
    backward of ``(out * g).sum()`` launches, and both libraries' gradients."""
    rng = np.random.default_rng(30)
    zs = [zyx.tensor(a, requires_grad=r) for a, r in zip(arrays, requires)]
    ts = [torch.tensor(a, requires_grad=r) for a, r in zip(arrays, requires)]
    zout, tout = fn(F, *zs), fn(TF, *ts)
    g = rng.standard_normal(tuple(zout.shape)).astype(np.float32)
    zloss = (zout * zyx.tensor(g)).sum() if zout.ndim else zout
    tloss = (tout * torch.tensor(g)).sum() if tout.ndim else tout
    zloss.realize()
    before = zyx.kernel_count()
    zloss.backward()
    grads = [z.grad.realize() for z, r in zip(zs, requires) if r]
    kernels = zyx.kernel_count() - before
    tloss.backward()
    return kernels, grads, [t.grad.numpy() for t, r in zip(ts, requires) if r]


def _rows(*shape):
    return np.random.default_rng(7).standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("name, fn, arrays, requires, kernels", [
    # dx = y * (g - sum(g * y)): one row kernel
    ("softmax", lambda f, x: f.softmax(x, -1), [_rows(N, D)], [True], 1),
    # dx = g - exp(y) * sum(g): one row kernel
    ("log_softmax", lambda f, x: f.log_softmax(x, -1), [_rows(N, D)], [True], 1),
    # dx: one row kernel (its two row reduces hoisted); dw, db: a column reduce each
    ("layer_norm", lambda f, x, w, b: f.layer_norm(x, (D,), w, b), [_rows(N, D), _rows(D), _rows(D)],
     [True, True, True], 3),
    ("layer_norm input only", lambda f, x: f.layer_norm(x, (D,)), [_rows(N, D)], [True], 1),
    ("gelu", lambda f, x: f.gelu(x), [_rows(N, D)], [True], 1),
    ("gelu tanh", lambda f, x: f.gelu(x, approximate="tanh"), [_rows(N, D)], [True], 1),
])
def test_row_function_backward_kernels(name, fn, arrays, requires, kernels):
    got, zg, tg = _backward(fn, arrays, requires)
    assert got == kernels, f"{name}: {got} backward kernels, expected {kernels}"
    for z, t in zip(zg, tg):
        np.testing.assert_allclose(z.numpy(), t, rtol=2e-4, atol=2e-5)


def test_layer_norm_input_gradient_is_one_row_kernel_with_a_computed_input():
    """The input's gradient reads the output's gradient and the row statistics twice (in its own row reduces and
    elementwise): shared, it is recomputed inside one row kernel rather than stored by a kernel of its own."""
    x = _rows(N, D)
    got, zg, tg = _backward(lambda f, x: f.layer_norm(x * 1.5 + 0.25, (D,)), [x], [True])
    assert got == 1
    np.testing.assert_allclose(zg[0].numpy(), tg[0], rtol=2e-4, atol=2e-5)


def test_cross_entropy_backward_kernels():
    """The class-index gradient (one-hot times the loss's gradient) fuses into the log_softmax gradient's row
    kernel: the targets' float copy, the per-row gradient of the picked values, then dx."""
    x = _rows(N, D)
    t = np.random.default_rng(8).integers(0, D, N)
    zx, tx = zyx.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    zloss = F.cross_entropy(zx, zyx.tensor(t))
    zloss.realize()
    before = zyx.kernel_count()
    zloss.backward()
    zx.grad.realize()
    assert zyx.kernel_count() - before == 3
    TF.cross_entropy(tx, torch.tensor(t)).backward()
    np.testing.assert_allclose(zx.grad.numpy(), tx.grad.numpy(), rtol=2e-4, atol=1e-7)
