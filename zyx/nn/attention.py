"""``MultiheadAttention``, ``TransformerEncoderLayer`` and ``TransformerEncoder`` with PyTorch's parameter names
(``in_proj_weight``, ``in_proj_bias``, ``out_proj.*``, ``linear1``, ``norm1``, ...), so a PyTorch
``state_dict`` loads as is. Inputs are (L, N, E) by default, (N, L, E) with ``batch_first=True``,
or unbatched (L, E).

Attention runs in (N, H, L, head_dim) layout: the projections are matmuls and the masks are one
additive (N or 1, H or 1, L, S) term. Without weights to return (``need_weights=False``, as the encoder
layer asks) and without dropout it is ``F.scaled_dot_product_attention`` (the tiled kernels where they
pay); otherwise scores, softmax (one row kernel) and the weighted sum, the weights kept.
"""
from __future__ import annotations

import copy
import math
from collections.abc import Callable
from typing import Any

from zyx.errors import ShapeError
from zyx.frontend.creation import zeros
from zyx.frontend.elementwise import where
from zyx.frontend.reduce import matmul
from zyx.nn import functional as F
from zyx.nn import init
from zyx.nn.activation import Dropout
from zyx.nn.containers import ModuleList
from zyx.nn.linear import Linear
from zyx.nn.module import Module, Parameter
from zyx.nn.normalization import LayerNorm


def _additive(mask: Any, like: Any) -> Any:
    """A bool mask (True = not allowed) as 0 / -inf in ``like``'s dtype; a float mask as is."""
    if mask.dtype.is_bool:
        return where(mask, float("-inf"), 0.0).cast(like.dtype)
    return mask.cast(like.dtype)


class MultiheadAttention(Module):
    """PyTorch's ``nn.MultiheadAttention``: ``forward(query, key, value, key_padding_mask=None,
    need_weights=True, attn_mask=None, average_attn_weights=True, is_causal=False)`` returns
    ``(output, weights or None)``. Bool masks are True where attention is *not* allowed."""

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim: int | None = None,
                 vdim: int | None = None, batch_first: bool = False, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} and "
                             f"num_heads={num_heads} instead")
        if embed_dim % num_heads:
            raise ValueError(f"embed_dim {embed_dim} must be divisible by num_heads {num_heads}")
        if add_bias_kv or add_zero_attn:
            raise NotImplementedError("MultiheadAttention: add_bias_kv and add_zero_attn are not supported")
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        kw = {"dtype": dtype, "device": device}
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(zeros(3 * embed_dim, embed_dim, **kw))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        else:
            self.q_proj_weight = Parameter(zeros(embed_dim, embed_dim, **kw))
            self.k_proj_weight = Parameter(zeros(embed_dim, self.kdim, **kw))
            self.v_proj_weight = Parameter(zeros(embed_dim, self.vdim, **kw))
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(zeros(3 * embed_dim, **kw))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = Linear(embed_dim, embed_dim, bias=bias, **kw)
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.zeros_(self.in_proj_bias)
            init.zeros_(self.out_proj.bias)

    def _project(self, query: Any, key: Any, value: Any) -> tuple[Any, Any, Any]:
        E = self.embed_dim
        b = self.in_proj_bias
        bq, bk, bv = (None, None, None) if b is None else (b[:E], b[E:2 * E], b[2 * E:])
        if self._qkv_same_embed_dim:
            w = self.in_proj_weight
            if query is key and key is value:  # self-attention: one (.., E) x (E, 3E) matmul
                qkv = F.linear(query, w, b)
                return qkv[..., :E], qkv[..., E:2 * E], qkv[..., 2 * E:]
            wq, wk, wv = w[:E], w[E:2 * E], w[2 * E:]
        else:
            wq, wk, wv = self.q_proj_weight, self.k_proj_weight, self.v_proj_weight
        return F.linear(query, wq, bq), F.linear(key, wk, bk), F.linear(value, wv, bv)

    def forward(self, query: Any, key: Any, value: Any, key_padding_mask: Any = None, need_weights: bool = True,
                attn_mask: Any = None, average_attn_weights: bool = True, is_causal: bool = False) -> tuple[Any, Any]:
        if is_causal and attn_mask is None:
            raise ValueError("MultiheadAttention: is_causal is a hint that attn_mask is the causal mask; "
                             "pass attn_mask too")
        batched = query.ndim == 3
        if not batched:
            if query.ndim != 2:
                raise ShapeError(f"MultiheadAttention: query should be unbatched 2-D or batched 3-D, got shape "
                                 f"{tuple(query.shape)}")
            same_kv = key is value
            same = query is key and same_kv
            query = query.unsqueeze(0)
            key = query if same else key.unsqueeze(0)
            value = key if same_kv else value.unsqueeze(0)
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        elif not self.batch_first:  # (L, N, E) -> (N, L, E)
            same_kv = key is value
            same = query is key and same_kv
            query = query.transpose(0, 1)
            key = query if same else key.transpose(0, 1)
            value = key if same_kv else value.transpose(0, 1)
        N, L, E = query.shape
        S = key.shape[1]
        H, hd = self.num_heads, self.head_dim
        if E != self.embed_dim:
            raise ShapeError(f"MultiheadAttention: was expecting embedding dimension of {self.embed_dim}, but got {E}")
        q, k, v = self._project(query, key, value)
        q = q.reshape(N, L, H, hd).permute(0, 2, 1, 3)
        k = k.reshape(N, S, H, hd).permute(0, 2, 1, 3)
        v = v.reshape(N, S, H, hd).permute(0, 2, 1, 3)
        mask = self._mask(attn_mask, key_padding_mask, q, N, H, L, S)
        if not need_weights and not (self.dropout > 0.0 and self.training):
            # no weights to return: the attention kernels (zyx.nn.functional_attention) where they pay
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
            return self._output(out, N, L, E, batched), None
        scores = matmul(q * (1.0 / math.sqrt(hd)), k.transpose(-1, -2))  # (N, H, L, S)
        if mask is not None:
            scores = scores + mask
        weights = scores.softmax(-1)
        attn = F.dropout(weights, self.dropout, self.training) if self.dropout > 0.0 else weights
        out = self._output(matmul(attn, v), N, L, E, batched)
        weights = attn  # after dropout, as PyTorch returns them
        if average_attn_weights:
            weights = weights.mean(1)
        if not batched:
            weights = weights.squeeze(0)
        return out, weights

    def _output(self, out: Any, N: int, L: int, E: int, batched: bool) -> Any:
        """The heads' outputs (N, H, L, head_dim) projected, in the input's layout."""
        out = self.out_proj(out.permute(0, 2, 1, 3).reshape(N, L, E))
        if not batched:
            return out.squeeze(0)
        return out if self.batch_first else out.transpose(0, 1)

    @staticmethod
    def _mask(attn_mask: Any, key_padding_mask: Any, like: Any, N: int, H: int, L: int, S: int) -> Any:
        """``attn_mask`` and ``key_padding_mask`` as one additive mask broadcasting to (N, H, L, S), or None."""
        mask = None
        if attn_mask is not None:
            m = _additive(attn_mask, like)
            if m.ndim == 2:
                if tuple(m.shape) != (L, S):
                    raise ShapeError(f"MultiheadAttention: the shape of the 2D attn_mask is {tuple(m.shape)}, but "
                                     f"should be {(L, S)}")
            elif m.ndim == 3:
                if tuple(m.shape) != (N * H, L, S):
                    raise ShapeError(f"MultiheadAttention: the shape of the 3D attn_mask is {tuple(m.shape)}, but "
                                     f"should be {(N * H, L, S)}")
                m = m.reshape(N, H, L, S)
            else:
                raise ShapeError(f"MultiheadAttention: attn_mask's dimension {m.ndim} is not supported (2 or 3)")
            mask = m
        if key_padding_mask is not None:
            if tuple(key_padding_mask.shape) != (N, S):
                raise ShapeError(f"MultiheadAttention: expected key_padding_mask of shape {(N, S)}, got "
                                 f"{tuple(key_padding_mask.shape)}")
            kp = _additive(key_padding_mask, like).reshape(N, 1, 1, S)
            mask = kp if mask is None else mask + kp
        return mask


