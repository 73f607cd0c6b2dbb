"""Transformer ONNX operators: Attention (opset 23+: masks, causal and sliding windows, KV caches,
grouped heads, softcap), RotaryEmbedding, SwiGLU, LinearAttention and CausalConvWithState, composed
from matmul, softmax, convolution and masks. Attention's shape-only masks (causal, window, padding)
are built on the host and added as one bias."""
from __future__ import annotations

import math

import numpy as np

import zyx.frontend.elementwise as ew
import zyx.frontend.reduce as red
from zyx import dtype as dtypes
from zyx.frontend.contract_ops import cat
from zyx.frontend.creation import full
from zyx.frontend.gather_scatter import index_select
from zyx.frontend.movement import pad
from zyx.frontend.softmax import softmax
from zyx.frontend.tensor import Tensor
from zyx.nn.functional_conv import conv1d
from zyx.onnx.registry import REQUIRED, Node, onnx_dtype, onnx_op, upload

_NEG_INF = float("-inf")


def _heads(x: Tensor, heads: int) -> Tensor:
    """(batch, seq, heads * size) -> (batch, heads, seq, size)."""
    b, s, hidden = x.shape
    return x.reshape(b, s, heads, hidden // heads).permute(0, 2, 1, 3)


def _host_bias(node: Node, q_len: int, kv_len: int, past: int, nonpad: np.ndarray | None) -> np.ndarray | None:
    """The shape-only part of the additive bias (causal, sliding window, key padding), or None."""
    i = np.arange(q_len).reshape(q_len, 1)
    j = np.arange(kv_len).reshape(1, kv_len)
    offset = (nonpad.reshape(-1, 1, 1, 1) - q_len) if nonpad is not None and not past else past
    allowed = np.ones((1, 1, q_len, kv_len), dtype=bool)
    if node["is_causal"]:
        allowed = allowed & (j <= i + offset)
    left, right = node.attrs.get("left_window_size", -1), node.attrs.get("right_window_size", -1)
    if left >= 0:
        allowed = allowed & ((i + offset) - j <= left)
    if right >= 0:
        allowed = allowed & (j - (i + offset) <= right)
    if nonpad is not None:
        allowed = allowed & (np.arange(kv_len).reshape(1, 1, 1, kv_len) < nonpad.reshape(-1, 1, 1, 1))
    if allowed.all():
        return None
    return np.where(allowed, 0.0, _NEG_INF)


_ATTENTION_ATTRS = {"is_causal": 0, "kv_num_heads": None, "q_num_heads": None, "qk_matmul_output_mode": 0,
                    "scale": None, "softcap": 0.0, "softmax_precision": None, "left_window_size": -1,
                    "right_window_size": -1}


@onnx_op("Attention", attrs=_ATTENTION_ATTRS, choices={"qk_matmul_output_mode": (0, 1, 2, 3)})
def _attention(node: Node, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None,
               past_key: Tensor | None = None, past_value: Tensor | None = None,
               nonpad_kv_seqlen: Tensor | None = None) -> tuple[Tensor, ...]:
    three_d = q.ndim == 3
    if three_d:
        q, k, v = _heads(q, node["q_num_heads"]), _heads(k, node["kv_num_heads"]), _heads(v, node["kv_num_heads"])
    scale = node["scale"] if node["scale"] is not None else 1 / math.sqrt(q.shape[3])
    root = full((), math.sqrt(scale), dtype=q.dtype)  # the reference rounds sqrt(scale) to the input type
    if past_key is not None:
        k, v = cat([past_key, k], 2), cat([past_value, v], 2)
    present_key, present_value = k, v
    q_len, kv_len = q.shape[2], k.shape[2]
    bias = None
    if mask is not None:
        if mask.shape[-1] < kv_len:
            fill = False if mask.dtype == dtypes.bool_ else _NEG_INF
            mask = pad(mask, [0, kv_len - mask.shape[-1]], value=fill)
        bias = ew.where(mask, full((), 0.0, dtype=q.dtype), full((), _NEG_INF, dtype=q.dtype)) \
            if mask.dtype == dtypes.bool_ else mask
    nonpad = None if nonpad_kv_seqlen is None else np.asarray(node.host(6, nonpad_kv_seqlen)).reshape(-1)
    shape_bias = _host_bias(node, q_len, kv_len, 0 if past_key is None else past_key.shape[2], nonpad)
    if shape_bias is not None:
        host = upload(shape_bias.astype(q.dtype.numpy))
        bias = host if bias is None else bias + host
    heads = q.shape[1]
    if heads != k.shape[1]:  # grouped-query attention: each KV head serves consecutive query heads
        k, v = k.repeat_interleave(heads // k.shape[1], 1), v.repeat_interleave(heads // v.shape[1], 1)
    qk = red.matmul(q * root, (k * root).transpose(-1, -2))
    if node["softcap"] > 0:
        qk = (qk / node["softcap"]).tanh() * node["softcap"]
    scores = qk if bias is None else qk + bias
    exposed = scores if node["qk_matmul_output_mode"] == 2 else qk
    work = scores if node["softmax_precision"] is None else scores.cast(onnx_dtype(node, node["softmax_precision"]))
    probs = softmax(work, -1)
    if bias is not None:  # a row with every key masked attends nothing: zeros, not NaN
        masked = red.max(bias.cast(work.dtype), -1, True) == _NEG_INF
        probs = ew.where(masked, full((), 0.0, dtype=probs.dtype), probs)
    if node["qk_matmul_output_mode"] == 3:
        exposed = probs
    y = red.matmul(probs.cast(q.dtype), v)
    if three_d:
        b, h, s, d = y.shape
        y = y.permute(0, 2, 1, 3).reshape(b, s, h * d)
    return y, present_key, present_value, exposed.cast(q.dtype)


@onnx_op("RotaryEmbedding", attrs={"interleaved": 0, "num_heads": 0, "rotary_embedding_dim": 0})
def _rotary_embedding(node: Node, x: Tensor, cos: Tensor, sin: Tensor, position_ids: Tensor | None = None
                      ) -> Tensor:
    shape = x.shape
    work = x.permute(0, 2, 1, 3) if x.ndim == 4 else x.reshape(shape[0], shape[1], node["num_heads"], -1)
    size = work.shape[3]
    dim = node["rotary_embedding_dim"] or size
    if position_ids is not None:
        ids = position_ids.cast(dtypes.int64).reshape(-1)
        cos = index_select(cos, 0, ids).reshape(*position_ids.shape, -1)
        sin = index_select(sin, 0, ids).reshape(*position_ids.shape, -1)
    cos, sin = cos.unsqueeze(2), sin.unsqueeze(2)
    rotate, keep = work[..., :dim], work[..., dim:]
    if node["interleaved"]:
        x1, x2 = rotate[..., 0::2], rotate[..., 1::2]
    else:
        x1, x2 = rotate[..., :dim // 2], rotate[..., dim // 2:]
    real, imag = cos * x1 - sin * x2, sin * x1 + cos * x2
    if node["interleaved"]:
        rotated = cat([real.unsqueeze(-1), imag.unsqueeze(-1)], -1).reshape(*rotate.shape)
    else:
        rotated = cat([real, imag], -1)
    out = cat([rotated, keep], -1) if dim < size else rotated
    return out.reshape(*shape) if x.ndim == 3 else out.permute(0, 2, 1, 3)


@onnx_op("SwiGLU", attrs={"alpha": 1.0})
def _swiglu(node: Node, a: Tensor, b: Tensor) -> Tensor:
    return a * (a * node["alpha"]).sigmoid() * b


@onnx_op("CausalConvWithState", attrs={"activation": "none"}, choices={"activation": ("none", "silu", "swish")})
def _causal_conv_with_state(node: Node, x: Tensor, w: Tensor, bias: Tensor | None = None,
                            past_state: Tensor | None = None) -> tuple[Tensor, Tensor]:
    batch, channels, _ = x.shape
    k = w.shape[2]
    state = past_state if past_state is not None else full((batch, channels, k - 1), 0.0, dtype=x.dtype)
    padded = cat([state, x], 2) if k > 1 else x
    y = conv1d(padded, w, bias, 1, 0, 1, channels)
    if node["activation"] != "none":
        work = y.cast(dtypes.float32)
        y = (work * work.sigmoid()).cast(x.dtype)
    return y, padded.narrow(2, padded.shape[2] - (k - 1), k - 1)


@onnx_op("LinearAttention", attrs={"chunk_size": None, "kv_num_heads": REQUIRED, "q_num_heads": REQUIRED,
                                   "scale": None, "update_rule": "gated_delta"},
         choices={"update_rule": ("linear", "gated", "delta", "gated_delta")})
def _linear_attention(node: Node, q: Tensor, k: Tensor, v: Tensor, past_state: Tensor | None = None,
                      decay: Tensor | None = None, beta: Tensor | None = None) -> tuple[Tensor, Tensor]:
    # The recurrent form, one step per position, in float32: state <- state * exp(decay); with the
    # delta rule v <- beta * (v - state^T k); state <- state + k v^T; output = scale * q^T state.
    heads, kv_heads = node["q_num_heads"], node["kv_num_heads"]
    f32 = dtypes.float32
    q4, k4, v4 = (_heads(t, h).cast(f32) for t, h in ((q, heads), (k, kv_heads), (v, kv_heads)))
    b, _, steps, d_k = k4.shape
    d_v = v4.shape[3]
    gating, delta = node["update_rule"] in ("gated", "gated_delta"), node["update_rule"] in ("delta", "gated_delta")
    if gating:
        decay4 = decay.reshape(b, steps, kv_heads, 1).permute(0, 2, 1, 3) if decay.shape[-1] == kv_heads \
            else _heads(decay, kv_heads)
        decay4 = decay4.cast(f32)
    if delta:
        beta4 = beta.reshape(b, steps, beta.shape[-1], 1).permute(0, 2, 1, 3).cast(f32)
    state = past_state.cast(f32) if past_state is not None else full((b, kv_heads, d_k, d_v), 0.0, dtype=f32)
    scale = node["scale"] or 1 / math.sqrt(d_k)
    outputs = []
    for i in range(steps):
        k_t, v_t = k4[:, :, i, :], v4[:, :, i, :]
        if gating:
            state = state * decay4[:, :, i, :].exp().unsqueeze(-1)
        if delta:
            retrieved = red.sum(state * k_t.unsqueeze(-1), 2)
            v_t = beta4[:, :, i, :] * (v_t - retrieved)
        state = state + k_t.unsqueeze(-1) * v_t.unsqueeze(-2)
        read = state if heads == kv_heads else state.repeat_interleave(heads // kv_heads, 1)
        outputs.append(red.sum(q4[:, :, i, :].unsqueeze(-1) * read, 2) * scale)
    y = stack_steps(outputs).permute(0, 2, 1, 3).reshape(b, steps, heads * d_v)
    return y.cast(q.dtype), state.cast(past_state.dtype if past_state is not None else q.dtype)


def stack_steps(values: list[Tensor]) -> Tensor:
    """Per-step (batch, heads, size) results as (batch, heads, steps, size)."""
    return cat([v.unsqueeze(2) for v in values], 2)
