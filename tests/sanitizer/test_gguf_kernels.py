"""The GGUF kernels under Oclgrind on small shapes: the dequantization of every type zyx reads
(templates/gguf/dequant.cl.mako, bit for bit against ``gguf.quants.dequantize``) and the quantized matmul
(templates/gguf/qmatmul.cl.mako) in its CPU shape (a work item a weight row) and its GPU shape (a
work-group sharing a row, its sums added in local memory: the data-race check covers the reduction), for
the vector paths and an element path, one activation row and a last tile of rows hanging past M."""
from __future__ import annotations

import numpy as np
import pytest

import zyx
from zyx import settings
from zyx.nn import QuantizedLinear, QuantizedWeight
from zyx.nn.quantized import dequantize

import gguf_data as gd

RNG = np.random.default_rng(61)


@pytest.mark.parametrize("qtype", gd.NON_K + gd.K_TYPES)
def test_dequant_kernel(sim, qtype):
    cols = 256 if qtype in gd.K_TYPES else 64
    data = gd.raw(qtype, 1, cols, RNG)
    got = dequantize(zyx.from_numpy(data, sim), qtype, (1, cols)).numpy()
    np.testing.assert_array_equal(got.view(np.uint32), gd.reference(qtype, data, cols).view(np.uint32))


@pytest.mark.parametrize("kind", ["gpu", "cpu"])
@pytest.mark.parametrize("qtype", ["Q8_0", "Q4_0", "Q4_K", "Q5_0"])
def test_qmatmul_kernel(sim, monkeypatch, kind, qtype):
    monkeypatch.setattr(settings, "HEURISTICS", kind)
    cols = 256 if qtype == "Q4_K" else 96
    data = gd.raw(qtype, 3, cols, RNG)
    dense = gd.reference(qtype, data, cols)
    layer = QuantizedLinear.from_weight(QuantizedWeight(zyx.from_numpy(data, sim), qtype, (3, cols)))
    for m in (1, 5):  # one row; a tile of 4 and one hanging 3 rows past M
        x = RNG.standard_normal((m, cols)).astype(np.float32)
        got = layer(zyx.from_numpy(x, sim)).numpy()
        np.testing.assert_allclose(got, x @ dense.T, rtol=1e-5, atol=1e-4 * max(1.0, float(np.abs(dense).max())))
