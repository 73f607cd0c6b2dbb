"""API.md audit: semantics users program against, compared with PyTorch CPU (skipped without torch).

One line per promise of the sections Tensor basics, Elementwise, Movement and indexing,
Reductions, Linear algebra and nn, Errors; the error tests need no torch.
"""
from __future__ import annotations

import numpy as np
import pytest

import zyx
import zyx.nn.functional as F

pytestmark = pytest.mark.needs_device

RNG = np.random.default_rng(11)
A = RNG.uniform(-2, 2, (3, 4)).astype(np.float32)
NANS = np.array([np.nan, 1.0, 2.0], np.float32)


@pytest.fixture(scope="module")
def T():
    return pytest.importorskip("torch")


def _same(z, t, rtol=1e-5, atol=1e-5):
    if isinstance(t, (tuple, list)):
        assert len(z) == len(t), (len(z), len(t))
        for a, b in zip(z, t):
            _same(a, b, rtol, atol)
        return
    got, want = z.numpy(), t.numpy()
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol, equal_nan=True)


CASES = {
    # movement and indexing
    "T": (lambda z, n: z.T, lambda t, T: t.T),
    "squeeze_tuple": (lambda z, n: z.reshape(1, 3, 1, 4).squeeze((0, 2)),
                      lambda t, T: t.reshape(1, 3, 1, 4).squeeze((0, 2))),
    "squeeze_not_one": (lambda z, n: z.reshape(1, 3, 1, 4).squeeze(1), lambda t, T: t.reshape(1, 3, 1, 4).squeeze(1)),
    "pad_crop_value": (lambda z, n: z.pad((-1, 2, 1, -1), value=7.0),
                       lambda t, T: T.nn.functional.pad(t, (-1, 2, 1, -1), value=7.0)),
    "pad_crop_all": (lambda z, n: zyx.pad(z, (-2, -2)), lambda t, T: T.nn.functional.pad(t, (-2, -2))),
    "negative_steps": (lambda z, n: z[2:0:-1, 3:-5:-2], lambda t, T: T.tensor(A[2:0:-1, 3:-5:-2].copy())),
    "ellipsis_none": (lambda z, n: z[..., None, ::-1][:, :, 1],
                      lambda t, T: T.tensor(A[..., None, ::-1][:, :, 1].copy())),
    "split_int": (lambda z, n: z.split(3, 1), lambda t, T: t.split(3, 1)),
    "split_list": (lambda z, n: zyx.split(z, [0, 1, 3], 1), lambda t, T: T.split(t, [0, 1, 3], 1)),
    "chunk_uneven": (lambda z, n: zyx.zeros(5).chunk(4), lambda t, T: T.zeros(5).chunk(4)),
    "chunk_empty": (lambda z, n: zyx.zeros(0, 3).chunk(2), lambda t, T: T.zeros(0, 3).chunk(2)),
    "stack_neg": (lambda z, n: zyx.stack([z, z * 2], -1), lambda t, T: T.stack([t, t * 2], -1)),
    # advanced indexing, gather and scatter
    "adv_pairs": (lambda z, n: z[[2, 0], [-1, 1]], lambda t, T: t[[2, 0], [-1, 1]]),
    "adv_after_slice": (lambda z, n: z[1:, [3, 3, 0]], lambda t, T: t[1:, [3, 3, 0]]),
    "mask_select": (lambda z, n: z[z > 0], lambda t, T: t[t > 0]),
    "gather_fn": (lambda z, n: zyx.gather(z, 1, zyx.tensor([[3, 0], [1, 1], [2, 2]])),
                  lambda t, T: T.gather(t, 1, T.tensor([[3, 0], [1, 1], [2, 2]]))),
    "scatter_add_dup": (lambda z, n: z.scatter_add(0, zyx.tensor([[0, 0, 0, 0]]), z[:1]),
                        lambda t, T: t.scatter_add(0, T.tensor([[0, 0, 0, 0]]), t[:1])),
    # sorting and selection: NaN sorts largest (first when descending); median propagates NaN
    "sort_nan_desc": (lambda z, n: n.sort(descending=True), lambda t, T: T.tensor(NANS).sort(descending=True)),
    "topk_dim0": (lambda z, n: z.topk(2, dim=0), lambda t, T: t.topk(2, dim=0)),
    "median_nan": (lambda z, n: n.median(0), lambda t, T: T.tensor(NANS).median(0)),
    "unique_counts": (lambda z, n: zyx.tensor([3, 1, 3, 2]).unique(return_counts=True),
                      lambda t, T: T.tensor([3, 1, 3, 2]).unique(return_counts=True)),
    # more movement and shape ops
    "repeat_lead": (lambda z, n: z.repeat(2, 1, 2), lambda t, T: t.repeat(2, 1, 2)),
    "repeat_interleave_flat": (lambda z, n: zyx.repeat_interleave(z, 2), lambda t, T: T.repeat_interleave(t, 2)),
    "movedim_tuple": (lambda z, n: z.reshape(3, 2, 2).movedim((0, 1), (2, 0)),
                      lambda t, T: t.reshape(3, 2, 2).movedim((0, 1), (2, 0))),
    "diagonal_neg": (lambda z, n: z.diagonal(-1), lambda t, T: t.diagonal(-1)),
    "pad_reflect": (lambda z, n: zyx.pad(z, (2, 1), mode="reflect"),
                    lambda t, T: T.nn.functional.pad(t, (2, 1), "reflect")),
    "einsum_implicit": (lambda z, n: zyx.einsum("ij,kj", z, z), lambda t, T: T.einsum("ij,kj", t, t)),
    "norm_fro": (lambda z, n: zyx.linalg.norm(z), lambda t, T: T.linalg.norm(t)),
    "norm_spectral": (lambda z, n: zyx.linalg.norm(z, 2), lambda t, T: T.linalg.norm(t, 2)),
    "svdvals_wide": (lambda z, n: zyx.linalg.svdvals(z), lambda t, T: T.linalg.svdvals(t)),
    # reductions
    "var": (lambda z, n: z.var(), lambda t, T: t.var()),
    "var_correction0": (lambda z, n: z.var(1, correction=0), lambda t, T: t.var(1, correction=0)),
    "std_keepdim": (lambda z, n: z.std(0, keepdim=True), lambda t, T: t.std(0, keepdim=True)),
    "argmax_first": (lambda z, n: zyx.tensor([[1.0, 3, 3], [2, 2, 0]]).argmax(1),
                     lambda t, T: T.tensor([[1.0, 3, 3], [2, 2, 0]]).argmax(1)),
    "argmax_flat": (lambda z, n: zyx.tensor([[1.0, 3, 3], [2, 2, 0]]).argmax(),
                    lambda t, T: T.tensor([[1.0, 3, 3], [2, 2, 0]]).argmax()),
    "argmin_flat_keepdim": (lambda z, n: z.argmin(keepdim=True), lambda t, T: t.argmin(keepdim=True)),
    "max_values_only": (lambda z, n: z.max(1), lambda t, T: t.amax(1)),
    "min_tuple_keepdim": (lambda z, n: z.min((0, 1), keepdim=True), lambda t, T: t.amin((0, 1), keepdim=True)),
    "sum_empty": (lambda z, n: zyx.zeros(0, 3).sum(), lambda t, T: T.zeros(0, 3).sum()),
    "sum_empty_dim": (lambda z, n: zyx.zeros(0, 3).sum(0), lambda t, T: T.zeros(0, 3).sum(0)),
    "max_of_nonempty_dim": (lambda z, n: zyx.zeros(0, 3).max(1), lambda t, T: T.zeros(0, 3).amax(1)),
    "nan_argmax": (lambda z, n: n.argmax(), lambda t, T: T.tensor(NANS).argmax()),
    "nan_max": (lambda z, n: n.max(), lambda t, T: T.tensor(NANS).max()),
    # elementwise
    "clip_min_only": (lambda z, n: z.clip(min=0.5), lambda t, T: t.clip(min=0.5)),
    "clip_max_only": (lambda z, n: z.clip(max=0.5), lambda t, T: t.clip(max=0.5)),
    "clip_int_float_bound": (lambda z, n: zyx.tensor([1, 5, 9]).clip(2.5, 6),
                             lambda t, T: T.tensor([1, 5, 9]).clip(2.5, 6)),
    "where_scalars": (lambda z, n: zyx.where(z > 0, 1, 0.5), lambda t, T: T.where(t > 0, 1, 0.5)),
    "gelu_tanh": (lambda z, n: z.gelu(approximate="tanh"), lambda t, T: T.nn.functional.gelu(t, approximate="tanh")),
    "bool_add": (lambda z, n: zyx.tensor([True, False]) + zyx.tensor([True, True]),
                 lambda t, T: T.tensor([True, False]) + T.tensor([True, True])),
    "bool_times_float": (lambda z, n: zyx.tensor([True, False]) * 2.5, lambda t, T: T.tensor([True, False]) * 2.5),
    "bool_div": (lambda z, n: zyx.tensor([True, False]) / zyx.tensor([True, True]),
                 lambda t, T: T.tensor([True, False]) / T.tensor([True, True])),
    "nan_lt": (lambda z, n: n < 1.5, lambda t, T: T.tensor(NANS) < 1.5),
    "nan_ne_self": (lambda z, n: n != n, lambda t, T: T.tensor(NANS) != T.tensor(NANS)),
    "nan_clip": (lambda z, n: n.clip(0, 1.5), lambda t, T: T.tensor(NANS).clip(0, 1.5)),
    "int_floor_division": (lambda z, n: zyx.tensor([7, -7, 7, -7]) // zyx.tensor([2, 2, -2, -2]),
                           lambda t, T: T.tensor([7, -7, 7, -7]) // T.tensor([2, 2, -2, -2])),
    "int_mod": (lambda z, n: zyx.tensor([7, -7, 7, -7]) % zyx.tensor([2, 2, -2, -2]),
                lambda t, T: T.tensor([7, -7, 7, -7]) % T.tensor([2, 2, -2, -2])),
    # linear algebra
    "vec_at_mat": (lambda z, n: z[0] @ z.T, lambda t, T: t[0] @ t.T),
    "mat_at_vec": (lambda z, n: z @ z[0], lambda t, T: t @ t[0]),
    "vec_at_vec_0d": (lambda z, n: z[0] @ z[1], lambda t, T: t[0] @ t[1]),
    "batched_broadcast": (lambda z, n: z.reshape(2, 1, 3, 2) @ z.reshape(3, 2, 2),
                          lambda t, T: t.reshape(2, 1, 3, 2) @ t.reshape(3, 2, 2)),
    "vec_at_batched": (lambda z, n: z[0, :2] @ z.reshape(3, 2, 2), lambda t, T: t[0, :2] @ t.reshape(3, 2, 2)),
    "rank6": (lambda z, n: (z.reshape(1, 3, 1, 2, 2, 1) * 2).sum((1, 3)).permute(3, 0, 2, 1) @ z[:1, :1],
              lambda t, T: (t.reshape(1, 3, 1, 2, 2, 1) * 2).sum((1, 3)).permute(3, 0, 2, 1) @ t[:1, :1]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_against_torch(name, T):
    zf, tf = CASES[name]
    _same(zf(zyx.tensor(A), zyx.tensor(NANS)), tf(T.tensor(A), T))


def test_nn_against_torch(T):
    TF = T.nn.functional
    logits = RNG.normal(size=(5, 4)).astype(np.float32)
    target = np.array([0, 3, 1, 2, 3])
    _same(F.cross_entropy(zyx.tensor(logits), zyx.tensor(target)), TF.cross_entropy(T.tensor(logits), T.tensor(target)))
    _same(F.cross_entropy(zyx.tensor(logits), zyx.tensor(target.astype(np.int32)), reduction="none"),
          TF.cross_entropy(T.tensor(logits), T.tensor(target), reduction="none"))
    q, k, v = (RNG.normal(size=(2, 3, 5, 8)).astype(np.float32) for _ in range(3))
    k7, v7 = (RNG.normal(size=(2, 3, 7, 8)).astype(np.float32) for _ in range(2))
    bool_mask = RNG.integers(0, 2, (5, 5)).astype(bool)
    bool_mask[:, 0] = True
    float_mask = RNG.normal(size=(5, 5)).astype(np.float32)
    Z, TT = zyx.tensor, T.tensor
    sdpa, tsdpa = F.scaled_dot_product_attention, TF.scaled_dot_product_attention
    _same(sdpa(Z(q), Z(k), Z(v), is_causal=True), tsdpa(TT(q), TT(k), TT(v), is_causal=True))
    _same(sdpa(Z(q), Z(k7), Z(v7), is_causal=True), tsdpa(TT(q), TT(k7), TT(v7), is_causal=True))
    _same(sdpa(Z(q), Z(k), Z(v), attn_mask=Z(bool_mask)), tsdpa(TT(q), TT(k), TT(v), attn_mask=TT(bool_mask)))
    _same(sdpa(Z(q), Z(k), Z(v), attn_mask=Z(float_mask)), tsdpa(TT(q), TT(k), TT(v), attn_mask=TT(float_mask)))
    x = zyx.tensor(A)
    _same(F.dropout(x, 0.5, training=False), TF.dropout(T.tensor(A), 0.5, training=False))
    _same(F.dropout(x, 0.0), TF.dropout(T.tensor(A), 0.0))
    _same(F.dropout(x, 1.0), TF.dropout(T.tensor(A), 1.0))
    w = RNG.normal(size=4).astype(np.float32)
    _same(F.layer_norm(x, (4,)), TF.layer_norm(T.tensor(A), (4,)))
    _same(F.layer_norm(x, 4, zyx.tensor(w)), TF.layer_norm(T.tensor(A), (4,), T.tensor(w)))
    _same(F.layer_norm(x, (4,), None, zyx.tensor(w)), TF.layer_norm(T.tensor(A), (4,), None, T.tensor(w)))


def test_dropout_keeps_about_half_scaled():
    x = zyx.ones(4096)
    y = F.dropout(x, 0.5).numpy()
    assert set(np.unique(y).tolist()) <= {0.0, 2.0}
    assert 0.4 < (y > 0).mean() < 0.6


def test_basics():
    x = zyx.tensor(A)
    assert x.realize() is x
    y = (x + 1).realize()
    assert isinstance(y, zyx.Tensor) and y.shape == (3, 4)
    zyx.synchronize()
    stats = zyx.memory_stats()
    assert {"bytes_in_use", "peak_bytes", "live_buffers", "pooled_bytes"} <= set(stats)
    before = zyx.kernel_count()
    (x * 2).realize()
    assert zyx.kernel_count() == before + 1
    assert (len(x), x.numel(), x.ndim) == (3, 12, 2)
    assert (int(zyx.tensor(3)), float(zyx.tensor(2.5)), bool(zyx.tensor([1]))) == (3, 2.5, True)


def test_errors_say_what():
    x = zyx.tensor(A)
    for fn in (lambda: x.sum(5), lambda: x.squeeze(3), lambda: x.unsqueeze(4), lambda: x.transpose(0, 2),
               lambda: x.softmax(2), lambda: x.argmax(2), lambda: x.split(2, 2), lambda: zyx.stack([x, x], 4),
               lambda: x.flatten(0, 3), lambda: x.narrow(0, 2, 5), lambda: x[3]):
        with pytest.raises(zyx.IndexOutOfRange) as info:
            fn()
        assert isinstance(info.value, IndexError) and isinstance(info.value, zyx.ShapeError)
    with pytest.raises(zyx.ShapeError, match=r"\(3, 4\).*\(3, 4\)"):
        x @ x
    with pytest.raises(zyx.ShapeError, match="rank"):
        zyx.ones(2, 2, 2).T  # noqa: B018 - the property itself raises
    with pytest.raises(zyx.ShapeError, match="normalized_shape"):
        F.layer_norm(x, (3,))
    with pytest.raises(zyx.ShapeError, match="do not add up"):
        x.split([1, 1], 1)
    with pytest.raises(zyx.DTypeError, match="bool tensor, got float32"):
        zyx.where(x, 1.0, 0.0)
    with pytest.raises(zyx.DTypeError, match="bool"):
        zyx.tensor([True, False]).argmax()
    with pytest.raises(zyx.DTypeError):
        x & x
    with pytest.raises(zyx.DTypeError):
        zyx.tensor([1, 2]).mean()
    with pytest.raises(zyx.ShapeError, match="empty"):
        zyx.zeros(0, 3).max()
    with pytest.raises(zyx.ShapeError, match="empty"):
        zyx.zeros(0, 3).argmax()
