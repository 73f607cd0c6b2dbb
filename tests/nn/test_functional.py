"""zyx.nn.functional and softmax/log_softmax against PyTorch CPU."""
from __future__ import annotations

import numpy as np
import pytest

import zyx
import zyx.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional
RNG = np.random.default_rng(2)


def _close(z, t, rtol=1e-5, atol=1e-5):
    np.testing.assert_allclose(z.numpy().astype(np.float64), t.detach().numpy().astype(np.float64),
                               rtol=rtol, atol=atol)


@pytest.mark.parametrize("dim", [0, -1])
def test_softmax_log_softmax(dim):
    a = RNG.normal(size=(5, 9)).astype(np.float32) * 4
    z, t = zyx.tensor(a), torch.tensor(a)
    _close(z.softmax(dim), torch.softmax(t, dim))
    _close(z.log_softmax(dim), torch.log_softmax(t, dim))


def test_linear_layer_norm():
    x = RNG.normal(size=(6, 8)).astype(np.float32)
    w = RNG.normal(size=(4, 8)).astype(np.float32)
    b = RNG.normal(size=(4,)).astype(np.float32)
    _close(F.linear(zyx.tensor(x), zyx.tensor(w), zyx.tensor(b)),
           TF.linear(torch.tensor(x), torch.tensor(w), torch.tensor(b)))
    g = RNG.normal(size=(8,)).astype(np.float32)
    _close(F.layer_norm(zyx.tensor(x), (8,), zyx.tensor(g), zyx.tensor(g)),
           TF.layer_norm(torch.tensor(x), (8,), torch.tensor(g), torch.tensor(g)), atol=1e-4)


def test_embedding_cross_entropy():
    w = RNG.normal(size=(10, 4)).astype(np.float32)
    idx = np.array([[1, 3], [9, 0]], np.int64)
    _close(F.embedding(zyx.tensor(idx), zyx.tensor(w)), TF.embedding(torch.tensor(idx), torch.tensor(w)))
    logits = RNG.normal(size=(5, 10)).astype(np.float32)
    tgt = np.array([1, 0, 9, 3, 3], np.int64)
    _close(F.cross_entropy(zyx.tensor(logits), zyx.tensor(tgt)),
           TF.cross_entropy(torch.tensor(logits), torch.tensor(tgt)))


@pytest.mark.parametrize("causal", [False, True])
def test_sdpa(causal):
    q, k, v = (RNG.normal(size=(2, 5, 8)).astype(np.float32) for _ in range(3))
    _close(F.scaled_dot_product_attention(zyx.tensor(q), zyx.tensor(k), zyx.tensor(v), is_causal=causal),
           TF.scaled_dot_product_attention(torch.tensor(q), torch.tensor(k), torch.tensor(v), is_causal=causal))


def test_dropout_keeps_scale():
    x = zyx.ones(1000)
    y = F.dropout(x, 0.25).numpy()
    kept = y[y != 0]
    np.testing.assert_allclose(kept, 1 / 0.75, rtol=1e-6)
    assert 0.6 < kept.size / 1000 < 0.9
    assert F.dropout(x, 0.5, training=False) is x


def test_pad_stack_split_chunk():
    a = RNG.normal(size=(3, 4)).astype(np.float32)
    z, t = zyx.tensor(a), torch.tensor(a)
    _close(z.pad((1, 2)), TF.pad(t, (1, 2)))
    _close(zyx.pad(z, (1, 0, 0, 2), value=7.0), TF.pad(t, (1, 0, 0, 2), value=7.0))
    _close(z.pad((-1, 1, 1, -1)), TF.pad(t, (-1, 1, 1, -1)))
    _close((z.pad((2, 2)).exp() * 2).sum(1), (TF.pad(t, (2, 2)).exp() * 2).sum(1))
    _close(zyx.stack([z, z * 2], 1), torch.stack([t, t * 2], 1))
    for zz, tt in zip(z.split(3, 1), t.split(3, 1)):
        _close(zz, tt)
    for zz, tt in zip(z.chunk(2, 0), t.chunk(2, 0)):
        _close(zz, tt)
