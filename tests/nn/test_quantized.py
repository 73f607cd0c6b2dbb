"""QuantizedLinear (zyx.nn.quantized, zyx.kernels.quantized_matmul): x @ W^T with W in GGUF blocks against
the float matmul of the dequantized weight, for the vector-path types (Q8_0, Q4_0, Q4_K) and the generic
element path (Q5_1, Q6_K); decode-shaped (M=1) and batched (batch, seq) inputs, the CPU and the GPU shapes of
the kernel, odd row counts, one and several blocks a row, bias, the input's gradient, embedding rows read from
blocks, and errors."""
from __future__ import annotations

import numpy as np
import pytest

import zyx
from zyx import settings
from zyx.backend.launch import recording
from zyx.errors import DTypeError, ShapeError
from zyx.nn import QuantizedLinear, QuantizedWeight
from zyx.nn.quantized import quantized_linears

import gguf_data as gd

pytestmark = pytest.mark.needs_device
RNG = np.random.default_rng(5021)


def _weight(qtype, rows, cols, device):
    data = gd.raw(qtype, rows, cols, RNG)
    return QuantizedWeight(zyx.from_numpy(data, device), qtype, (rows, cols)), gd.reference(qtype, data, cols)


def _close(got, want):
    scale = max(float(np.abs(want).max()), 1.0)
    np.testing.assert_allclose(got, want, rtol=0, atol=2e-5 * scale)


SHAPES = {"decode": ((1,), 33, 3), "batch-seq": ((2, 3), 7, 1), "rows-8": ((8,), 5, 2)}  # 6 rows: a tile past M
# the CPU shape of the kernel (a work item a weight row) for every type and shape; the GPU one (a
# work-group sharing a row, its sums added in local memory) for each path and each activation tile
CASES = ([("cpu", q, s) for q in ("Q8_0", "Q4_0", "Q4_K", "Q5_1", "Q6_K") for s in SHAPES]
         + [("gpu", "Q4_K", "decode"), ("gpu", "Q8_0", "rows-8"), ("gpu", "Q6_K", "batch-seq"),
            ("gpu", "Q4_0", "decode")])


@pytest.mark.parametrize("kind, qtype, shape", CASES, ids=["-".join(c) for c in CASES])
def test_matches_float_matmul(device, monkeypatch, kind, qtype, shape):
    lead, rows, blocks = SHAPES[shape]
    monkeypatch.setattr(settings, "HEURISTICS", kind)
    cols = blocks * (256 if qtype.endswith("_K") else 32)
    w, dense = _weight(qtype, rows, cols, device)
    x = RNG.standard_normal((*lead, cols)).astype(np.float32)
    layer = QuantizedLinear.from_weight(w)
    with recording() as launches:
        y = layer(zyx.from_numpy(x, device)).numpy()
    assert any(k.name == "zyx_qmatmul" for k, *_ in launches)  # no float copy of W, no dequantize kernel
    assert not any(k.name == "zyx_gguf_dequant" for k, *_ in launches)
    assert y.shape == (*lead, rows)
    _close(y, x.astype(np.float64) @ dense.T.astype(np.float64))


def test_bias_state_dict_and_input_gradient(device):
    w, dense = _weight("Q8_0", 6, 64, device)
    b = RNG.standard_normal(6).astype(np.float32)
    layer = QuantizedLinear(64, 6, "Q8_0", device=device)
    layer.load_state_dict({"weight_blocks": w.blocks, "bias": zyx.from_numpy(b, device)})
    assert set(layer.state_dict()) == {"weight_blocks", "bias"}
    x = zyx.tensor(RNG.standard_normal((3, 64)).astype(np.float32), requires_grad=True)
    y = layer(x)
    _close(y.numpy(), x.numpy() @ dense.T + b)
    g = RNG.standard_normal((3, 6)).astype(np.float32)
    (y * zyx.tensor(g)).sum().backward()
    _close(x.grad.numpy(), g @ dense)


def test_embedding_rows(device):
    w, dense = _weight("Q6_K", 9, 256, device)
    ids = np.array([[3, 0, 8], [3, 5, 1]])
    got = w.embedding(zyx.from_numpy(ids, device)).numpy()
    np.testing.assert_array_equal(got.view(np.uint32), dense[ids].view(np.uint32))


def test_errors(device):
    w, _ = _weight("Q4_0", 4, 64, device)
    layer = QuantizedLinear.from_weight(w)
    with pytest.raises(ShapeError, match="64 input features"):
        layer(zyx.zeros(2, 32, device=device))
    with pytest.raises(DTypeError, match="float32 activations"):
        layer(zyx.zeros(2, 64, dtype=zyx.float16, device=device))
    with pytest.raises(ShapeError, match="whole Q4_K blocks"):
        QuantizedLinear(100, 4, "Q4_K")
    with pytest.raises(ShapeError, match="do not hold"):
        QuantizedWeight(w.blocks, "Q8_0", (4, 64))
    with pytest.raises(DTypeError, match="not a block type"):
        QuantizedWeight(w.blocks, "F16", (4, 64))


@pytest.mark.parametrize("kind", ["cpu", "gpu"])
@pytest.mark.parametrize("lead", [(1,), (2, 3)])
def test_several_weights_in_one_launch(device, monkeypatch, kind, lead):
    """``quantized_linears``: a layer's Q, K and V projections (5, 3 and 2 rows here) in one launch, each
    output equal to its own layer's, with biases and the input's gradient summed over the parts."""
    monkeypatch.setattr(settings, "HEURISTICS", kind)
    parts = [_weight("Q4_0", rows, 64, device) for rows in (5, 3, 2)]
    biases = [None, zyx.from_numpy(RNG.standard_normal(3).astype(np.float32), device), None]
    x = zyx.tensor(RNG.standard_normal((*lead, 64)).astype(np.float32), device=device, requires_grad=True)
    with recording() as launches:
        outs = quantized_linears(x, [w for w, _ in parts], biases)
        before = zyx.kernel_count()
        outs[0].realize()
        assert zyx.kernel_count() - before == 1  # the three parts' matmul (the bias add waits for outs[1])
    assert {k.name for k, *_ in launches} == {"zyx_qmatmul"}
    xd = x.numpy().astype(np.float64)
    for out, (_, dense), b in zip(outs, parts, biases):
        assert out.shape == (*lead, dense.shape[0])
        _close(out.numpy(), xd @ dense.T + (0 if b is None else b.numpy()))
    gs = [RNG.standard_normal(o.shape).astype(np.float32) for o in outs]
    sum((o * zyx.from_numpy(g, device)).sum() for o, g in zip(outs, gs)).backward()
    _close(x.grad.numpy(), sum(g @ dense for g, (_, dense) in zip(gs, parts)))


def test_several_weights_must_agree(device):
    a, _ = _weight("Q4_0", 4, 64, device)
    b, _ = _weight("Q8_0", 4, 64, device)
    with pytest.raises(ShapeError, match="block type or input features"):
        quantized_linears(zyx.zeros(1, 64, device=device), [a, b])
