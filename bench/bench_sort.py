"""Sorting and selection benchmarks (issue 14) against PyTorch CPU (2 threads) and NumPy.

Rows (float32 standard-normal inputs, realized before timing):

* sort of 1M elements (one row: zyx's block-parallel radix sort), values and indices;
* argsort of 4096 x 4096 along the rows (a work-item per row: LSD radix sort);
* topk(k=10) of 4096 x 4096 along the rows (private top-k lists, no sort).

NumPy has no topk: ``argpartition`` of the k largest then an ``argsort`` of those k. Each row
times zyx, PyTorch and NumPy in alternating blocks (best and median), zyx synchronized.
``python bench/bench_sort.py [--quick]``.
"""
from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import zyx
from zyx.benchmarks import versus_torch


def _time(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _compare(runs: dict[str, Callable[[], Any]], blocks: int) -> dict[str, tuple[float, float]]:
    """Best and median seconds of each function, measured in alternating blocks after one warm-up."""
    for fn in runs.values():
        fn()
    times: dict[str, list[float]] = {k: [] for k in runs}
    for _ in range(blocks):
        for name, fn in runs.items():
            times[name].append(_time(fn))
    return {k: (min(v), statistics.median(v)) for k, v in times.items()}


def _np_topk(a: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    part = np.argpartition(-a, k - 1, axis=1)[:, :k]
    vals = np.take_along_axis(a, part, 1)
    order = np.argsort(-vals, axis=1, kind="stable")
    return np.take_along_axis(vals, order, 1), np.take_along_axis(part, order, 1)


def run(quick: bool = False) -> list[dict]:
    """The rows: op, implementation, best and median ms, PyTorch's over zyx's (best and median)."""
    import torch

    torch.set_num_threads(2)
    blocks = 3 if quick else 7
    rng = np.random.default_rng(0)
    side = 1024 if quick else 4096
    flat = rng.standard_normal(1 << (18 if quick else 20)).astype(np.float32)
    square = rng.standard_normal((side, side)).astype(np.float32)
    zf, zs = zyx.from_numpy(flat).realize(), zyx.from_numpy(square).realize()
    tf, ts = torch.from_numpy(flat), torch.from_numpy(square)

    def zyx_run(fn: Callable[[], Any]) -> Callable[[], None]:
        def realized() -> None:
            out = fn()
            for t in out if isinstance(out, tuple) else (out,):
                t.realize()
            zyx.synchronize()
        return realized

    cases = [
        ("sort", f"{flat.size} float32", {
            "zyx": zyx_run(lambda: zf.sort()),
            "torch": lambda: torch.sort(tf),
            "numpy": lambda: (lambda i: (flat[i], i))(np.argsort(flat, kind="stable")),
        }),
        ("argsort (rows)", f"{side}x{side} float32", {
            "zyx": zyx_run(lambda: zs.argsort()),
            "torch": lambda: torch.argsort(ts),
            "numpy": lambda: np.argsort(square, axis=1, kind="stable"),
        }),
        ("topk k=10 (rows)", f"{side}x{side} float32", {
            "zyx": zyx_run(lambda: zs.topk(10)),
            "torch": lambda: torch.topk(ts, 10),
            "numpy": lambda: _np_topk(square, 10),
        }),
    ]
    return [row for op, size, runs in cases for row in versus_torch(op, size, _compare(runs, blocks))]


if __name__ == "__main__":
    from zyx.benchmarks import bench_header, markdown_table

    print(bench_header())
    print(f"device: {zyx.default_device()}; torch threads: 2\n")
    print(markdown_table(run("--quick" in sys.argv)))
