"""Matmul shapes beyond the square: tall-skinny products (conv2d's im2col / weight-gradient shapes for
N=8, 56x56, 64 channels, 3x3: 25088 = 8*56*56 rows, 576 = 64*3*3), a long reduce with few outputs
(``x.T @ g``: the weight gradient, the left operand a transposed view), wide-and-short products (their
right operand does not stay cached: the row tiles run fastest), and the square 1024^3 / 4096x1024x1024 /
2048^3 products as the reference. zyx (the heuristic opts, or the tuned ones when run with
``ZYX_TUNE=1``) against PyTorch CPU at 2 threads, timed in alternating blocks (best and median).
``python bench/bench_matmul_shapes.py [--quick] [--only NAME]`` prints a markdown table with GFLOP/s."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import zyx
from zyx.backend.timing import alternating
from zyx.benchmarks import synced, versus_torch

# (name, M, K, N, left operand stored transposed)
SHAPES = (
    ("im2col fwd", 25088, 576, 64, False),
    ("wgrad x.T@g", 576, 25088, 64, True),
    ("wgrad contiguous", 576, 25088, 64, False),
    ("dgrad", 25088, 64, 576, False),
    ("tall N=64", 4096, 4096, 64, False),
    ("wide M=64", 64, 4096, 4096, False),
    ("wide M=512", 512, 4096, 1024, False),
    ("square", 1024, 1024, 1024, False),
    ("tall square", 4096, 1024, 1024, False),
    ("square 2048", 2048, 2048, 2048, False),
)


def _operands(m: int, k: int, n: int, left_t: bool, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    a = rng.standard_normal((k, m) if left_t else (m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    return a, b


def run(quick: bool = False, only: str | None = None) -> list[dict]:
    import torch

    torch.set_num_threads(2)
    reps = 2 if quick else 4
    rng = np.random.default_rng(0)
    out: list[dict] = []
    for name, m, k, n, left_t in SHAPES:
        if only and only not in name:
            continue
        a, b = _operands(m, k, n, left_t, rng)
        za, zb = zyx.tensor(a).realize(), zyx.tensor(b).realize()
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        if left_t:
            za, ta = za.T, ta.T
        got = (za @ zb).numpy()
        want = (ta @ tb).numpy()
        err = float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-30))
        if err > 1e-4:
            raise AssertionError(f"{name}: zyx differs from torch by {err:.2e} (relative to the largest value)")
        times = alternating({"zyx": synced(lambda za=za, zb=zb: za @ zb), "torch": lambda ta=ta, tb=tb: ta @ tb},
                            reps, block=3, pause=0.05)
        flops = 2.0 * m * k * n
        size = f"({m}x{k})@({k}x{n})" + (" A=x.T" if left_t else "")
        for row in versus_torch(name, size, times, digits=2):
            row["GFLOP/s"] = round(flops / times[row["impl"]][0] / 1e9, 1)
            out.append(row)
    return out


if __name__ == "__main__":
    from zyx import settings
    from zyx.benchmarks import bench_header, markdown_table

    print(bench_header())
    print(f"ZYX_TUNE={settings.TUNE}")
    only = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else None
    print(markdown_table(run("--quick" in sys.argv, only)))
