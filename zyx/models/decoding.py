"""Autoregressive generation for ``zyx.models.llama``: a prefill of the whole prompt, then one decode step per
token that is a single replayed ``zyx.jit`` plan.

Each layer keeps its rotated keys and values in one ring of ``R`` rows (batch, 2 x kv_heads, head_dim: the keys'
heads, then the values', so a step writes both with one launch) (``R`` = the prompt plus the new tokens,
rounded up to a power of two so later calls of similar length reuse the plan; a sliding-window layer's ring is
its window, so the ring itself forgets what the window drops). The step writes the new token's row with
``write_slice_rotating`` at the position ``p`` (a bound ``zyx.Variable``) and attends over the first ``n``
slots (another Variable), so one compile serves every step. A ring of additive masks beside the keys says which
slots hold left padding (``-inf``); decode rows are always real (0), and a wrapped ring overwrites padding rows.

Sampling happens on the host from the step's logits with NumPy's seeded generator (``seed``), so a seed gives
the same tokens on any device; greedy decoding (``temperature=0``) reads back only the argmax.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from zyx.errors import ShapeError
from zyx.frontend.autograd.engine import no_grad
from zyx.frontend.contract_ops import cat, write_slice_rotating
from zyx.frontend.creation import tensor, zeros
from zyx.frontend.tape import jit
from zyx.frontend.tensor import Tensor
from zyx.ir.variable import Variable
from zyx.models.positions import as_ids, as_mask, position_ids, rotary

NEG_INF = float("-inf")


def ring_rows(total: int, window: int | None) -> int:
    """Rows of a layer's ring for ``total`` positions: a power of two at least ``total`` (at least 16), or the
    window when that is smaller."""
    rows = max(16, 1 << (max(total, 1) - 1).bit_length())
    return rows if window is None else min(rows, window)


class Decoder:
    """The KV rings of one generation; the variables and the jitted step are the model's (``model._decoder``),
    so a later generation with rings of the same shapes replays the same plan on its own rings."""

    def __init__(self, model: Any, batch: int, total: int) -> None:
        c = model.config
        self.model = model
        dev = model.inv_freq.device
        self.rows = [ring_rows(total, w) for w in c.sliding_windows]
        self.kv = tuple(zeros(r, batch, 2 * c.num_key_value_heads, c.head_dim, device=dev).realize() for r in self.rows)
        self.sizes = sorted(set(self.rows))
        self.masks = tuple(zeros(r, batch, 1, 1, device=dev).realize() for r in self.sizes)  # additive: 0 or -inf
        self.real_row = zeros(1, batch, 1, 1, device=dev).realize()
        state = model._decoder
        if state is None:
            state = model._decoder = {"p": Variable("p", 0, 1 << 30), "n": {}, "step": jit(model_step(model))}
        self.p = state["p"]
        self.n = [state["n"].setdefault(r, Variable(f"n{r}", 1, r)) for r in self.sizes]
        self.step = state["step"]

    @no_grad()
    def prefill(self, ids: np.ndarray, mask: np.ndarray) -> Tensor:
        """Run the prompt, fill the rings, and return the last position's logits (batch, vocab)."""
        x, kv = self.model.hidden(ids, mask, keep_kv=True)
        length = ids.shape[1]
        dev = self.model.inv_freq.device
        pad = np.where(mask.T == 0, NEG_INF, 0.0).astype(np.float32)[:, :, None, None]  # (seq, batch, 1, 1)
        for r, ring in zip(self.sizes, self.masks):
            keep = min(r, length)  # a window shorter than the prompt keeps the prompt's last rows
            write_slice_rotating(ring, tensor(pad[length - keep:], device=dev), 0, length - keep)
        for (k, v), ring, r in zip(kv, self.kv, self.rows):
            keep = min(r, length)  # (batch, kv_heads, seq, head_dim) twice -> the ring's rows
            rows = cat([k, v], 1)[:, :, length - keep:].permute(2, 0, 1, 3).contiguous()
            write_slice_rotating(ring, rows, 0, length - keep)
        for t in (*self.kv, *self.masks):
            t.realize()  # pending writes would make the first jitted step capture twice
        return self.model.lm_head(x[:, length - 1])

    @no_grad()
    def __call__(self, tokens: Tensor, positions: Tensor, slot: int) -> tuple[Tensor, Tensor]:
        """One decode step: ``tokens`` (batch, 1) at rotary ``positions`` (batch, 1) written at absolute slot
        ``slot``; returns the logits (batch, vocab) and their argmax."""
        ns = [n.bind(min(slot + 1, r)) for n, r in zip(self.n, self.sizes)]
        return self.step(tokens, positions, self.kv, self.masks, self.real_row, self.p.bind(slot), *ns)


