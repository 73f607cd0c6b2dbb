"""The attention kernels (templates/attention.cl.mako) under Oclgrind, with the CPU heuristics that
choose them: the forward, the query gradient and the key/value gradient, causal with odd lengths (partial
blocks, rows past the last key block), an additive mask broadcast over the batch, strided q/k/v views
of one projection, and a head dim without a vector width (shapes tiny); and the decode step's one-query kernel."""
from __future__ import annotations

import numpy as np
import pytest

import zyx
import zyx.nn.functional as F
from zyx import settings
from zyx.backend.launch import recording

torch = pytest.importorskip("torch")
NAMES = {"zyx_attention_fwd", "zyx_attention_dq", "zyx_attention_dkdv"}


@pytest.mark.parametrize("t, s, d, causal, masked", [(7, 7, 8, True, False), (3, 18, 5, False, True)],
                         ids=["causal-strided", "masked-odd-dim"])
def test_attention(sim, monkeypatch, t, s, d, causal, masked):
    monkeypatch.setattr(settings, "HEURISTICS", "cpu")  # the kernels are the CPU choice
    rng = np.random.default_rng(9)
    q, k, v = (rng.normal(size=(2, n, 2, d)).astype(np.float32) for n in (t, s, s))
    mask = rng.normal(size=(t, s)).astype(np.float32) if masked else None
    zt = [zyx.from_numpy(a, device=sim).requires_grad_() for a in (q, k, v)]
    tt = [torch.tensor(a, requires_grad=True) for a in (q, k, v)]
    zm = None if mask is None else zyx.from_numpy(mask, device=sim)
    with recording() as launches:  # (batch, heads, T, d) views of (batch, T, heads, d) tensors: strided reads
        out = F.scaled_dot_product_attention(*(z.transpose(1, 2) for z in zt), attn_mask=zm, is_causal=causal)
        out.square().sum().backward()
        grads = [z.grad.numpy() for z in zt]
    assert NAMES <= {k.name for k, *_ in launches}
    ref = torch.nn.functional.scaled_dot_product_attention(*(x.transpose(1, 2) for x in tt), is_causal=causal,
                                                           attn_mask=None if mask is None else torch.tensor(mask))
    ref.square().sum().backward()
    np.testing.assert_allclose(out.numpy(), ref.detach().numpy(), rtol=1e-5, atol=1e-5)
    for g, x in zip(grads, tt):
        np.testing.assert_allclose(g, x.grad.numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("d", [8, 6])  # 8-lane vectors; 2-lane ones
def test_decode_attention(sim, d):
    """templates/decode_attention.cl.mako: keys and values read in place as the halves of one ring, a
    left-padding row masked with -inf, n short of the ring (the rows past n are never read): a block of rows
    scored together, then two rows one at a time."""
    from zyx.nn.functional_attention import decode_attention

    rng = np.random.default_rng(d)
    q = rng.standard_normal((2, 4, d)).astype(np.float32)
    ring = rng.standard_normal((7, 2, 4, d)).astype(np.float32)  # (rows, batch, 2 x 2 kv heads, d)
    mask = np.zeros((7, 2), np.float32)
    mask[0, 1] = -np.inf
    zr = zyx.from_numpy(ring, sim)
    with recording() as launches:
        got = decode_attention(zyx.from_numpy(q, sim), zr[:, :, :2], zr[:, :, 2:], zyx.from_numpy(mask, sim), 6).numpy()
    assert "zyx_decode_attention" in {k.name for k, *_ in launches}
    heads = np.arange(4) // 2
    s = np.einsum("bhd,nbhd->nbh", q, ring[:6, :, heads]) / np.sqrt(d) + mask[:6, :, None]
    p = np.exp(s - s.max(0))
    p /= p.sum(0)
    np.testing.assert_allclose(got, np.einsum("nbh,nbhd->bhd", p, ring[:6, :, 2 + heads]), rtol=1e-5, atol=1e-5)
