"""scaled_dot_product_attention with PyTorch's full signature (dropout_p, enable_gqa, scale) against torch CPU."""
from __future__ import annotations

import numpy as np
import pytest

import zyx
import zyx.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional
RNG = np.random.default_rng(11)
pytestmark = pytest.mark.needs_device


def _arr(*shape):
    return RNG.normal(size=shape).astype(np.float32)


@pytest.mark.parametrize("causal", [False, True])
def test_sdpa_gqa(causal):
    q, k, v = _arr(2, 6, 5, 4), _arr(2, 2, 5, 4), _arr(2, 2, 5, 3)
    got = F.scaled_dot_product_attention(*map(zyx.tensor, (q, k, v)), is_causal=causal, enable_gqa=True)
    want = TF.scaled_dot_product_attention(*map(torch.tensor, (q, k, v)), is_causal=causal, enable_gqa=True)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-5)
    # a float mask, a scale, and permuted (non-contiguous) operands
    qp, kp, vp = _arr(5, 6, 4), _arr(5, 3, 4), _arr(5, 3, 4)
    m = _arr(5, 5)
    got = F.scaled_dot_product_attention(zyx.tensor(qp).permute(1, 0, 2), zyx.tensor(kp).permute(1, 0, 2),
                                         zyx.tensor(vp).permute(1, 0, 2), zyx.tensor(m), scale=0.3, enable_gqa=True)
    want = TF.scaled_dot_product_attention(torch.tensor(qp).permute(1, 0, 2), torch.tensor(kp).permute(1, 0, 2),
                                           torch.tensor(vp).permute(1, 0, 2), torch.tensor(m), scale=0.3,
                                           enable_gqa=True)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-5)


def test_sdpa_positional_order_and_errors():
    q, k, v = _arr(2, 3, 4), _arr(2, 5, 4), _arr(2, 5, 4)
    # PyTorch's positional order: attn_mask, dropout_p, is_causal (scale and enable_gqa keyword-only)
    got = F.scaled_dot_product_attention(zyx.tensor(q), zyx.tensor(k), zyx.tensor(v), None, 0.0, True, scale=0.5)
    want = TF.scaled_dot_product_attention(torch.tensor(q), torch.tensor(k), torch.tensor(v), None, 0.0, True,
                                           scale=0.5)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-5)
    with pytest.raises(RuntimeError, match="attn_mask"):
        F.scaled_dot_product_attention(zyx.tensor(q), zyx.tensor(k), zyx.tensor(v),
                                       zyx.ones(3, 5, dtype=zyx.bool), is_causal=True)
    with pytest.raises(zyx.ShapeError, match="multiple of the key/value heads"):
        F.scaled_dot_product_attention(zyx.zeros(1, 5, 2, 4), zyx.zeros(1, 2, 2, 4), zyx.zeros(1, 2, 2, 4),
                                       enable_gqa=True)


def test_sdpa_dropout():
    q, k, v = _arr(2, 4, 8), _arr(2, 6, 8), np.ones((2, 6, 8), np.float32)
    zq, zk, zv = map(zyx.tensor, (q, k, v))
    full = F.scaled_dot_product_attention(zq, zk, zv).numpy()  # rows of weights sum to 1: all ones
    np.testing.assert_allclose(full, np.ones_like(full), rtol=1e-5)
    zyx.manual_seed(3)
    dropped = F.scaled_dot_product_attention(zq, zk, zv, dropout_p=0.5).numpy()
    # kept weights scaled by 2: each output is 2 * (the kept part of a row summing to 1), so in [0, 2]
    assert np.all(dropped >= 0) and np.all(dropped <= 2 + 1e-5) and not np.allclose(dropped, full)
    np.testing.assert_allclose(dropped[..., 0], dropped[..., 7], rtol=1e-6)  # v's columns are equal