_ACTIVATIONS: dict[str, Callable[[Any], Any]] = {"relu": F.relu, "gelu": F.gelu}


class TransformerEncoderLayer(Module):
    """Self-attention then a feed-forward block, each with dropout and a residual; LayerNorm after
    each (``norm_first=False``, the default) or before it. ``activation``: "relu", "gelu" or a callable."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: str | Callable[[Any], Any] = "relu", layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        kw = {"dtype": dtype, "device": device}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first, **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        if isinstance(activation, str):
            if activation not in _ACTIVATIONS:
                raise ValueError(f"activation should be relu/gelu, not {activation}")
            activation = _ACTIVATIONS[activation]
        self.activation = activation

    def _sa_block(self, x: Any, attn_mask: Any, key_padding_mask: Any, is_causal: bool) -> Any:
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, need_weights=False,
                           is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x: Any) -> Any:
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))

    def forward(self, src: Any, src_mask: Any = None, src_key_padding_mask: Any = None,
                is_causal: bool = False) -> Any:
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            return x + self._ff_block(self.norm2(x))
        x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
        return self.norm2(x + self._ff_block(x))


class TransformerEncoder(Module):
    """``num_layers`` copies of ``encoder_layer`` (``layers.0``, ``layers.1``, ...) applied in turn,
    then ``norm`` when given. ``enable_nested_tensor`` and ``mask_check`` are accepted and ignored
    (they choose PyTorch's fast paths, which give the same values)."""

    def __init__(self, encoder_layer: TransformerEncoderLayer, num_layers: int, norm: Module | None = None,
                 enable_nested_tensor: bool = True, mask_check: bool = True) -> None:
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(encoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, src: Any, mask: Any = None, src_key_padding_mask: Any = None,
                is_causal: bool | None = None) -> Any:
        x = src
        for layer in self.layers:
            x = layer(x, src_mask=mask, src_key_padding_mask=src_key_padding_mask, is_causal=bool(is_causal))
        return x if self.norm is None else self.norm(x)
