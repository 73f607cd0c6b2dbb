"""The direct 2-D convolution kernel (templates/conv2d.cl.mako) under Oclgrind, with the CPU heuristics
that choose it: border tiles with column tests and padding rows skipped, inner tiles without tests,
an output-column tail, groups, stride and dilation, a bias; float32 and float64 (shapes tiny)."""
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
    zt = [zyx.from_numpy(a, device=sim) for a in (x, w, b)]
    with recording() as launches:
        out = F.conv2d(*zt, s, p, d, g).realize()
    assert any(k.name == "zyx_conv2d" for k, *_ in launches)
    ref = torch.nn.functional.conv2d(*(torch.tensor(a) for a in (x, w, b)), s, p, d, g).numpy()
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5, atol=1e-5)
