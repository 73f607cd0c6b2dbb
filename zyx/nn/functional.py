"""``zyx.nn.functional``: softmax family, linear, layer_norm, embedding, attention, dropout, loss.

Everything is composed from lazy elementwise ops, reductions and matmul, so it fuses:
softmax, log_softmax and layer_norm over the last dim are one row kernel each (the row's reduces,
then its outputs, in one work item: ``ir.kernel.row_kernel``); over another dim softmax is three.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from zyx.errors import DTypeError, ShapeError
from zyx.frontend import reduce as R
from zyx.frontend.elementwise import binary, unary, where
from zyx.frontend.softmax import float_work as _work
from zyx.frontend.softmax import log_softmax, softmax
from zyx.opt.heuristics import default_opts


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
    if tuple(x.shape[x.ndim - k:]) != normalized_shape or k > x.ndim:
        raise ShapeError(f"layer_norm: normalized_shape {normalized_shape} does not match the trailing dims "
                         f"of input shape {x.shape}")
    w, out_dt = _work(x)
    dims = tuple(range(x.ndim - k, x.ndim))
    n = math.prod(normalized_shape)
    mu = R.reduce(w, "sum", dims, keepdim=True) * (1.0 / n)
    d = w - mu
    var = R.reduce(d * d, "sum", dims, keepdim=True) * (1.0 / n)
    out = d * unary("rsqrt", var + eps)
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out.cast(out_dt)


def embedding(indices: Any, weight: Any):
    """Rows of ``weight`` (V, D) selected by integer ``indices`` of any shape: (..., D).

    One gather kernel (``n x D`` work, not a one-hot contraction over the vocabulary); an index
    outside ``[0, V)`` never reads out of bounds and raises ``IndexOutOfRange`` (an ``IndexError``)
    when values are next read (device error flag).
    """
    if not indices.dtype.is_int:
        raise DTypeError(f"embedding: indices must be an integer tensor, got {indices.dtype.name}")
    if weight.ndim != 2:
        raise ShapeError(f"embedding: weight must be 2-D (num_embeddings, embedding_dim), got shape {weight.shape}")
    from zyx import lazy
    from zyx.codegen.kernel import launch_kernel
    from zyx.frontend.elementwise import from_node

    vocab, dim = weight.shape
    shape = (*indices.shape, dim)
    n = indices.numel()
    device = weight.device
    out = device.pool.allocate(n * dim * weight.dtype.itemsize)
    if n and dim:
        idx, table = indices.contiguous(), weight.contiguous()
        k = _gather_rows_kernel(n, vocab, dim, idx.dtype, table.dtype)
        args = [out.cl, lazy.realize(idx._data).cl, lazy.realize(table._data).cl]
        launch_kernel(device, k, default_opts(k, device.info.max_work_group_size, device.info), args)
    return from_node(lazy.LazyNode("buffer", None, (), weight.dtype, (n * dim,), device, out), shape)


def _gather_rows_kernel(n: int, vocab: int, dim: int, idx_dt: Any, dt: Any):
    """``out[i, j] = table[ids[i], j]``: the row index is a gathered (bounds-checked) value."""
    from zyx.ir import ops
    from zyx.ir import symbolic as sym
    from zyx.ir.kernel import Kernel, out_var

    i, j = out_var(0, n), out_var(1, dim)
    row = sym.var("zyx_row", 0, vocab - 1)
    ids = ops.Load(1, idx_dt, i)
    body = ops.Load(2, dt, sym.add(sym.mul(row, dim), j), gather=(("zyx_row", ids, vocab),))
    return Kernel((n, dim), (), (dt, idx_dt, dt), body)


def scaled_dot_product_attention(q: Any, k: Any, v: Any, attn_mask: Any = None, is_causal: bool = False,
                                 scale: float | None = None):
    """``softmax(q k^T * scale + mask) v``; a bool mask keeps True positions."""
    d = q.shape[-1]
    scale = 1.0 / math.sqrt(d) if scale is None else scale
    scores = R.matmul(q, k.transpose(-1, -2)) * scale
    L, S = scores.shape[-2], scores.shape[-1]
    if is_causal:
        from zyx.frontend.creation import arange, pinned_as

        rows, cols = (pinned_as(arange(n, device=q.device), q) for n in (L, S))
        keep = binary("ge", rows.unsqueeze(1), cols.unsqueeze(0))
        scores = where(keep, scores, float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype.is_bool:
            scores = where(attn_mask, scores, float("-inf"))
        else:
            scores = scores + attn_mask
    return R.matmul(softmax(scores, -1), v)


def dropout(x: Any, p: float = 0.5, training: bool = True):
    """Zero each element with probability ``p`` and scale the rest by ``1/(1-p)``."""
    if not 0.0 <= p <= 1.0:
        raise ShapeError(f"dropout: p must be in [0, 1], got {p}")
    if not training or p == 0.0:
        return x
    if p == 1.0:
        return x * 0
    from zyx.frontend.creation import pinned_as, rand

    keep = binary("ge", pinned_as(rand(*x.shape, device=x.device), x), p)
    return where(keep, x * (1.0 / (1.0 - p)), 0.0).cast(x.dtype) if x.dtype.is_float else where(keep, x, 0)


def cross_entropy(logits: Any, target: Any, reduction: str = "mean"):
    """Cross entropy of (N, C) logits with int class targets (N,) or probability targets (N, C)."""
    logp = log_softmax(logits, -1)
    if target.dtype.is_int:
        from zyx.frontend.creation import arange, pinned_as

        onehot = binary("eq", target.unsqueeze(-1), pinned_as(arange(logits.shape[-1], device=logits.device), logits))
        loss = -R.reduce(where(onehot, logp, 0.0), "sum", -1)
    else:
        loss = -R.reduce(logp * target, "sum", -1)
    if reduction == "none":
        return loss
    if reduction == "sum":
        return R.reduce(loss, "sum", None)
    if reduction == "mean":
        return R.mean(loss)
    raise ShapeError(f"cross_entropy: reduction must be 'none', 'mean' or 'sum', got {reduction!r}")


def relu(x: Any):
    return unary("relu", x)


def gelu(x: Any, approximate: str = "none"):
    from zyx.frontend.elementwise import gelu as _g

    return _g(x, approximate)


def silu(x: Any):
    return unary("silu", x)


def sigmoid(x: Any):
    return unary("sigmoid", x)
