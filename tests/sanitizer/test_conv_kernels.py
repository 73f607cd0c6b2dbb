"""The direct 2-D convolution kernel (templates/conv2d.cl.mako) under Oclgrind, with the CPU heuristics
that choose it: border tiles with column tests and padding rows skipped, inner tiles without tests,
an output-column tail, groups, stride and dilation, a bias, and the weight-gradient kernel
(conv2d_wgrad.cl.mako) of the backward; float32 and float64 (shapes tiny)."""
from __future__ import annotations

import numpy as np
import pytest

import zyx
import zyx.nn.functional as F
from zyx import settings
from zyx.backend.launch import recording

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("dtype, s, p, d, g", [(zyx.float32, 1, 1, 1, 1), (zyx.float64, 2, (2, 1), (1, 2), 2)],
                         ids=["f32-pad1", "f64-strided-groups"])
def test_conv2d_direct(sim, needs, monkeypatch, dtype, s, p, d, g):
    needs(dtype)
    monkeypatch.setattr(settings, "HEURISTICS", "cpu")  # the direct kernel is the CPU choice
    rng = np.random.default_rng(5)
    x, w, b = (rng.normal(size=sh).astype(dtype.numpy) for sh in ((2, 4, 5, 21), (8, 4 // g, 3, 3), (8,)))
    zt = [zyx.from_numpy(a, device=sim).requires_grad_() for a in (x, w, b)]
    tt = [torch.tensor(a, requires_grad=True) for a in (x, w, b)]
    with recording() as launches:
        out = F.conv2d(*zt, s, p, d, g).realize()
        out.square().sum().backward()
        zt[1].grad.realize()
    names = {k.name for k, *_ in launches}
    assert {"zyx_conv2d", "zyx_conv2d_wgrad"} <= names
    ref = torch.nn.functional.conv2d(*tt, s, p, d, g)
    ref.square().sum().backward()
    np.testing.assert_allclose(out.numpy(), ref.detach().numpy(), rtol=1e-5, atol=1e-5)
    for z, t in zip(zt, tt):
        np.testing.assert_allclose(z.grad.numpy(), t.grad.numpy(), rtol=1e-4, atol=1e-4)
