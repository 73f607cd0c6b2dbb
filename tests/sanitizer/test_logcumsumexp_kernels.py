"""logcumsumexp's block scan with the CPU shape of work (``scan_items`` a multiple of 16: each
work-item's values computed 16 at a time from its kept (max, scaled sum) pairs, the last group
partial) under Oclgrind, against PyTorch, with -inf, +inf and NaN in the rows."""
from __future__ import annotations

import numpy as np
import pytest

import zyx
from zyx.kernels.contracts.common import set_tunables


def test_block_scan_vector_values(sim):
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(3).standard_normal((2, 150)).astype(np.float32) * 3
    a[0, 5], a[0, 40], a[1, 70], a[1, 71] = -np.inf, np.inf, np.nan, 2.0
    set_tunables(sim, scan_local=2, scan_items=16)  # blocks of 32: 5 per row, the last one partial
    try:
        x = zyx.from_numpy(a, device=sim)
        got = x.logcumsumexp(1).numpy()
        h = zyx.from_numpy(a.astype(np.float16), device=sim).logcumsumexp(1).numpy()
    finally:
        set_tunables(sim)
    want = torch.logcumsumexp(torch.from_numpy(a), 1).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h.astype(np.float32), torch.logcumsumexp(torch.from_numpy(a.astype(np.float16)).float(),
                                                                        1).numpy(), rtol=2.0 ** -9, atol=1e-3)
