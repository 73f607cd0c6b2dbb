"""Positions and masks for the Llama family: rotary embeddings (transformers' ``rotate_half`` layout), the
position ids ``generate`` gives left-padded rows, and causal / sliding-window / padding masks."""
from __future__ import annotations

from typing import Any

import numpy as np

from zyx.errors import ShapeError
from zyx.frontend.tensor import Tensor


def rotary(positions: Tensor, inv_freq: Tensor) -> tuple[Tensor, Tensor]:
    """cos and sin (batch, 1, seq, head_dim) of int64 ``positions`` (batch, seq): angle ``pos * inv_freq``,
    the halves repeated (transformers' ``rotate_half`` layout, not interleaved pairs)."""
    angles = (positions.float().unsqueeze(-1) * inv_freq).repeat(1, 1, 2)  # (batch, seq, head_dim)
    return angles.cos().unsqueeze(1), angles.sin().unsqueeze(1)


def apply_rotary(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """``x * cos + rotate_half(x) * sin`` on (batch, heads, seq, head_dim). ``rotate_half`` (``[-x2, x1]``) is
    two zero-padded halves added, which fuse with the rest into one kernel (a ``cat`` would be its own launch)."""
    half = x.shape[-1] // 2
    rotated = (-x[..., half:]).pad((0, half)) + x[..., :half].pad((half, 0))
    return x * cos + rotated * sin


def causal_masks(attention_mask: np.ndarray, windows: tuple) -> dict[Any, np.ndarray]:
    """Bool keep-masks (batch, 1, seq, seq) per distinct window: query i sees key j when j <= i, j is not
    padding, and i - j < window (transformers' sliding window)."""
    s = attention_mask.shape[1]
    i, j = np.arange(s)[:, None], np.arange(s)[None, :]
    out = {}
    for w in set(windows):
        keep = (j <= i) if w is None else (j <= i) & (i - j < w)
        out[w] = keep[None, None] & attention_mask[:, None, None, :].astype(bool)
    return out


def position_ids(attention_mask: np.ndarray) -> np.ndarray:
    """Positions as transformers' ``generate`` gives them with left padding: each row counts its real tokens
    from 0; padding positions get 1 (masked anyway)."""
    pos = np.cumsum(attention_mask, -1) - 1
    return np.where(attention_mask == 0, 1, pos).astype(np.int64)


def as_ids(input_ids: Any) -> np.ndarray:
    """Token ids as an int64 (batch, seq) array (from a zyx tensor, NumPy or nested lists)."""
    ids = input_ids.numpy() if isinstance(input_ids, Tensor) else np.asarray(input_ids)
    if ids.ndim == 1:
        ids = ids[None]
    if ids.ndim != 2 or ids.dtype.kind not in "iu":
        raise ShapeError(f"Llama: input_ids must be integer (batch, seq) or (seq,), got {ids.dtype} {ids.shape}")
    return ids.astype(np.int64)


def as_mask(attention_mask: Any, shape: tuple[int, ...]) -> np.ndarray:
    """A 0/1 int64 attention mask of ``shape`` (1 real token, 0 padding), as transformers takes it."""
    mask = attention_mask.numpy() if isinstance(attention_mask, Tensor) else np.asarray(attention_mask)
    if mask.ndim == 1:
        mask = mask[None]
    if mask.shape != shape:
        raise ShapeError(f"Llama: attention_mask shape {mask.shape} must equal input_ids' {shape}")
    return (mask != 0).astype(np.int64)
