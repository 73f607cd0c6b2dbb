"""zyx.nn.functional and softmax/log_softmax against PyTorch CPU."""
from __future__ import annotations

import warnings

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


def test_softmax_family_dtype_argument_and_rank0_dim():
    """PyTorch's ``dtype=`` (the input is cast first) and the dim check of a 0-d input."""
    a = RNG.normal(size=(3, 4)).astype(np.float32)
    z, t = zyx.tensor(a), torch.tensor(a)
    for zf, tf in ((F.softmax, TF.softmax), (F.log_softmax, TF.log_softmax), (F.softmin, TF.softmin)):
        got, want = zf(z, 1, dtype=zyx.float64), tf(t, 1, dtype=torch.float64)
        assert got.dtype is zyx.float64
        _close(got, want, rtol=1e-12, atol=1e-12)
    assert z.softmax(0, dtype="float64").dtype is zyx.float64
    assert zyx.tensor([1, 2, 3]).log_softmax(0, dtype=zyx.float32).dtype is zyx.float32
    s = zyx.tensor(2.0)
    assert s.softmax(-1).item() == 1.0 and s.log_softmax(0).item() == 0.0
    for fn in (s.softmax, s.log_softmax):
        with pytest.raises(IndexError, match="out of range"):
            fn(1)


@pytest.mark.parametrize("rank", [0, 1, 2, 3, 4])
def test_softmax_family_implicit_dim_warns_like_pytorch(rank):
    """No ``dim``: PyTorch's deprecated implicit choice (0 for 0-, 1- and 3-D inputs, else 1) with its
    UserWarning naming the function, attributed to the caller's line; an explicit dim never warns."""
    a = RNG.normal(size=(2, 3, 4, 5)[:rank]).astype(np.float32)
    z, t = zyx.tensor(a), torch.tensor(a)
    for name in ("softmax", "log_softmax", "softmin"):
        with pytest.warns(UserWarning, match=f"Implicit dimension choice for {name} has been deprecated") as rec:
            got = getattr(F, name)(z)
        with pytest.warns(UserWarning, match="Implicit dimension choice"):
            want = getattr(TF, name)(t)
        assert rec[0].filename == __file__
        _close(got, want)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        F.softmax(z, -1 if rank else 0)
        z.softmax(-1)


def test_embedding_padding_idx_has_no_gradient():
    w = RNG.normal(size=(6, 3))
    idx = np.array([[0, 2, 5], [2, 0, 1]])
    for pad in (0, -1, 2):
        zw, tw = zyx.tensor(w, requires_grad=True), torch.tensor(w, requires_grad=True)
        zo, to = F.embedding(zyx.tensor(idx), zw, padding_idx=pad), TF.embedding(torch.tensor(idx), tw, padding_idx=pad)
        _close(zo, to)
        g = RNG.normal(size=zo.shape)
        zo.backward(zyx.tensor(g))
        to.backward(torch.tensor(g))
        _close(zw.grad, tw.grad, rtol=1e-12, atol=1e-12)
    with pytest.raises(IndexError, match="padding_idx"):
        F.embedding(zyx.tensor(idx), zyx.tensor(w), padding_idx=6)


def test_sdpa_fully_masked_rows_are_zero_not_nan():
    """PyTorch's attention gives a query row whose keys are all masked zeros (value and gradient)."""
    q, k, v = (RNG.normal(size=s) for s in ((2, 4, 8), (2, 6, 8), (2, 6, 3)))
    masks = (np.array([[False] * 6] + [[True] * 6] * 3) & (RNG.random((4, 6)) > 0.3) | np.eye(4, 6, dtype=bool),
             np.where(RNG.random((4, 6)) > 0.5, 0.0, -np.inf))
    for m in masks:
        m[0] = False if m.dtype == bool else -np.inf
        zs = [zyx.tensor(a, requires_grad=True) for a in (q, k, v)]
        ts = [torch.tensor(a, requires_grad=True) for a in (q, k, v)]
        zo = F.scaled_dot_product_attention(*zs, attn_mask=zyx.tensor(m))
        to = TF.scaled_dot_product_attention(*ts, attn_mask=torch.tensor(m))
        _close(zo, to, rtol=1e-10, atol=1e-12)
        assert not np.isnan(zo.numpy()).any()
        g = RNG.normal(size=zo.shape) * 10  # large: 1 / a tiny clamped sum times it overflowed to NaN
        zo.backward(zyx.tensor(g))
        to.backward(torch.tensor(g))
        for z, t in zip(zs, ts):
            _close(z.grad, t.grad, rtol=1e-9, atol=1e-10)


def test_dropout_inplace():
    x = zyx.ones(40, 50)
    y = F.dropout(x, 0.4, True, True)
    assert y is x
    np.testing.assert_allclose(np.unique(x.numpy()), [0.0, 1 / 0.6], rtol=1e-6)
    x = zyx.ones(3)
    assert F.dropout(x, 0.4, training=False, inplace=True) is x and x.numpy().sum() == 3


def test_layer_norm_shape_errors():
    x = zyx.ones(3, 6)
    for shape in ((), (5,), (2, 3, 6)):
        with pytest.raises(zyx.ShapeError, match="normalized_shape"):
            F.layer_norm(x, shape)
