"""Reductions to few outputs over leading or strided axes (issue 30): device time, GB/s and kernels.

Per case: the kernels one call launches, the sum of their device times (OpenCL profiling events, best
and median of ``--reps`` calls), GB/s of the input bytes over the best time, and the best wall time of
the call through ``realize()`` + ``synchronize()``. The bandwidth reference is the sum of a realized
50M-element float32 tensor. PyTorch (2 threads) runs in a subprocess of its own: in this one PoCL's
worker threads, still spinning after a kernel, slowed its reductions up to a hundredfold.
``python bench/bench_reduce_stages.py [--reps N] [--no-torch]``; a diagnostic script (no ``run``).
"""
from __future__ import annotations

import contextlib
import io
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import zyx
from zyx import settings
from zyx.backend import launch as launch_mod

# (label, shape, dims, stored): "nhwc" keeps (N, H, W, C) in memory, viewed as (N, C, H, W)
SUMS = [("sum(0) (50176, 32)", (50176, 32), 0, None),
        ("sum(0) (50177, 33)", (50177, 33), 0, None),
        ("sum(0) (1000003, 8)", (1000003, 8), 0, None),
        ("sum(0,2,3) (64, 32, 28, 28)", (64, 32, 28, 28), (0, 2, 3), None),
        ("sum(0,2,3) channels-last (64, 32, 28, 28)", (64, 32, 28, 28), (0, 2, 3), "nhwc"),
        ("sum(0) (64, 32, 28, 28)", (64, 32, 28, 28), 0, None),
        ("bias grad sum(0) (256, 1024)", (256, 1024), 0, None)]
BN = [("BatchNorm2d(32) train fwd+bwd (64, 32, 28, 28)", None),
      ("BatchNorm2d(32) train fwd+bwd channels-last", "nhwc")]


def _arrays(shape: tuple[int, ...], stored: str | None, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if stored == "nhwc":
        n, c, h, w = shape
        return rng.standard_normal((n, h, w, c), dtype=np.float32)
    return rng.standard_normal(shape, dtype=np.float32)


def _view(lib: Any, a: np.ndarray, stored: str | None) -> Any:
    t = lib.tensor(a).realize() if lib is zyx else lib.from_numpy(a)
    return t.permute(0, 3, 1, 2) if stored == "nhwc" else t


def _bn_step(lib: Any, stored: str | None) -> Callable[[], Any]:
    x = _view(lib, _arrays((64, 32, 28, 28), stored, 1), stored)
    g = _view(lib, _arrays((64, 32, 28, 28), stored, 2), stored)
    bn = lib.nn.BatchNorm2d(32)

    def step() -> Any:
        xx = x.detach().requires_grad_(True)
        bn(xx).backward(g)
        if lib is zyx:
            return xx.grad.realize(), bn.weight.grad.realize(), bn.bias.grad.realize()
        return xx.grad

    return step


def _device_ms(fn: Callable[[], Any], reps: int) -> tuple[int, float, float, float]:
    """(kernels a call launches, best and median summed device ms, best wall ms)."""
    times: list[float] = []
    event_seconds = launch_mod.event_seconds

    def record(ev: Any) -> float:
        s = event_seconds(ev)
        times.append(s)
        return s

    fn()
    zyx.synchronize()
    before = launch_mod.kernel_count()
    fn()
    zyx.synchronize()
    kernels = launch_mod.kernel_count() - before
    runs = []
    launch_mod.event_seconds = record  # ZYX_DEBUG=1's per-launch timing, its printing discarded
    try:
        for _ in range(reps):
            times.clear()
            settings.set_debug(1)
            with contextlib.redirect_stderr(io.StringIO()):
                fn()
                zyx.synchronize()
            settings.set_debug(0)
            runs.append(sum(times) * 1e3)
    finally:
        launch_mod.event_seconds = event_seconds
        settings.set_debug(0)
    walls = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        zyx.synchronize()
        walls.append(time.perf_counter() - t)
    return kernels, min(runs), statistics.median(runs), min(walls) * 1e3


def _torch_ms(reps: int) -> dict[str, float]:
    """Best ms of each case in PyTorch (2 threads), timed in this script run as a subprocess."""
    done = subprocess.run([sys.executable, __file__, "--torch-only", "--reps", str(reps)], capture_output=True,
                          text=True, check=True, timeout=600)
    out = {}
    for line in done.stdout.splitlines():
        label, _, ms = line.rpartition("\t")
        out[label] = float(ms)
    return out


def _torch_only(reps: int) -> None:
    import torch

    torch.set_num_threads(2)

    def best(fn: Callable[[], Any]) -> float:
        fn()
        ts = []
        for _ in range(reps):
            t = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t)
        return min(ts) * 1e3

    big = torch.from_numpy(np.random.default_rng(0).standard_normal(50_000_000, dtype=np.float32))
    print(f"sum 50M float32 (bandwidth)\t{best(lambda: big.sum()):.4f}")
    for label, shape, dims, stored in SUMS:
        t = _view(torch, _arrays(shape, stored, 0), stored)
        print(f"{label}\t{best(lambda t=t, dims=dims: t.sum(dims)):.4f}")
    for label, stored in BN:
        print(f"{label}\t{best(_bn_step(torch, stored)):.4f}")


def main() -> None:
    reps = int(sys.argv[sys.argv.index("--reps") + 1]) if "--reps" in sys.argv else 15
    if "--torch-only" in sys.argv:
        _torch_only(reps)
        return
    torch_ms = {} if "--no-torch" in sys.argv else _torch_ms(reps)
    print("| case | kernels | device ms (best / median) | GB/s | wall ms | torch ms |\n|---|---|---|---|---|---|")

    def line(label: str, fn: Callable[[], Any], nbytes: int) -> None:
        k, best, med, wall = _device_ms(fn, reps)
        t = torch_ms.get(label)
        print(f"| {label} | {k} | {best:.3f} / {med:.3f} | {nbytes / best / 1e6:.0f} | {wall:.3f} | "
              f"{'' if t is None else f'{t:.3f}'} |", flush=True)

    def reduce_of(a: np.ndarray, stored: str | None, dims: Any) -> Callable[[], Any]:
        x = _view(zyx, a, stored)
        return lambda: x.sum(dims).realize()

    line("sum 50M float32 (bandwidth)", reduce_of(np.random.default_rng(0).standard_normal(
        50_000_000, dtype=np.float32), None, None), 200_000_000)
    for label, shape, dims, stored in SUMS:
        a = _arrays(shape, stored, 0)
        line(label, reduce_of(a, stored, dims), a.nbytes)
    for label, stored in BN:  # bytes: the input and the incoming gradient, each read at least once
        line(label, _bn_step(zyx, stored), 2 * 64 * 32 * 28 * 28 * 4)


if __name__ == "__main__":
    main()
