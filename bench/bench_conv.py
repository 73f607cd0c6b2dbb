"""Convolution and pooling: zyx vs PyTorch CPU (2 threads) on the same inputs.

Rows: conv2d N=8, 64->64 channels, 56x56, 3x3, padding 1 (GFLOP/s; the ResNet stage-1 layer, with
its bias), the same layer's forward + backward (all three gradients) and conv_transpose2d of the same
size (stride 1, the flipped conv); max_pool2d 2x2 and
avg_pool2d 2x2 on (8, 64, 112, 112) (GB/s of input read + output written). Each zyx call is realized
and synchronized; implementations are timed in alternating blocks of calls (best and median), so
load on the shared machine hits them alike. ``run(quick)`` returns the rows; ``python
bench/bench_conv.py [--quick]`` prints them as a markdown table.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import zyx
import zyx.nn.functional as F
from zyx.backend.timing import alternating
from zyx.benchmarks import synced, versus_torch


def _alternating(fns: dict[str, Callable[[], Any]], reps: int, block: int = 2,
                 pause: float = 0.1) -> dict[str, tuple[float, float]]:
    return alternating(fns, reps, block, pause)


def run(quick: bool = False) -> list[dict]:
    import torch

    torch.set_num_threads(2)
    tf = torch.nn.functional
    reps = 2 if quick else 5
    n = 2 if quick else 8
    rng = np.random.default_rng(0)
    out: list[dict] = []

    def add(op: str, size: str, times: dict[str, tuple[float, float]], **rate: float) -> None:
        for row in versus_torch(op, size, times, digits=2):
            best = times[row["impl"]][0]
            row.update({k: round(v / best / 1e9, 2) for k, v in rate.items()})
            out.append(row)

    x = rng.normal(size=(n, 64, 56, 56)).astype(np.float32)
    w = (rng.normal(size=(64, 64, 3, 3)) * 0.05).astype(np.float32)
    b = rng.normal(size=(64,)).astype(np.float32)
    zx, zw, zb = (zyx.tensor(a).realize() for a in (x, w, b))
    tx, tw, tb = (torch.from_numpy(a) for a in (x, w, b))
    flops = 2.0 * n * 64 * 64 * 56 * 56 * 9
    size = f"{n}x64x56x56, 3x3, 64 out"
    times = _alternating({"zyx": synced(lambda: F.conv2d(zx, zw, zb, padding=1)),
                          "torch": lambda: tf.conv2d(tx, tw, tb, padding=1)}, reps)
    add("conv2d", size, times, **{"GFLOP/s": flops})
    times = _alternating({"zyx": synced(lambda: F.conv_transpose2d(zx, zw, zb, padding=1)),
                          "torch": lambda: tf.conv_transpose2d(tx, tw, tb, padding=1)}, reps)
    add("conv_transpose2d", size, times, **{"GFLOP/s": flops})

    # forward + backward (input, weight and bias gradients: 3x the forward's FLOPs) with a fixed cotangent
    g = rng.normal(size=(n, 64, 56, 56)).astype(np.float32)
    zg, tg = zyx.tensor(g).realize(), torch.from_numpy(g)
    zl = [zyx.tensor(a, requires_grad=True) for a in (x, w, b)]
    tl = [torch.from_numpy(a.copy()).requires_grad_(True) for a in (x, w, b)]

    def zyx_step() -> Any:
        for t in zl:
            t.grad = None
        (F.conv2d(*zl, padding=1) * zg).sum().backward()
        return zl[0].grad + zl[1].grad.sum() + zl[2].grad.sum()  # one result that needs all three

    def torch_step() -> None:
        for t in tl:
            t.grad = None
        (tf.conv2d(*tl, padding=1) * tg).sum().backward()

    times = _alternating({"zyx": synced(zyx_step), "torch": torch_step}, reps)
    add("conv2d forward+backward", size, times, **{"GFLOP/s": 3 * flops})

    p = rng.normal(size=(n, 64, 112, 112)).astype(np.float32)
    zp, tp = zyx.tensor(p).realize(), torch.from_numpy(p)
    moved = p.nbytes * 1.25  # the input read, a quarter of it written
    for op, zf, tfn in (("max_pool2d 2x2", lambda: F.max_pool2d(zp, 2), lambda: tf.max_pool2d(tp, 2)),
                        ("avg_pool2d 2x2", lambda: F.avg_pool2d(zp, 2), lambda: tf.avg_pool2d(tp, 2))):
        times = _alternating({"zyx": synced(zf), "torch": tfn}, reps, block=3, pause=0.02)
        add(op, f"{n}x64x112x112", times, **{"GB/s": moved})
    return out


if __name__ == "__main__":
    from zyx.benchmarks import bench_header, markdown_table

    print(bench_header())
    print(markdown_table(run("--quick" in sys.argv)))
