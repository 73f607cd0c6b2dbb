"""The attention kernels (zyx.kernels.attention, templates/attention.cl.mako) against PyTorch's
scaled_dot_product_attention: values and the gradients of q, k and v, causal and masked (bool and
additive, broadcast), odd lengths, Tq != Tk (decode: Tq = 1), head dims up to 128 and unequal ones,
strided inputs, 16-bit dtypes, every row count a work item may own; the composed fallbacks (dropout,
empty tensors); MultiheadAttention through the kernels. Every device buffer starts poisoned (conftest)."""
from __future__ import annotations

import numpy as np
import pytest

import zyx
import zyx.nn.functional as F
from zyx.backend.launch import recording
from zyx.kernels import attention as kernels
from zyx.nn import functional_attention

torch = pytest.importorskip("torch")
TF = torch.nn.functional
RNG = np.random.default_rng(3003)
pytestmark = pytest.mark.needs_device
NAMES = {"zyx_attention_fwd", "zyx_attention_dq", "zyx_attention_dkdv"}


def _arr(*shape):
    return RNG.normal(size=shape).astype(np.float32)


def _check(q, k, v, mask=None, causal=False, scale=None, tol=2e-5, grad=True, dtype=None, expect=NAMES):
    """zyx's attention (values, gradients) against PyTorch's on the float32 arrays; which kernels ran."""
    zs = [zyx.tensor(a, requires_grad=grad) for a in (q, k, v)]
    zin = [z.cast(dtype) for z in zs] if dtype is not None else zs
    zm = None if mask is None else zyx.tensor(mask)
    ts = [torch.tensor(a, requires_grad=grad) for a in (q, k, v)]
    ref = TF.scaled_dot_product_attention(*ts, attn_mask=None if mask is None else torch.tensor(mask),
                                          is_causal=causal, scale=scale)
    go = _arr(*ref.shape)
    with recording() as launches:
        out = F.scaled_dot_product_attention(*zin, attn_mask=zm, is_causal=causal, scale=scale)
        got = out.cast(zyx.float32).numpy()
        if grad:
            (out.cast(zyx.float32) * zyx.tensor(go)).sum().backward()
            grads = [z.grad.numpy() for z in zs]
    np.testing.assert_allclose(got, ref.detach().numpy(), rtol=tol, atol=tol)
    if grad:
        (ref * torch.tensor(go)).sum().backward()
        for g, t in zip(grads, ts):
            np.testing.assert_allclose(g, t.grad.numpy(), rtol=tol * 5, atol=tol * 5)
    ran = {k.name for k, *_ in launches} & NAMES
    assert ran == (expect if grad or not expect else {"zyx_attention_fwd"})


CASES = [  # batch shape, Tq, Tk, head dim (q, k), head dim (v), causal
    ((2, 3), 17, 17, 64, 64, True),  # odd length: a partial key block
    ((2,), 40, 20, 128, 128, True),  # Tq > Tk: rows past the keys see all of them
    ((1, 2), 5, 33, 24, 40, False),  # Tq < Tk, unequal head dims (8-lane vectors)
    ((3,), 1, 65, 64, 64, False),  # a decode step: one query row
    ((2, 2), 9, 12, 5, 3, True),  # head dims without a vector width: scalar columns
    ((), 16, 16, 16, 16, False),  # no batch dims
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: "x".join(map(str, c[:5])) + ("c" if c[5] else ""))
def test_matches_torch(case):
    bs, tq, tk, dk, dv, causal = case
    _check(_arr(*bs, tq, dk), _arr(*bs, tk, dk), _arr(*bs, tk, dv), causal=causal)


@pytest.mark.parametrize("rows", [1, 3, 8])
def test_rows_a_work_item(rows, monkeypatch):
    monkeypatch.setattr(kernels, "rows", lambda kind, dk, dv: rows)
    _check(_arr(2, 19, 32), _arr(2, 23, 32), _arr(2, 23, 16), causal=True)


def test_masks():
    add = _arr(7, 9)  # additive, broadcast over the batch
    _check(_arr(2, 3, 7, 16), _arr(2, 3, 9, 16), _arr(2, 3, 9, 16), mask=add, scale=0.3)
    keep = RNG.random((3, 1, 9)) > 0.4  # bool, broadcast over rows and the first batch dim
    keep[1, 0, :] = False  # a row with no live key: zeros, and no gradient through it
    _check(_arr(2, 3, 7, 16), _arr(2, 3, 9, 16), _arr(2, 3, 9, 16), mask=keep)


