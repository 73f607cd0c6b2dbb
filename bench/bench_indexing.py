"""Gather and scatter: zyx vs PyTorch CPU (2 threads) and NumPy on the same inputs.

Rows (float32 values, int64 indices drawn uniformly, so duplicates occur): ``gather`` of 1M indices
from 1M elements (``x.gather(0, idx)``), ``x[idx]`` of the same, ``scatter_add`` of 1M values at 1M
indices into 1M elements (out of place: a copy of ``x`` plus the atomic scatter kernel), and
``index_put_(accumulate=True)`` in place (a bounds-check launch, then the guarded scatter), and
``scatter_add`` under ``zyx.use_deterministic_algorithms(True)`` (the partition kernel: one work
item per compute unit, each walking every index in PyTorch's order). On a CPU the two scatter rows
run the privatized kernel (``kernels.scatter`` ``private``); their ``zyx atomic`` rows force the
atomic kernel in the same alternation, as the before/after comparison. "scatter_add, every strategy"
forces each kernel of ``kernels.scatter`` in turn (atomic, private, partition, and the sort +
segmented reduce ``sorted``) against PyTorch in one alternation.
NumPy's counterparts are ``np.take`` and ``np.add.at``. Each zyx call is realized and synchronized;
implementations are timed in alternating blocks of calls (best and median of each), so load on the
shared machine hits them alike. ``run(quick)`` returns the rows; ``python bench/bench_indexing.py
[--quick]`` prints them as a markdown table.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import zyx
from zyx.backend.timing import alternating
from zyx.benchmarks import synced, versus_torch


def run(quick: bool = False) -> list[dict]:
    import torch

    torch.set_num_threads(2)
    reps = 2 if quick else 6
    n = 1 << 18 if quick else 1 << 20
    rng = np.random.default_rng(0)
    x = rng.normal(size=n).astype(np.float32)
    idx = rng.integers(0, n, size=n).astype(np.int64)
    src = rng.normal(size=n).astype(np.float32)
    zx, zi, zs = (zyx.tensor(a).realize() for a in (x, idx, src))
    tx, ti, ts = (torch.from_numpy(a) for a in (x, idx, src))
    zacc, tacc = zyx.zeros(n).realize(), torch.zeros(n)
    out: list[dict] = []

    def deterministic() -> Any:
        zyx.use_deterministic_algorithms(True)
        try:
            return zx.scatter_add(0, zi, zs).realize()
        finally:
            zyx.use_deterministic_algorithms(False)
            zyx.synchronize()

    def forced(method: str, f: Callable[[], Any]) -> Callable[[], Any]:
        from zyx.kernels import scatter as kernels

        def call() -> Any:
            kernels.force = method
            try:
                return synced(f)()
            finally:
                kernels.force = None
        return call

    def atomic(f: Callable[[], Any]) -> Callable[[], Any]:
        return forced("atomic", f)

    def np_add_at() -> np.ndarray:
        y = x.copy()
        np.add.at(y, idx, src)
        return y

    size = f"{n} indices into {n}"
    cases = [
        ("gather", {"zyx": synced(lambda: zx.gather(0, zi)), "torch": lambda: tx.gather(0, ti),
                    "numpy": lambda: np.take(x, idx)}),
        ("x[idx]", {"zyx": synced(lambda: zx[zi]), "torch": lambda: tx[ti], "numpy": lambda: x[idx]}),
        ("scatter_add", {"zyx": synced(lambda: zx.scatter_add(0, zi, zs)),
                         "zyx atomic": atomic(lambda: zx.scatter_add(0, zi, zs)),
                         "torch": lambda: tx.scatter_add(0, ti, ts), "numpy": np_add_at}),
        ("scatter_add deterministic", {"zyx": deterministic, "torch": lambda: tx.scatter_add(0, ti, ts)}),
        ("scatter_add, every strategy", {
            "zyx": synced(lambda: zx.scatter_add(0, zi, zs)),
            **{f"zyx {m}": forced(m, lambda: zx.scatter_add(0, zi, zs)) for m in ("atomic", "private", "partition",
                                                                                  "sorted")},
            "torch": lambda: tx.scatter_add(0, ti, ts)}),
        ("index_put_ accumulate (in place)", {
            "zyx": synced(lambda: zacc.index_put_((zi,), zs, accumulate=True)),
            "zyx atomic": atomic(lambda: zacc.index_put_((zi,), zs, accumulate=True)),
            "torch": lambda: tacc.index_put_((ti,), ts, accumulate=True)}),
    ]
    for op, fns in cases:
        times = alternating(fns, reps)
        out += versus_torch(op, size, times)
    return out


if __name__ == "__main__":
    from zyx.benchmarks import bench_header, markdown_table

    print(bench_header())
    print(markdown_table(run("--quick" in sys.argv)))
