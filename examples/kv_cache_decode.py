"""Greedy decoding with a ring-buffer KV cache, eager and through zyx.jit.

A small decoder-only transformer (random weights: the point is the runtime, not the text)
generates TOKENS tokens one at a time. Each step writes the new token's keys and values into
a ring of WINDOW rows per layer with ``zyx.write_slice_rotating`` at the position ``p`` (a
bound ``zyx.Variable``), and attends over ``k[:t]``, the first ``t`` ring slots (another Variable:
the slots written so far, all of them once the ring has wrapped; a variable size, so one kernel
serves every ``t``). The next token is the argmax of
the logits, on the device: nothing is read back until the end.

``zyx.jit`` captures the step once and then replays its launches with the new variable values:
the same kernels serve every position, so after the first step nothing compiles (the compile
counter is printed) and no Python graph is built. The script checks that the jitted and the
eager runs generate the same tokens and prints the time per token of each; it exits non-zero
on a mismatch or a compile after warm-up.

    python examples/kv_cache_decode.py [--tokens 256]
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

try:
    import zyx
except ImportError:  # run from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    import zyx
import zyx.nn.functional as F
from zyx.backend.program import BuildStats

VOCAB, DIM, HEADS, LAYERS, WINDOW = 96, 64, 4, 2, 128
HEAD_DIM = DIM // HEADS


class Decoder:
    """Weights of the decoder and one ring KV cache per layer."""

    def __init__(self, seed: int = 0) -> None:
        rng = np.random.default_rng(seed)

        def w(*shape: int) -> zyx.Tensor:
            return zyx.tensor((rng.standard_normal(shape) / math.sqrt(shape[0])).astype(np.float32))

        self.embed = zyx.tensor(rng.standard_normal((VOCAB, DIM)).astype(np.float32))
        self.layers = [dict(qkv=w(DIM, 3 * DIM), out=w(DIM, DIM), up=w(DIM, 2 * DIM), down=w(2 * DIM, DIM))
                       for _ in range(LAYERS)]
        self.head = w(DIM, VOCAB)
        self.reset()

    def reset(self) -> None:
        # realized now: a value still pending when a jitted step first runs makes it capture again
        self.k = [zyx.zeros(WINDOW, HEADS, HEAD_DIM).realize() for _ in range(LAYERS)]
        self.v = [zyx.zeros(WINDOW, HEADS, HEAD_DIM).realize() for _ in range(LAYERS)]

    def step(self, token: zyx.Tensor, pos: object, n: object) -> zyx.Tensor:
        """The next token after ``token`` (int64 (1,)) written at ring position ``pos``, attending
        over ring slots ``[0, n)``."""
        x = F.embedding(token, self.embed)  # (1, DIM)
        for layer, kc, vc in zip(self.layers, self.k, self.v):
            h = F.rms_norm(x, (DIM,))
            qkv = (h @ layer["qkv"]).reshape(3, HEADS, HEAD_DIM)
            q, k, v = qkv[0], qkv[1], qkv[2]
            zyx.write_slice_rotating(kc, k.reshape(1, HEADS, HEAD_DIM), 0, pos)
            zyx.write_slice_rotating(vc, v.reshape(1, HEADS, HEAD_DIM), 0, pos)
            # the first n slots: a variable size (n is a bound Variable), one kernel for every n
            scores = (kc[:n] * q).sum(-1) * (1.0 / math.sqrt(HEAD_DIM))  # (n, HEADS)
            attn = scores.softmax(0).reshape(n, HEADS, 1)
            x = x + (attn * vc[:n]).sum(0).reshape(1, DIM) @ layer["out"]
            x = x + F.gelu(F.rms_norm(x, (DIM,)) @ layer["up"]) @ layer["down"]
        return (F.rms_norm(x, (DIM,)) @ self.head).argmax(-1)


def generate(model: Decoder, tokens: int, jit: bool, first: int = 1) -> tuple[list[int], float, list[int]]:
    """Generate ``tokens`` tokens; returns them, the seconds per token after the first two steps
    (warm-up: the jitted step captures on the first), and the compile counter after each step."""
    model.reset()
    p = zyx.Variable("p", 0, 1 << 30)
    t = zyx.Variable("t", 1, WINDOW)
    step = zyx.jit(model.step) if jit else model.step
    token = zyx.tensor([first])
    out, compiles = [], []
    start = 0.0
    for i in range(tokens):
        if i == 2:
            zyx.synchronize()
            start = time.perf_counter()
        token = step(token, p.bind(i), t.bind(min(i + 1, WINDOW)))
        out.append(token)
        compiles.append(BuildStats.source_builds + BuildStats.binary_loads)
    zyx.synchronize()
    per_token = (time.perf_counter() - start) / max(tokens - 2, 1)
    return [int(v) for v in zyx.cat(out).numpy()], per_token, compiles


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, default=256)
    args = ap.parse_args()
    model = Decoder()
    generate(model, 3, jit=False)  # warm the kernel caches for the eager run
    eager, t_eager, _ = generate(model, args.tokens, jit=False)
    jitted, t_jit, compiles = generate(model, args.tokens, jit=True)
    print(f"generated {args.tokens} tokens, ring of {WINDOW} slots, {LAYERS} layers, dim {DIM}: "
          f"{jitted[:12]} ...")
    print(f"eager: {t_eager * 1e3:8.3f} ms/token")
    print(f"jit:   {t_jit * 1e3:8.3f} ms/token  ({t_eager / t_jit:.1f}x faster)")
    print(f"compiles after warm-up (step 2 on): {compiles[-1] - compiles[1]}")
    if eager != jitted:
        first_bad = next(i for i, (a, b) in enumerate(zip(eager, jitted)) if a != b)
        print(f"mismatch: jitted tokens differ from eager from step {first_bad}")
        return 1
    if compiles[-1] != compiles[1]:
        print("error: kernels compiled after warm-up")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