def test_strided_and_broadcast_inputs():
    b, t, h, hd = 2, 13, 3, 16
    qkv = _arr(b, t, 3, h, hd)
    q, k, v = (np.ascontiguousarray(x) for x in qkv.transpose(2, 0, 3, 1, 4))
    zq = zyx.tensor(qkv, requires_grad=True)
    zp = zq.permute(2, 0, 3, 1, 4)  # q, k, v as views of one projection, as attention blocks make them
    out = F.scaled_dot_product_attention(zp[0], zp[1], zp[2], is_causal=True)
    ts = [torch.tensor(x, requires_grad=True) for x in (q, k, v)]
    ref = TF.scaled_dot_product_attention(*ts, is_causal=True)
    np.testing.assert_allclose(out.numpy(), ref.detach().numpy(), rtol=2e-5, atol=2e-5)
    out.sum().backward()
    ref.sum().backward()
    want = np.stack([t.grad.numpy() for t in ts]).transpose(1, 3, 0, 2, 4)
    np.testing.assert_allclose(zq.grad.numpy(), want, rtol=1e-4, atol=1e-4)
    # keys and values shared by every head (batch dim 1): their gradients summed over the heads
    _check(_arr(2, 4, 11, 8), _arr(2, 1, 11, 8), _arr(1, 1, 11, 8))


@pytest.mark.parametrize("dtype", [zyx.float16, zyx.bfloat16], ids=lambda d: d.name)
def test_16_bit(dtype):
    q, k, v = _arr(2, 10, 16), _arr(2, 12, 16), _arr(2, 12, 16)
    rounded = [zyx.tensor(a).cast(dtype).cast(zyx.float32).numpy() for a in (q, k, v)]
    _check(*rounded, causal=True, dtype=dtype, tol=2e-2 if dtype == zyx.bfloat16 else 4e-3)


def test_composed_fallbacks():
    # empty tensors: PyTorch's shapes and values
    _check(_arr(2, 0, 8), _arr(2, 5, 8), _arr(2, 5, 8), expect=set())
    _check(_arr(2, 3, 8), _arr(2, 0, 8), _arr(2, 0, 8), grad=False, expect=set())
    # dropout: the composed weights (dropped at random), never the kernels
    q = zyx.tensor(_arr(1, 6, 8))
    with recording() as launches:
        F.scaled_dot_product_attention(q, q, q, dropout_p=0.5).numpy()
    assert not {k.name for k, *_ in launches} & NAMES


def test_multihead_attention():
    e, h = 32, 4
    x = _arr(3, 10, e)
    keep = RNG.random((3, 10)) > 0.8  # key padding: True = ignored
    zm = zyx.nn.MultiheadAttention(e, h, batch_first=True)
    tm = torch.nn.MultiheadAttention(e, h, batch_first=True)
    tm.load_state_dict({k: torch.tensor(v.numpy()) for k, v in zm.state_dict().items()})
    zx = zyx.tensor(x, requires_grad=True)
    tx = torch.tensor(x, requires_grad=True)
    with recording() as launches:
        out, w = zm(zx, zx, zx, key_padding_mask=zyx.tensor(keep), need_weights=False)
        out.sum().backward()
        gx = zx.grad.numpy()
    ref, _ = tm(tx, tx, tx, key_padding_mask=torch.tensor(keep), need_weights=False)
    ref.sum().backward()
    assert w is None and NAMES <= {k.name for k, *_ in launches}
    np.testing.assert_allclose(out.numpy(), ref.detach().numpy(), rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(gx, tx.grad.numpy(), rtol=1e-4, atol=1e-4)


def test_double_backward():
    """With create_graph the gradients are composed, so they have gradients of their own."""
    q, k, v = _arr(2, 7, 8), _arr(2, 9, 8), _arr(2, 9, 8)
    got = []
    for lib, make in ((zyx, lambda a: zyx.tensor(a, requires_grad=True)),
                      (torch, lambda a: torch.tensor(a, requires_grad=True))):
        ts = [make(a) for a in (q, k, v)]
        fn = F.scaled_dot_product_attention if lib is zyx else TF.scaled_dot_product_attention
        out = fn(*ts, is_causal=True)
        gq, = lib.autograd.grad((out * out).sum(), [ts[0]], create_graph=True)
        (gq * gq).sum().backward()
        got.append([t.grad.numpy() if lib is zyx else t.grad.detach().numpy() for t in ts[1:]])
    for a, b in zip(*got):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)


def test_dispatch_and_kernel_count():
    """Causal attention and small or long problems take the kernels; a large one of short rows without a
    causal mask the composed path (measured faster there). A forward is two kernels: the transposed keys
    and the attention; a train step's backward adds the transposed values, queries and output gradient."""
    def use(b, tq, tk, d, causal):
        q, k = zyx.zeros(b, tq, d), zyx.zeros(b, tk, d)  # lazy: never computed
        return functional_attention.use_kernels(q, k, k, None, 0.0, causal)

    assert use(256, 128, 128, 64, True) and use(4, 64, 64, 64, False) and use(2, 512, 512, 64, False)
    assert not use(256, 128, 128, 64, False)
    q, k, v = (zyx.tensor(_arr(2, 3, 20, 16)).realize() for _ in range(3))
    with recording() as launches:
        F.scaled_dot_product_attention(q, k, v, is_causal=True).realize()
    assert [k.name for k, *_ in launches][-1] == "zyx_attention_fwd" and len(launches) == 2
