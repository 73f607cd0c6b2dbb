"""CPU heuristics: a tiny elementwise kernel runs as one work-group (zyx/opt/heuristics.py, CPU_TINY_NUMEL)."""
from __future__ import annotations

import numpy as np
import pytest

import zyx
from zyx import settings
from zyx.backend.launch import recording
from zyx.opt import heuristics

pytestmark = pytest.mark.needs_device

RNG = np.random.default_rng(5)


def _launches(fn):
    with recording() as launches:
        out = fn().realize()
    return out, [(glob, local) for _, glob, local, *_ in launches]


@pytest.mark.parametrize("n", [1, 1000, 1024, 4093])
def test_tiny_elementwise_kernels_are_one_work_group(n):
    if settings.heuristics_kind(zyx.default_device().info) != "cpu":
        pytest.skip("the rule is for CPU devices")
    a = RNG.standard_normal(n).astype(np.float32)
    x = zyx.tensor(a).realize()
    for fn, want in ((lambda: x * 3.0 - 1.0, a * np.float32(3.0) - np.float32(1.0)),
                     (lambda: (x * 0.5).exp(), np.exp(a * np.float32(0.5)))):
        out, grids = _launches(fn)
        np.testing.assert_allclose(out.numpy(), want, rtol=2e-6)
        assert len(grids) == 1 and grids[0][1] is not None and grids[0][1][0] == grids[0][0][0], grids


def test_larger_kernels_keep_several_work_groups():
    if settings.heuristics_kind(zyx.default_device().info) != "cpu":
        pytest.skip("the rule is for CPU devices")
    n = 4 * heuristics.CPU_TINY_NUMEL
    a = RNG.standard_normal(n).astype(np.float32)
    x = zyx.tensor(a).realize()
    out, grids = _launches(lambda: x * 3.0 - 1.0)
    np.testing.assert_allclose(out.numpy(), a * np.float32(3.0) - np.float32(1.0), rtol=2e-6)
    assert all(local is not None and local[0] < glob[0] for glob, local in grids), grids
