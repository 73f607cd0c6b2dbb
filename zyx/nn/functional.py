"""``zyx.nn.functional``: softmax family, linear, layer_norm, embedding, attention, dropout, loss.

Everything is composed from lazy elementwise ops, reductions and matmul, so it fuses:
softmax, log_softmax and layer_norm over the last dim are one row kernel each (the row's reduces,
then its outputs, in one work item: ``ir.kernel.row_kernel``); over another dim softmax is three.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from zyx.errors import DTypeError, IndexOutOfRange, ShapeError
from zyx.frontend import reduce as R
from zyx.frontend.elementwise import binary, unary, where
from zyx.frontend.index_access import take_rows
from zyx.frontend.softmax import float_work as _work
from zyx.frontend.softmax import log_softmax, softmax, softmin  # noqa: F401 - log_softmax, softmin re-exported
from zyx.nn import functional_attention
from zyx.op import Op


def linear(x: Any, weight: Any, bias: Any = None):
    """``x @ weight.T + bias`` (weight: (out_features, in_features))."""
    y = R.matmul(x, weight.transpose(-1, -2) if weight.ndim >= 2 else weight)
    return y if bias is None else y + bias


def layer_norm(x: Any, normalized_shape: Sequence[int] | int, weight: Any = None, bias: Any = None,
               eps: float = 1e-5):
    """Normalize over the trailing ``normalized_shape`` dims (biased variance), then scale and shift."""
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    normalized_shape = tuple(normalized_shape)
    k = len(normalized_shape)
    if k == 0:
        raise ShapeError("layer_norm: normalized_shape is empty; expected at least one trailing dim of input "
                         f"shape {x.shape}")
    if tuple(x.shape[x.ndim - k:]) != normalized_shape or k > x.ndim:
        raise ShapeError(f"layer_norm: normalized_shape {normalized_shape} does not match the trailing dims "
                         f"of input shape {x.shape}")
    w, out_dt = _work(x)
    dims = tuple(range(x.ndim - k, x.ndim))
    n = math.prod(normalized_shape)
    mu = R.reduce(w, Op.SUM, dims, keepdim=True) * (1.0 / n)
    d = w - mu
    var = R.reduce(d * d, Op.SUM, dims, keepdim=True) * (1.0 / n)
    out = d * unary(Op.RSQRT, var + eps)
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out.cast(out_dt)


def embedding(indices: Any, weight: Any, padding_idx: int | None = None):
    """Rows of ``weight`` (V, D) selected by integer ``indices`` of any shape: (..., D).

    One gather kernel (``n x D`` work, not a one-hot contraction over the vocabulary); an index
    outside ``[0, V)`` never reads out of bounds and raises ``IndexOutOfRange`` (an ``IndexError``)
    when values are next read (device error flag). The row ``padding_idx`` (negative counts from
    the end) gets no gradient, as PyTorch's.
    """
    if not indices.dtype.is_int:
        raise DTypeError(f"embedding: indices must be an integer tensor, got {indices.dtype.name}")
    if weight.ndim != 2:
        raise ShapeError(f"embedding: weight must be 2-D (num_embeddings, embedding_dim), got shape {weight.shape}")
    out = take_rows(weight, indices)
    if padding_idx is None:
        return out
    rows = weight.shape[0]
    if not -rows <= padding_idx < rows:
        raise IndexOutOfRange(f"embedding: padding_idx {padding_idx} must be within num_embeddings {rows} "
                              f"(expected a value in [{-rows}, {rows - 1}])")
    if not weight.requires_grad:
        return out
    # same values; the padding rows' gradient stops here, as PyTorch's embedding backward skips them
    keep = binary(Op.NE, indices, padding_idx % rows).unsqueeze(-1)
    return where(keep, out, out.detach())


def scaled_dot_product_attention(q: Any, k: Any, v: Any, attn_mask: Any = None, dropout_p: float = 0.0,
                                 is_causal: bool = False, *, scale: float | None = None, enable_gqa: bool = False):
    """``softmax(q k^T * scale + mask) v``; a bool mask keeps True positions (PyTorch's signature:
    ``dropout_p`` drops attention weights, ``enable_gqa`` shares each k/v head among a group of q heads)."""
    if is_causal and attn_mask is not None:
        raise ShapeError("scaled_dot_product_attention: an explicit attn_mask must not be given with is_causal=True")
    if enable_gqa and q.ndim >= 3 and k.ndim >= 3 and q.shape[-3] != k.shape[-3]:
        hq, hk, hv = q.shape[-3], k.shape[-3], v.shape[-3]
        if hk == 0 or hq % hk or hk != hv:
            raise ShapeError(f"scaled_dot_product_attention: enable_gqa needs the query heads ({hq}) to be a "
                             f"multiple of the key/value heads ({hk}, {hv}), which must be equal")
        k, v = k.repeat_interleave(hq // hk, -3), v.repeat_interleave(hq // hk, -3)
    d = q.shape[-1]
    scale = 1.0 / math.sqrt(d) if scale is None else scale
    if functional_attention.use_kernels(q, k, v, attn_mask, dropout_p, is_causal):  # the tiled kernels: no T x T matrix
        return functional_attention.attention(q, k, v, attn_mask, is_causal, scale)
    scores = R.matmul(q, k.transpose(-1, -2)) * scale
    L, S = scores.shape[-2], scores.shape[-1]
    if is_causal:
        from zyx.frontend.creation import arange, pinned_as

        rows, cols = (pinned_as(arange(n, device=q.device), q) for n in (L, S))
        keep = binary(Op.GE, rows.unsqueeze(1), cols.unsqueeze(0))
        scores = where(keep, scores, float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype.is_bool:
            scores = where(attn_mask, scores, float("-inf"))
        else:
            scores = scores + attn_mask
    weights = softmax(scores, -1) if attn_mask is None else _safe_softmax(scores)
    if dropout_p > 0.0:  # PyTorch drops attention weights whenever dropout_p > 0 (no training flag)
        weights = dropout(weights, dropout_p)
    return R.matmul(weights, v)


def _safe_softmax(scores: Any):
    """Softmax over the last dim whose fully masked rows (all -inf) are 0 rather than NaN, in value and
    gradient, as PyTorch's attention gives them: such a row's max is clamped to the lowest finite value
    (its exps are then 0) and its sum to 0.5 (a live row's sum is at least 1: its max contributes
    exp(0)). Clamps, not ``where``s on the row values, so it stays one row kernel like ``softmax``."""
    w, out_dt = _work(scores)
    m = binary(Op.MAXIMUM, R.reduce(w, Op.MAX, -1, keepdim=True).detach(),  # the shift cancels: no gradient
               float(np.finfo(w.dtype.np_dtype).min))
    e = unary(Op.EXP, w - m)
    s = binary(Op.MAXIMUM, R.reduce(e, Op.SUM, -1, keepdim=True), 0.5)
    return (e * unary(Op.RECIPROCAL, s)).cast(out_dt)


def dropout(x: Any, p: float = 0.5, training: bool = True, inplace: bool = False):
    """Zero each element with probability ``p`` and scale the rest by ``1/(1-p)``; ``inplace`` writes
    the result into ``x`` and returns it."""
    if not 0.0 <= p <= 1.0:
        raise ShapeError(f"dropout: p must be in [0, 1], got {p}")
    if not training or p == 0.0:
        return x
    if p == 1.0:
        out = x * 0
    else:
        from zyx.frontend.creation import pinned_as, rand

        keep = binary(Op.GE, pinned_as(rand(*x.shape, device=x.device), x), p)
        out = where(keep, x * (1.0 / (1.0 - p)), 0.0).cast(x.dtype) if x.dtype.is_float else where(keep, x, 0)
    if not inplace:
        return out
    x[...] = out
    return x


def cross_entropy(input: Any, target: Any, weight: Any = None, ignore_index: int = -100,  # noqa: A002
                  reduction: str = "mean", label_smoothing: float = 0.0):
    """Cross entropy of (N, C), (N, C, d1, ...) or (C,) logits with class indices or class probabilities
    (weight, ignore_index, label_smoothing as PyTorch); see ``functional_losses.cross_entropy``."""
    from zyx.nn import functional_losses

    return functional_losses.cross_entropy(input, target, weight, ignore_index, reduction, label_smoothing)


def relu(x: Any):
    return unary(Op.RELU, x)


def gelu(x: Any, approximate: str = "none"):
    from zyx.frontend.elementwise import gelu as _g

    return _g(x, approximate)


def silu(x: Any):
    return unary(Op.SILU, x)


def sigmoid(x: Any):
    return unary(Op.SIGMOID, x)


# re-exported last: the functional_* modules import nothing from here, the names are this module's API
from zyx.frontend.einsum import einsum  # noqa: E402, F401 - API.md lists it under zyx.nn.functional too
from zyx.frontend.movement import pad  # noqa: E402, F401 - F.pad(x, pads, mode, value)
from zyx.nn.functional_activations import (  # noqa: E402, F401
    celu,
    elu,
    glu,
    hardsigmoid,
    hardswish,
    hardtanh,
    leaky_relu,
    logsigmoid,
    mish,
    normalize,
    one_hot,
    relu6,
    selu,
    softplus,
    softsign,
    tanh,
    tanhshrink,
)
from zyx.nn.functional_conv import (  # noqa: E402, F401
    conv1d,
    conv2d,
    conv3d,
    conv_transpose1d,
    conv_transpose2d,
    conv_transpose3d,
    fold,
    unfold,
)
from zyx.nn.functional_losses import (  # noqa: E402, F401
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cosine_similarity,
    hinge_embedding_loss,
    huber_loss,
    kl_div,
    l1_loss,
    margin_ranking_loss,
    mse_loss,
    nll_loss,
    pairwise_distance,
    smooth_l1_loss,
)
from zyx.nn.functional_norm import (  # noqa: E402, F401
    batch_norm,
    group_norm,
    instance_norm,
    local_response_norm,
    rms_norm,
)
from zyx.nn.functional_pool import (  # noqa: E402, F401
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    adaptive_max_pool1d,
    adaptive_max_pool2d,
    avg_pool1d,
    avg_pool2d,
    avg_pool3d,
    max_pool1d,
    max_pool2d,
    max_pool3d,
    max_unpool1d,
    max_unpool2d,
    max_unpool3d,
)
from zyx.nn.functional_resample import (  # noqa: E402, F401
    interpolate,
    pixel_shuffle,
    pixel_unshuffle,
    upsample,
    upsample_bilinear,
    upsample_nearest,
)
