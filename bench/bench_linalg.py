"""Singular values: ``zyx.linalg.svdvals`` (the one-sided Jacobi kernel, a work-item per matrix) vs
``torch.linalg.svdvals`` (LAPACK, 2 threads) and ``numpy.linalg.svd(compute_uv=False)`` on a batch of
(256, 64, 64) float32 matrices, and the spectral norm ``linalg.matrix_norm(ord=2)`` of the same.
Implementations are timed in alternating blocks (best and median), so load on the shared machine hits
them alike. ``python bench/bench_linalg.py [--quick]`` prints a markdown table."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import zyx
from zyx.backend.timing import alternating
from zyx.benchmarks import synced, versus_torch


def run(quick: bool = False) -> list[dict]:
    import torch

    torch.set_num_threads(2)
    reps = 2 if quick else 5
    batch, n = (32, 32) if quick else (256, 64)
    a = np.random.default_rng(0).normal(size=(batch, n, n)).astype(np.float32)
    za, ta = zyx.tensor(a).realize(), torch.from_numpy(a)
    size = f"{batch}x{n}x{n} float32"
    out: list[dict] = []
    for op, fns in (("svdvals", {"zyx": synced(lambda: zyx.linalg.svdvals(za)),
                                 "torch": lambda: torch.linalg.svdvals(ta),
                                 "numpy": lambda: np.linalg.svd(a, compute_uv=False)}),
                    ("matrix_norm ord=2", {"zyx": synced(lambda: zyx.linalg.matrix_norm(za, 2)),
                                           "torch": lambda: torch.linalg.matrix_norm(ta, 2)})):
        out += versus_torch(op, size, alternating(fns, reps), digits=2)
    return out


if __name__ == "__main__":
    from zyx.benchmarks import bench_header, markdown_table

    print(bench_header())
    print(markdown_table(run("--quick" in sys.argv)))
