"""The tier itself: Oclgrind's checks are on and their reports are read (a planted race, an
out-of-bounds read and an uninitialized value are each caught), and the GPU heuristics are forced."""
from __future__ import annotations

import numpy as np
import pytest

import zyx
from zyx import settings
from zyx.backend import transfer
from zyx.backend.launch import compile_kernel, launch

PLANTED = """
__kernel void zyx_planted(__global float *out, __global const float *in, const int what)
{
    __local float tile[8];
    const int i = get_global_id(0), l = get_local_id(0);
    float v = 0.0f;
    if (what == 0) { tile[l] = in[i]; v = tile[(l + 1) % 8]; }    /* no barrier: a data race */
    if (what == 1) v = in[i + 1];                                   /* the last item reads past the end */
    if (what == 2) { float u; if (i > 100) u = 1.0f; v = u; }       /* never initialized */
    out[i] = v;
}
"""


def test_planted_bugs_are_reported(sim, reports):
    k = compile_kernel(sim, PLANTED, "zyx_planted")
    src = transfer.upload(sim, np.arange(16, dtype=np.float32))
    out = sim.pool.allocate(64)
    for what, expected in ((0, "data race"), (1, "Invalid read"), (2, "Uninitialized value")):
        launch(k, (16,), (8,), [out.cl, src.cl, np.int32(what)])
        text = reports.take()
        assert expected in text, f"planted bug {what} not reported; log: {text[:500]!r}"
    launch(k, (16,), (8,), [out.cl, src.cl, np.int32(3)])
    assert reports.take() == ""


@pytest.mark.needs_device
def test_gpu_heuristics_are_forced(sim):
    assert settings.heuristics_kind(sim) == "gpu" and settings.heuristics_kind(zyx.default_device()) == "gpu"