def model_step(model: Any) -> Any:
    """The function ``zyx.jit`` captures: rings, masks and variables are arguments, weights are read from the
    model (found again at each replay)."""
    m = model

    def step(tokens: Tensor, positions: Tensor, kvs: tuple, masks: tuple, real_row: Tensor, p: Any,
             *ns: Any) -> tuple[Tensor, Tensor]:
        batch = tokens.shape[0]
        cos, sin = rotary(positions, m.inv_freq)
        x = m.model.embed_tokens(tokens)
        attn_mask = {}
        for ring, n in zip(masks, ns):
            write_slice_rotating(ring, real_row, 0, p)
            attn_mask[ring.shape[0]] = (ring, n)
        for layer, ring in zip(m.model.layers, kvs):
            attn = layer.self_attn
            q, k, v = attn.project(layer.input_layernorm(x), cos, sin)
            # the new keys and values as one (1, batch, 2 x kv_heads, head_dim) row: padded halves added fuse
            # into one kernel (a cat would be a launch of its own), written with one launch
            row = k.pad((0, 0, 0, 0, 0, attn.kv_heads)) + v.pad((0, 0, 0, 0, attn.kv_heads, 0))
            write_slice_rotating(ring, row.permute(2, 0, 1, 3), 0, p)
            mask, n = attn_mask[ring.shape[0]]
            x = x + attn.attend_one(q, ring, mask, n)
            x = x + layer.mlp(layer.post_attention_layernorm(x))
        logits = m.lm_head(m.model.norm(x)).reshape(batch, -1)
        return logits, logits.argmax(-1)

    return step


def sample(logits: np.ndarray, temperature: float, top_k: int | None, top_p: float | None,
           rng: np.random.Generator) -> np.ndarray:
    """One token per row of ``logits`` (batch, vocab): softmax at ``temperature`` over the ``top_k`` largest
    and the smallest set whose probability reaches ``top_p`` (transformers' warpers, in that order)."""
    z = logits.astype(np.float64) / temperature
    if top_k is not None:
        kth = np.sort(z, -1)[:, -min(top_k, z.shape[-1])][:, None]
        z = np.where(z < kth, -np.inf, z)
    if top_p is not None and top_p < 1.0:
        order = np.argsort(z, -1, kind="stable")  # ascending, as transformers' TopPLogitsWarper
        zs = np.take_along_axis(z, order, -1)
        probs = np.exp(zs - zs[:, -1:])
        cum = np.cumsum(probs / probs.sum(-1, keepdims=True), -1)
        drop = cum <= 1 - top_p
        drop[:, -1] = False  # the most likely token always stays
        z = z.copy()
        np.put_along_axis(z, order, np.where(drop, -np.inf, zs), -1)
    probs = np.exp(z - z.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    return np.array([rng.choice(len(p), p=p) for p in probs], np.int64)


@no_grad()
def generate(model: Any, input_ids: Any, max_new_tokens: int, temperature: float = 1.0,
             top_k: int | None = None, top_p: float | None = None, seed: int | None = None,
             eos_token_id: Any = None, attention_mask: Any = None) -> Tensor:
    """The prompt followed by up to ``max_new_tokens`` tokens, int64 (batch, seq + new). ``temperature=0`` is
    greedy; ``eos_token_id`` (an int or a list) ends a row, which is then filled with the config's
    ``pad_token_id`` (or the eos id) until every row has ended, when generation stops. Prompts of different
    lengths come left-padded with an ``attention_mask`` (1 real, 0 padding) as in transformers."""
    ids = as_ids(input_ids)
    batch, length = ids.shape
    mask = np.ones_like(ids) if attention_mask is None else as_mask(attention_mask, ids.shape)
    if (np.diff(mask, axis=1) < 0).any() or not mask[:, -1].all():
        raise ShapeError("generate: the attention_mask must be left padding (0s, then 1s, ending with a real token)")
    if max_new_tokens < 0 or temperature < 0:
        raise ShapeError(f"generate: max_new_tokens ({max_new_tokens}) and temperature ({temperature}) must be >= 0")
    if top_k is not None and top_k < 1:
        raise ShapeError(f"generate: top_k must be at least 1, got {top_k}")
    eos = set() if eos_token_id is None else {int(e) for e in np.atleast_1d(eos_token_id)}
    pad_id = model.config.pad_token_id if model.config.pad_token_id is not None else min(eos, default=0)
    rng = np.random.default_rng(seed)
    greedy = temperature == 0
    dec = Decoder(model, batch, length + max_new_tokens)
    dev = model.inv_freq.device
    out = [ids]
    done = np.zeros(batch, bool)
    positions = position_ids(mask)[:, -1:]
    logits = dec.prefill(ids, mask)
    chosen = None
    for i in range(max_new_tokens):
        if greedy:
            nxt = chosen.numpy() if chosen is not None else logits.argmax(-1).numpy()
        else:
            nxt = sample(logits.numpy(), temperature, top_k, top_p, rng)
        nxt = np.where(done, pad_id, nxt).astype(np.int64)
        out.append(nxt[:, None])
        done |= np.isin(nxt, list(eos))
        if done.all() or i == max_new_tokens - 1:
            break
        positions = positions + 1
        logits, chosen = dec(tensor(nxt[:, None], device=dev), tensor(positions, device=dev), length + i)
    return tensor(np.concatenate(out, 1), device=dev)

