"""decode_attention (zyx.nn.functional_attention, zyx.kernels.decode_attention): one query position per head over
the first n rows of a KV-cache ring, against NumPy in float64: grouped-query heads, head dims of every vector
width (16, 8, 4, 2 lanes and odd ones), batches, keys and values as two halves of one ring read in place, left-
padding rows masked with -inf, n from one row to the whole ring, a bound Variable replayed by zyx.jit without a
new build, the composed path (gradients), and errors. Every device buffer starts poisoned (conftest)."""
from __future__ import annotations

import math

import numpy as np
import pytest

import zyx
from zyx.backend.launch import recording
from zyx.errors import ShapeError
from zyx.ir.variable import Variable
from zyx.nn.functional_attention import decode_attention

pytestmark = pytest.mark.needs_device
RNG = np.random.default_rng(4411)


def _case(b, h, kvh, d, rows, pad=0):
    q = RNG.standard_normal((b, h, d)).astype(np.float32)
    k = RNG.standard_normal((rows, b, kvh, d)).astype(np.float32)
    v = RNG.standard_normal((rows, b, kvh, d)).astype(np.float32)
    mask = np.zeros((rows, b), np.float32)
    mask[:pad, -1] = -np.inf  # the last batch row's first positions are left padding
    return q, k, v, mask


def _reference(q, k, v, mask, n):
    b, h, d = q.shape
    kvh = k.shape[2]
    heads = np.arange(h) // (h // kvh)
    kk = k[:n].astype(np.float64)[:, :, heads]  # (n, b, h, d)
    s = np.einsum("bhd,nbhd->nbh", q.astype(np.float64), kk) / math.sqrt(d) + mask[:n, :, None]
    p = np.exp(s - s.max(0))
    p /= p.sum(0)
    return np.einsum("nbh,nbhd->bhd", p, v[:n].astype(np.float64)[:, :, heads])


def _on(device, *arrays):
    return [zyx.from_numpy(a, device) for a in arrays]


@pytest.mark.parametrize("b, h, kvh, d, rows, n, pad", [
    (1, 12, 4, 64, 64, 41, 0),  # the bench model's heads: 16-lane vectors
    (2, 6, 2, 24, 16, 16, 3),  # the whole ring, padding in one batch row: 8-lane vectors
    (1, 4, 4, 12, 8, 1, 0),  # one row, no grouping: 4 lanes
    (3, 2, 1, 6, 5, 4, 2),  # 2 lanes
    (2, 3, 1, 7, 9, 9, 8),  # an odd head dim (scalar lanes); the last row sees one live position
])
def test_matches_numpy(device, b, h, kvh, d, rows, n, pad):
    q, k, v, mask = _case(b, h, kvh, d, rows, pad)
    with recording() as launches:
        got = decode_attention(*_on(device, q, k, v, mask), n).numpy()
    assert [kern.name for kern, *_ in launches].count("zyx_decode_attention") == 1
    np.testing.assert_allclose(got, _reference(q, k, v, mask, n), rtol=1e-5, atol=1e-5)


def test_keys_and_values_read_in_place_from_one_ring(device):
    """The Llama decode step's layout: one ring (rows, batch, 2 x kv_heads, d), keys then values, and the mask
    ring (rows, batch, 1, 1) reshaped, all read in place (no copy kernel before the attention)."""
    q, k, v, mask = _case(2, 6, 3, 16, 12, pad=2)
    ring = zyx.from_numpy(np.concatenate([k, v], 2), device)
    tq, tm = _on(device, q, mask[:, :, None, None])
    with recording() as launches:
        got = decode_attention(tq, ring[:, :, :3], ring[:, :, 3:], tm.reshape(12, 2), 9).numpy()
    assert [kern.name for kern, *_ in launches] == ["zyx_decode_attention"]
    np.testing.assert_allclose(got, _reference(q, k, v, mask, 9), rtol=1e-5, atol=1e-5)


def test_a_variable_length_replays_one_plan(device):
    q, k, v, mask = _case(2, 4, 2, 16, 32, pad=2)
    tq, tk, tv, tm = _on(device, q, k, v, mask)
    n = Variable("n_attn", 1, 32)
    step = zyx.jit(lambda q, k, v, m, n: decode_attention(q, k, v, m, n))
    counts = []
    for length in (3, 5, 17, 32, 4):
        got = step(tq, tk, tv, tm, n.bind(length)).numpy()
        np.testing.assert_allclose(got, _reference(q, k, v, mask, length), rtol=1e-5, atol=1e-5)
        stats = zyx.build_stats()
        counts.append(stats["source_builds"] + stats["binary_loads"])
    assert counts[1:] == [counts[1]] * 4, counts  # after the capture, no length compiles anything


def test_gradients_go_through_the_composed_path(device):
    q, k, v, mask = _case(1, 4, 2, 8, 6, pad=0)
    tq = zyx.tensor(q, device=device, requires_grad=True)
    tk, tv, tm = _on(device, k, v, mask)
    out = decode_attention(tq, tk, tv, tm, 5)
    np.testing.assert_allclose(out.numpy(), _reference(q, k, v, mask, 5), rtol=1e-5, atol=1e-5)
    out.sum().backward()
    torch = pytest.importorskip("torch")
    tq2 = torch.tensor(q, requires_grad=True)
    heads = torch.arange(4) // 2
    kk = torch.tensor(k[:5])[:, :, heads].permute(1, 2, 0, 3)
    vv = torch.tensor(v[:5])[:, :, heads].permute(1, 2, 0, 3)
    torch.nn.functional.scaled_dot_product_attention(tq2.unsqueeze(2), kk, vv).sum().backward()
    np.testing.assert_allclose(tq.grad.numpy(), tq2.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_errors(device):
    q, k, v, mask = _on(device, *_case(1, 4, 2, 8, 6))
    with pytest.raises(ShapeError, match="kv_heads dividing"):
        decode_attention(q, k[:, :, :1].expand(6, 1, 3, 8), v, mask, 2)
    with pytest.raises(ShapeError, match="kv_heads dividing"):
        decode_attention(q, k[:, :, :0], v[:, :, :0], mask, 2)  # no key/value heads
    with pytest.raises(ShapeError, match="mask must be"):
        decode_attention(q, k, v, mask[:5], 2)
    with pytest.raises(ShapeError, match="n = 7 rows of a ring of 6"):
        decode_attention(q, k, v, mask, 7)
