"""``scaled_dot_product_attention``: the tiled kernels (``zyx.kernels.attention``) against the composed path
(matmul, softmax, matmul) on the same inputs, alternating (issue 30).

A diagnostic script (not in ``zyx bench``) whose table set ``zyx.nn.functional_attention.use_kernels``: each
row is one attention call, forward only (the output read back) or forward + backward (the three gradients read
back), at the shapes of ``bench_models``' attention (GPT: 4 heads of 64, context 128, batch 16 train and batch 1
forward; the encoder: 12 heads of 32, sequence 128, batch 32; the decode step: one query over 65 keys) and a few
around them. Columns: best wall ms of each path over ``--rounds`` alternating rounds (after two untimed calls
each), the best device ms of a call's kernels (``zyx.profiler``), the kernels' speed-up, and which path the
dispatch takes.

    python bench/bench_attention.py [--rounds N]
"""
from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import zyx  # noqa: E402 - after the path insert (runs from a checkout)
import zyx.nn.functional as F  # noqa: E402
from zyx.nn import functional_attention  # noqa: E402

# label, batch shape, Tq, Tk, head dim, causal, train
CASES = [
    ("GPT train step's attention, batch 16", (16, 4), 128, 128, 64, True, True),
    ("GPT forward, batch 1", (1, 4), 128, 128, 64, True, False),
    ("encoder layer, batch 32", (32, 12), 128, 128, 32, False, False),
    ("decode step (Tq 1)", (1, 4), 1, 65, 64, False, False),
    ("encoder heads, causal", (32, 12), 128, 128, 32, True, False),
    ("encoder heads, train", (32, 12), 128, 128, 32, False, True),
    ("batch 8 x 12 heads of 32", (8, 12), 128, 128, 32, False, False),
    ("batch 32 x 6 heads of 64", (32, 6), 128, 128, 64, False, False),
    ("4 x 4 heads of 64, seq 512", (4, 4), 512, 512, 64, False, False),
    ("4 x 4 heads of 64, seq 64, train", (4, 4), 64, 64, 64, False, True),
]


@contextmanager
def path(kernels: bool) -> Iterator[None]:
    """Every attention of the block on the kernels (True) or on the composed path (False)."""
    chosen = functional_attention.use_kernels
    functional_attention.use_kernels = lambda *args: kernels  # type: ignore[assignment]
    try:
        yield
    finally:
        functional_attention.use_kernels = chosen  # type: ignore[assignment]


def _step(bs: tuple[int, ...], tq: int, tk: int, d: int, causal: bool, train: bool) -> Callable[[], Any]:
    rng = np.random.default_rng(0)
    q, k, v = (zyx.tensor(rng.standard_normal((*bs, t, d)).astype(np.float32), requires_grad=train)
               for t in (tq, tk, tk))
    g = zyx.tensor(rng.standard_normal((*bs, tq, d)).astype(np.float32))

    def step() -> None:
        out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        if not train:
            out.numpy()
            return
        q.grad = k.grad = v.grad = None
        (out * g).sum().backward()
        for t in (q, k, v):
            t.grad.numpy()

    return step


def _device_ms(step: Callable[[], Any]) -> float:
    with zyx.profiler.profile() as prof:
        step()
    return sum(e.device_time_total for e in prof.key_averages()) / 1e3


def run(quick: bool = False, rounds: int | None = None) -> list[dict[str, Any]]:
    rounds = rounds or (2 if quick else 8)
    rows = []
    for label, bs, tq, tk, d, causal, train in CASES:
        step = _step(bs, tq, tk, d, causal, train)
        wall: dict[bool, float] = {}
        dev: dict[bool, float] = {}
        for r in range(rounds):
            for kernels in (True, False):
                with path(kernels):
                    if r == 0:
                        step()
                        step()
                    t = time.perf_counter()
                    step()
                    wall[kernels] = min(wall.get(kernels, 1e9), (time.perf_counter() - t) * 1e3)
                    if r < 3:
                        dev[kernels] = min(dev.get(kernels, 1e9), _device_ms(step))
        probe = [zyx.zeros(*bs, t, d) for t in (tq, tk)]  # lazy: only their shapes are read
        chosen = functional_attention.use_kernels(probe[0], probe[1], probe[1], None, 0.0, causal)
        rows.append({"case": label, "shape": f"{'x'.join(map(str, bs))}x{tq}x{tk}x{d}"
                     + (" causal" if causal else "") + (" fwd+bwd" if train else " fwd"),
                     "kernels_ms": wall[True], "composed_ms": wall[False], "speedup": wall[False] / wall[True],
                     "kernels_device_ms": dev[True], "composed_device_ms": dev[False],
                     "dispatch": "kernels" if chosen else "composed"})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=8)
    args = ap.parse_args()
    from zyx.benchmarks import bench_header, markdown_table

    print(bench_header())
    print(f"# scaled_dot_product_attention on {zyx.default_device()}\n")
    print(markdown_table(run(rounds=args.rounds), titles={"speedup": "composed_ms / kernels_ms"}))


if __name__ == "__main__":
    main()
