"""Train a character-level GPT from scratch on text that ships with Python (the source of the ``textwrap``
module: no download), with zyx.nn, zyx.optim.AdamW and a ``zyx.jit`` train step (forward, backward and the
optimizer update replayed as one plan after the first step).

Prints the loss curve (train loss every ``--log-every`` steps and the held-out loss at the end), a sample
from the trained model, and checks its own result: exits non-zero when the held-out loss (the last tenth of the
text, never trained on) is above ``--target`` nats per character (a uniform guess is ln(vocab), about 4.4).

    python examples/train_gpt.py [--steps 300] [--target 2.3]
"""
from __future__ import annotations

import argparse
import inspect
import math
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import numpy as np

try:
    import zyx
except ImportError:  # run from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    import zyx
from zyx import nn
from zyx.nn import functional as F


class Block(nn.Module):
    """Pre-norm transformer block: causal self-attention, then a GELU MLP."""

    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x: Any) -> Any:
        b, t, d = x.shape
        qkv = self.qkv(self.ln1(x)).reshape(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        att = F.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], is_causal=True)
        x = x + self.proj(att.permute(0, 2, 1, 3).reshape(b, t, d))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class GPT(nn.Module):
    def __init__(self, vocab: int, ctx: int, d: int, heads: int, layers: int) -> None:
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(ctx, d)
        self.blocks = nn.Sequential(*[Block(d, heads) for _ in range(layers)])
        self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, vocab)
        self.positions = zyx.arange(ctx, dtype=zyx.int64)

    def forward(self, idx: Any) -> Any:
        x = self.tok(idx) + self.pos(self.positions[:idx.shape[1]])
        return self.head(self.ln(self.blocks(x)))


def batches(data: np.ndarray, ctx: int, batch: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    starts = rng.integers(0, len(data) - ctx - 1, batch)
    x = np.stack([data[s:s + ctx] for s in starts])
    y = np.stack([data[s + 1:s + ctx + 1] for s in starts])
    return x, y


def held_out_loss(model: GPT, data: np.ndarray, ctx: int) -> float:
    """Mean cross-entropy over every full window of the held-out text (non-overlapping)."""
    n = (len(data) - 1) // ctx
    x = np.stack([data[i * ctx:(i + 1) * ctx] for i in range(n)])
    y = np.stack([data[i * ctx + 1:(i + 1) * ctx + 1] for i in range(n)])
    with zyx.no_grad():
        logits = model(zyx.tensor(x))
        return float(F.cross_entropy(logits.reshape(-1, logits.shape[-1]), zyx.tensor(y.reshape(-1))).item())


def sample(model: GPT, prompt: np.ndarray, ctx: int, n: int, rng: np.random.Generator, temperature: float) -> list:
    """``n`` characters after ``prompt``, always feeding the last ``ctx`` (a fixed shape: one set of kernels)."""
    seq = list(prompt)
    with zyx.no_grad():
        for _ in range(n):
            window = np.array([seq[-ctx:]])
            logits = model(zyx.tensor(window))[0, -1].numpy().astype(np.float64) / temperature
            p = np.exp(logits - logits.max())
            seq.append(int(rng.choice(len(p), p=p / p.sum())))
    return seq[len(prompt):]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--ctx", type=int, default=64)
    ap.add_argument("--d", type=int, default=96)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--target", type=float, default=2.3, help="held-out loss to reach (nats per character)")
    ap.add_argument("--log-every", type=int, default=25)
    ap.add_argument("--sample", type=int, default=200, help="characters to sample at the end")
    args = ap.parse_args()

    text = inspect.getsource(textwrap)
    chars = sorted(set(text))
    lookup = {c: i for i, c in enumerate(chars)}
    data = np.array([lookup[c] for c in text], np.int64)
    split = int(len(data) * 0.9)
    train, held = data[:split], data[split:]
    print(f"text: textwrap.py, {len(text)} characters, vocab {len(chars)} (uniform loss {math.log(len(chars)):.2f})")

    zyx.manual_seed(0)
    rng = np.random.default_rng(0)
    model = GPT(len(chars), args.ctx, args.d, args.heads, args.layers)
    opt = zyx.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    print(f"model: {sum(p.numel() for p in model.parameters())} parameters, {args.layers} layers, d {args.d}")

    @zyx.jit
    def step(xb: Any, yb: Any) -> Any:  # forward, backward and AdamW: one replayed plan after the first call
        logits = model(xb)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), yb.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    losses = []
    start = time.perf_counter()
    for i in range(args.steps):
        x, y = batches(train, args.ctx, args.batch, rng)
        loss = step(zyx.tensor(x), zyx.tensor(y))
        if (i + 1) % args.log_every == 0 or i == 0 or i + 1 == args.steps:
            losses.append((i + 1, float(loss.item())))
            print(f"step {i + 1:5d}  train loss {losses[-1][1]:.3f}  ({time.perf_counter() - start:.1f} s)")
    train_s = time.perf_counter() - start
    model.eval()
    final = held_out_loss(model, held, args.ctx)
    print(f"trained {args.steps} steps in {train_s:.1f} s ({args.steps * args.batch * args.ctx / train_s:.0f} "
          f"characters/s); held-out loss {final:.3f}")
    print("loss curve:", " ".join(f"{s}:{v:.2f}" for s, v in losses))
    if args.sample:
        prompt = data[split:split + args.ctx]
        out = sample(model, prompt, args.ctx, args.sample, np.random.default_rng(1), temperature=0.8)
        print("sample after", repr("".join(chars[c] for c in prompt[-20:])), ":")
        print("".join(chars[c] for c in out))
    if not final <= args.target:
        print(f"FAILED: held-out loss {final:.3f} is above the target {args.target}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
