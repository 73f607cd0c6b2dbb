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


def main() -> None:
    import torch

    torch.set_num_threads(2)
    quick = "--quick" in sys.argv
    blocks = 3 if quick else 7
    rng = np.random.default_rng(0)
    side = 1024 if quick else 4096
    flat = rng.standard_normal(1 << (18 if quick else 20)).astype(np.float32)
    square = rng.standard_normal((side, side)).astype(np.float32)
    zf, zs = zyx.from_numpy(flat).realize(), zyx.from_numpy(square).realize()
    tf, ts = torch.from_numpy(flat), torch.from_numpy(square)

    def zyx_run(fn: Callable[[], Any]) -> Callable[[], None]:
        def run() -> None:
            out = fn()
            for t in out if isinstance(out, tuple) else (out,):
                t.realize()
            zyx.synchronize()
        return run

    rows = [
        (f"sort {flat.size} float32", {
            "zyx": zyx_run(lambda: zf.sort()),
            "torch": lambda: torch.sort(tf),
            "numpy": lambda: (lambda i: (flat[i], i))(np.argsort(flat, kind="stable")),
        }),
        (f"argsort {side}x{side} float32 rows", {
            "zyx": zyx_run(lambda: zs.argsort()),
            "torch": lambda: torch.argsort(ts),
            "numpy": lambda: np.argsort(square, axis=1, kind="stable"),
        }),
        (f"topk k=10 {side}x{side} float32 rows", {
            "zyx": zyx_run(lambda: zs.topk(10)),
            "torch": lambda: torch.topk(ts, 10),
            "numpy": lambda: _np_topk(square, 10),
        }),
    ]
    print(f"device: {zyx.default_device()}; torch threads: {torch.get_num_threads()}")
    for name, runs in rows:
        res = _compare(runs, blocks)
        z = res["zyx"][1]
        cells = "  ".join(f"{k} {b * 1e3:8.2f} / {m * 1e3:8.2f} ms" for k, (b, m) in res.items())
        ratios = "  ".join(f"{k}/zyx {res[k][1] / z:5.2f}x" for k in ("torch", "numpy"))
        print(f"{name:36s} {cells}   (best / median)   {ratios}")


if __name__ == "__main__":
    from zyx.benchmarks import bench_header

    print(bench_header())
    main()
