"""``scaled_dot_product_attention`` by the tiled kernels of ``zyx.kernels.attention`` (no T x T matrix).

The forward is one ``EXTERN`` node writing the output and the per-row log-sum-exp into one buffer (two
views of it); its gradient is recorded as one op whose backward is two more nodes, the query gradient
and the key/value gradient, each recomputing the probabilities from q, k and the saved log-sum-exp
(``delta``, the row sums of the output gradient times the output, is one small reduce). The kernels
read q, k, v, the output gradient and the mask in place through their strides (a transpose of a
projection costs no copy); they also read blocked copies of k (and for the backward of v, q and the
output gradient): padded to whole score vectors, each block transposed; one copy kernel each.

``use_kernels`` says when ``zyx.nn.functional.scaled_dot_product_attention`` takes this path; otherwise
it composes matmul, softmax and matmul (dropout, a mask that needs a gradient, variable sizes, empty
tensors, a GPU, and the sizes where the composed form measured faster: ``SMALL``, ``LONG``).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from zyx import dtype as dtypes
from zyx.backend.pool import Buffer
from zyx.errors import ShapeError
from zyx.frontend.autograd.engine import needs_grad, no_grad, record
from zyx.frontend.base import extern_tensor, from_storage_start
from zyx.frontend.creation import arange, pinned_as
from zyx.frontend.elementwise import binary, broadcast_shapes, unary, where
from zyx.frontend.reduce import matmul
from zyx.ir.variable import BOUND
from zyx.kernels import attention as kernels
from zyx.kernels import decode_attention as decode_kernel
from zyx.op import Op

#: float dtypes the kernels take (16-bit ones are computed in float32: the inputs cast up, the output down)
DTYPES = (dtypes.float32, dtypes.float16, dtypes.bfloat16)
#: without a causal mask the composed attention (two register-tiled matmuls around a row softmax) measured
#: faster on PoCL once a problem is large, unless its score matrices are long (bench/RESULTS.md, "attention"):
#: the kernels run when b * Tq * Tk * (dk + dv) is at most SMALL or Tq * Tk at least LONG
SMALL = 1 << 23
LONG = 1 << 17


def use_kernels(q: Any, k: Any, v: Any, attn_mask: Any, dropout_p: float, is_causal: bool) -> bool:
    """Whether ``scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)`` runs the tiled kernels."""
    ts = (q, k, v) if attn_mask is None else (q, k, v, attn_mask)
    if dropout_p > 0.0 or any(t.ndim < 2 for t in ts) or attn_mask is not None and needs_grad(attn_mask):
        return False
    if any(not all(type(s) is int and s > 0 for s in t.shape) for t in ts):  # variable sizes; empty tensors
        return False
    if q.dtype not in DTYPES or k.dtype != q.dtype or v.dtype != q.dtype:
        return False
    if attn_mask is not None and not (attn_mask.dtype.is_bool or attn_mask.dtype.is_float):
        return False
    if not kernels.eligible(q.device, q.shape[-1], v.shape[-1]):
        return False
    if is_causal:
        return True
    tq, tk = q.shape[-2], k.shape[-2]
    b = math.prod(broadcast_shapes(*(t.shape[:-2] for t in ts)))
    return b * tq * tk * (q.shape[-1] + v.shape[-1]) <= SMALL or tq * tk >= LONG


def _operand(t: Any, unit_col: bool) -> tuple[Any, kernels.Operand]:
    """``t`` as the kernels read it (a dense copy when its view has a negative stride, or a column stride
    other than 1 where ``unit_col`` asks for vector loads along the last dim) and its ``Operand``."""
    st = t._view.strides
    if any(s < 0 for s in st) or (unit_col and t.shape[-1] > 1 and st[-1] != 1):
        t = t.contiguous()
        st = t._view.strides
    return t, (t._view.offset, tuple(st[:-2]), st[-2], st[-1])


def _blocked(t: Any) -> tuple[Any, kernels.Operand]:
    """``t`` (..., T, D) zero padded along T to whole blocks of ``kernels.KB`` rows, each block transposed
    (..., T / KB, D, KB) in a dense copy, and its ``Operand`` (offset, batch strides, d stride, block stride):
    a block's scores read one contiguous stream."""
    n, d = t.shape[-2], t.shape[-1]
    length = kernels.padded(n)
    b = t.pad([0, 0, 0, length - n]) if length > n else t
    # clone: the padding and the block transpose in one copy kernel (contiguous() would store the pad first)
    b = b.reshape(*t.shape[:-2], length // kernels.KB, kernels.KB, d).transpose(-1, -2).clone()
    st = b._view.strides
    return b, (b._view.offset, tuple(st[:-3]), st[-2], st[-3])


def attention(q: Any, k: Any, v: Any, attn_mask: Any, is_causal: bool, scale: float) -> Any:
    """``softmax(q k^T * scale + mask) v`` by the tiled kernels (``use_kernels`` holds)."""
    out_dt = q.dtype
    if out_dt != dtypes.float32:
        q, k, v = (t.cast(dtypes.float32) for t in (q, k, v))
    tq, tk, dk, dv = q.shape[-2], k.shape[-2], q.shape[-1], v.shape[-1]
    shapes = [q.shape[:-2], k.shape[:-2], v.shape[:-2]]
    if attn_mask is not None:
        shapes.append(attn_mask.shape[:-2])
    bshape = tuple(broadcast_shapes(*shapes))
    qe, ke, ve = q.expand(*bshape, tq, dk), k.expand(*bshape, tk, dk), v.expand(*bshape, tk, dv)
    device = q.device
    with no_grad():  # the kernels' operands; the gradient is recorded on the output below
        m = None
        if attn_mask is not None:
            m = where(attn_mask, 0.0, float("-inf")) if attn_mask.dtype.is_bool else attn_mask
            m = m.cast(dtypes.float32).expand(*bshape, tq, tk)
        kt = _blocked(ke)
        operands = [("q", qe, False), ("kt", kt), ("v", ve, True)] + ([("m", m, False)] if m is not None else [])
        inputs, ops = _inputs(operands)
    n = math.prod(bshape) * tq * dv

    def run(bufs: list[Buffer]) -> Buffer:
        return kernels.forward(device, bshape, tq, tk, dk, dv, scale, is_causal, ops, bufs)

    y = extern_tensor("attention", run, inputs, dtypes.float32, (n + math.prod(bshape) * kernels.padded(tq),), device)
    out = y[:n].reshape(*bshape, tq, dv)
    if needs_grad(qe, ke, ve):
        saved, lse = y[:n].reshape(*bshape, tq, dv), y[n:].reshape(*bshape, 1, kernels.padded(tq))
        out = record("scaled_dot_product_attention", out, [qe, ke, ve],
                     lambda g: _backward(g, saved, lse, qe, ke, ve, kt, m, is_causal, scale))
    return out if out_dt == dtypes.float32 else out.cast(out_dt)


def _inputs(operands: list[tuple[Any, ...]]) -> tuple[list[Any], dict[str, kernels.Operand]]:
    """The kernel's inputs and their ``Operand``\\ s from ``(name, tensor, unit_col)`` (``_operand``) or
    ``(name, (blocked copy, its operand))`` entries."""
    inputs, ops = [], {}
    for name, t, *unit in operands:
        t, ops[name] = _operand(t, unit[0]) if unit else t
        inputs.append(t)
    return inputs, ops


def _backward(g: Any, out: Any, lse: Any, q: Any, k: Any, v: Any, kt: Any, m: Any, causal: bool,
              scale: float) -> tuple[Any, Any, Any]:
    """The gradients of q, k and v (their expanded shapes) from the output gradient ``g``."""
    if needs_grad(g, q, k, v):  # create_graph: gradients that are differentiable again, composed
        return _composed_backward(g, q, k, v, m, causal, scale)
    bshape, tq, tk, dk, dv = tuple(q.shape[:-2]), q.shape[-2], k.shape[-2], q.shape[-1], v.shape[-1]
    device = q.device
    with no_grad():
        g = g.cast(dtypes.float32)
        tqp = kernels.padded(tq)
        delta = (g * out).sum(-1).pad([0, tqp - tq]).reshape(*bshape, 1, tqp)
        vt, qt, gt = _blocked(v), _blocked(q), _blocked(g)
        mask = [("m", m, False)] if m is not None else []
        dq_in, dq_ops = _inputs([("q", q, False), ("kt", kt), ("k", k, True), ("vt", vt),
                                 ("g", g, False), ("lse", lse, False), ("dl", delta, False)] + mask)
        kv_in, kv_ops = _inputs([("qt", qt), ("q", q, True), ("k", k, False), ("v", v, False),
                                 ("gt", gt), ("g", g, True), ("lse", lse, True), ("dl", delta, True)] + mask)
    b = math.prod(bshape)

    def run_q(bufs: list[Buffer]) -> Buffer:
        return kernels.grad_q(device, bshape, tq, tk, dk, dv, scale, causal, dq_ops, bufs)

    def run_kv(bufs: list[Buffer]) -> Buffer:
        return kernels.grad_kv(device, bshape, tq, tk, dk, dv, scale, causal, kv_ops, bufs)

    dq = extern_tensor("attention dq", run_q, dq_in, dtypes.float32, (*bshape, tq, dk), device)
    dkv = extern_tensor("attention dk dv", run_kv, kv_in, dtypes.float32, (b * tk * (dk + dv),), device)
    return dq, dkv[:b * tk * dk].reshape(*bshape, tk, dk), dkv[b * tk * dk:].reshape(*bshape, tk, dv)


def _composed_backward(g: Any, q: Any, k: Any, v: Any, m: Any, causal: bool, scale: float) -> tuple[Any, Any, Any]:
    """The same gradients from matmuls and elementwise ops (each with its own gradient rule): the
    probabilities recomputed (a row with no live key all zeros), then dv = p^T g, ds = p * (dp - rowsum(dp * p))
    with dp = g v^T, dq = ds k * scale, dk = ds^T q * scale."""
    g = g.cast(dtypes.float32)
    s = matmul(q, k.transpose(-1, -2)) * scale
    if m is not None:
        s = s + m
    if causal:
        tq, tk = s.shape[-2], s.shape[-1]
        rows, cols = (pinned_as(arange(n, device=q.device), q) for n in (tq, tk))
        s = where(binary(Op.GE, rows.unsqueeze(1), cols.unsqueeze(0)), s, float("-inf"))
    top = binary(Op.MAXIMUM, s.max(-1, keepdim=True).detach(), float(np.finfo(np.float32).min))
    e = unary(Op.EXP, s - top)
    p = e / binary(Op.MAXIMUM, e.sum(-1, keepdim=True), 0.5)  # a live row's sum is at least 1
    dp = matmul(g, v.transpose(-1, -2))
    ds = p * (dp - (dp * p).sum(-1, keepdim=True))
    return matmul(ds, k) * scale, matmul(ds.transpose(-1, -2), q) * scale, matmul(p.transpose(-1, -2), g)


__all__ = ["DTYPES", "LONG", "SMALL", "attention", "use_kernels"]


def decode_attention(q: Any, keys: Any, values: Any, mask: Any, n: Any, scale: float | None = None) -> Any:
    """One query position per head attending over rows ``0 .. n - 1`` of a KV-cache ring (a language model's
    decode step): ``q`` (batch, heads, head_dim); ``keys`` and ``values`` (rows, batch, kv_heads, head_dim),
    each group of ``heads / kv_heads`` query heads reading one key/value head; ``mask`` additive (rows,
    batch); ``n`` an int or a bound ``zyx.Variable`` (a replayed plan takes each step's value). Returns
    (batch, heads, head_dim). Float32 without gradients: one kernel (``zyx.kernels.decode_attention``);
    otherwise composed from tensor ops over ``keys[:n]``."""
    b, h, d = q.shape
    rows, kvh = keys.shape[0], keys.shape[2]
    if tuple(keys.shape) != (rows, b, kvh, d) or tuple(values.shape) != (rows, b, kvh, d) or not kvh or h % kvh:
        raise ShapeError(f"decode_attention: q {tuple(q.shape)} needs keys and values (rows, {b}, kv_heads, {d}) "
                         f"with kv_heads dividing {h}; got {tuple(keys.shape)} and {tuple(values.shape)}")
    if tuple(mask.shape) != (rows, b):
        raise ShapeError(f"decode_attention: the mask must be (rows, batch) = ({rows}, {b}), got {tuple(mask.shape)}")
    scale = 1.0 / math.sqrt(d) if scale is None else scale
    operands = (q, keys, values, mask)
    if any(t.dtype != dtypes.float32 or needs_grad(t) for t in operands) or len({t.device for t in operands}) > 1:
        group = q.reshape(b, kvh, h // kvh, d) * scale
        weights = ((keys[:n].unsqueeze(3) * group).sum(-1) + mask[:n].reshape(-1, b, 1, 1)).softmax(0)
        return (weights.unsqueeze(-1) * values[:n].unsqueeze(3)).sum(0).reshape(b, h, d)
    n_arg = n.arg() if type(n) in BOUND else int(n)
    if not 1 <= int(n_arg) <= rows:
        raise ShapeError(f"decode_attention: n = {int(n_arg)} rows of a ring of {rows}")
    q = from_storage_start(q)
    (keys, ks), (values, vs), (mask, ms) = (_ring(t) for t in (keys, values, mask))
    device = q.device

    def run(bufs: list[Buffer]) -> Buffer:
        return decode_kernel.decode_attention(device, *bufs, n_arg, rows, b, h, kvh, d, scale, ks, vs, ms)

    return extern_tensor("decode attention", run, [q, keys, values, mask], dtypes.float32, (b, h, d), device)


def _ring(t: Any) -> tuple[Any, tuple[int, tuple[int, ...]]]:
    """A KV ring (rows, batch, heads, d) or its mask (rows, batch) as the decode kernel reads it in place:
    ``_operand``'s tensor and (offset, every stride but the ring's unit one along d)."""
    ring = t.ndim > 2
    t, (offset, outer, row, col) = _operand(t, unit_col=ring)
    return t, (offset, (*outer, row) if ring else (*outer, row, col))
