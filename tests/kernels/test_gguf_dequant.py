"""GGUF dequantization on the device (zyx.kernels.gguf_dequant, templates/gguf/): every type zyx reads
against ``gguf.quants.dequantize``, bit for bit in float32, over one and several blocks a row and odd row
counts (the pool poisons every output buffer first, so a value the kernel skips shows)."""
from __future__ import annotations

import numpy as np
import pytest

import zyx
from zyx.backend.launch import recording
from zyx.errors import DTypeError, ShapeError
from zyx.kernels.gguf_dequant import BY_ID, QTYPES
from zyx.nn.quantized import dequantize

import gguf_data as gd

gguf = gd.gguf
pytestmark = pytest.mark.needs_device
RNG = np.random.default_rng(3307)


def test_type_table_is_ggmls():
    for name, q in QTYPES.items():
        t = gguf.GGMLQuantizationType[name]
        assert (q.ggml_id, q.block, q.type_size) == (int(t), *gguf.GGML_QUANT_SIZES[t])
        assert BY_ID[q.ggml_id] is q


@pytest.mark.parametrize("qtype", gd.NON_K + gd.K_TYPES)
@pytest.mark.parametrize("rows, blocks", [(1, 1), (7, 3)], ids=["one-block", "odd-rows-3-blocks"])
def test_bit_exact(device, qtype, rows, blocks):
    cols = blocks * (256 if qtype in gd.K_TYPES else 32)
    data = gd.raw(qtype, rows, cols, RNG)
    want = gd.reference(qtype, data, cols)
    with recording() as launches:
        got = dequantize(zyx.from_numpy(data, device), qtype, (rows, cols)).numpy()
    assert any(k.name == "zyx_gguf_dequant" for k, *_ in launches)
    assert got.dtype == np.float32 and got.shape == (rows, cols)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_k_types_cover_every_scale_and_bit(device):
    """Many random blocks of each K type: every sub-block scale, min and high-bit position varies."""
    for qtype in gd.K_TYPES:
        data = gd.raw(qtype, 64, 256, RNG)
        got = dequantize(zyx.from_numpy(data, device), qtype, (64, 256)).numpy()
        np.testing.assert_array_equal(got.view(np.uint32), gd.reference(qtype, data, 256).view(np.uint32))


def test_wrong_sizes_and_types(device):
    data = zyx.from_numpy(gd.raw("Q8_0", 2, 64, RNG), device)
    with pytest.raises(ShapeError, match="do not hold"):
        dequantize(data, "Q8_0", (2, 96))
    with pytest.raises(DTypeError, match="unknown GGUF type"):
        dequantize(data, "Q9_9", (2, 64))
    with pytest.raises(DTypeError, match="uint8"):
        dequantize(zyx.zeros(136, device=device), "Q8_0", (2, 64))
