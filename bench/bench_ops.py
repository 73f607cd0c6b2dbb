"""Op benchmarks: zyx vs NumPy, torch CPU (2 threads) and pyopencl.array on the same device.

Rows: fused a*b+c (16M f32), sum (16M), softmax and layer_norm (4096x1024), matmul
1024^3 f32, and the latency of a tiny op. Bandwidth rows report GB/s and their ratio to
the copy ceiling (enqueue_copy buffer->buffer measured in the same run).
``run(quick)`` returns the rows as dicts; ``python bench/bench_ops.py [--quick]`` prints them.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import zyx  # noqa: E402
import zyx.nn.functional as F  # noqa: E402


def _best(fn: Callable[[], Any], reps: int, sync: Callable[[], None] = lambda: None) -> float:
    fn()
    sync()
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        sync()
        best = min(best, time.perf_counter() - t0)
    return best


def _copy_ceiling(nbytes: int, reps: int) -> float:
    """The device's copy ceiling (GB/s, read + write): the faster of enqueue_copy and the
    vectorized copy kernel, from zyx.benchmarks."""
    from zyx.benchmarks import copy_ceiling

    return max(r["GB/s"] for r in copy_ceiling(zyx.default_device(), nbytes, runs=reps))


def run(quick: bool = False) -> list[dict]:
    reps = 3 if quick else 10
    n = (1 << 22) if quick else (1 << 24)
    rows_, cols = (1024, 1024) if quick else (4096, 1024)
    mm = 512 if quick else 1024
    out: list[dict] = []
    sync = zyx.synchronize
    ceiling = _copy_ceiling(n * 4, reps)
    out.append({"op": "copy ceiling", "impl": "best of enqueue_copy, copy kernel", "size": f"{n}", "GB/s": round(ceiling, 2)})
    try:
        import torch

        torch.set_num_threads(2)
    except ImportError:  # pragma: no cover
        torch = None
    try:
        import pyopencl.array as cla
    except ImportError:  # pragma: no cover
        cla = None
    rng = np.random.default_rng(0)
    a, b, c = (rng.uniform(-1, 1, n).astype(np.float32) for _ in range(3))
    za, zb, zc = (zyx.tensor(x).realize() for x in (a, b, c))

    def bw(op: str, impl: str, t: float, nbytes: int) -> None:
        gbs = nbytes / t / 1e9
        out.append({"op": op, "impl": impl, "size": str(n), "ms": round(t * 1e3, 3), "GB/s": round(gbs, 2),
                    "x_copy": round(gbs / ceiling, 2)})

    bw("a*b+c", "zyx", _best(lambda: (za * zb + zc).realize(), reps, sync), 16 * n)
    bw("a*b+c", "numpy", _best(lambda: a * b + c, reps), 16 * n)
    if torch is not None:
        ta, tb, tc = (torch.from_numpy(x) for x in (a, b, c))
        bw("a*b+c", "torch", _best(lambda: ta * tb + tc, reps), 16 * n)
    if cla is not None:
        dev = zyx.default_device()
        ca, cb, cc = (cla.to_device(dev.queue, x) for x in (a, b, c))
        bw("a*b+c", "pyopencl.array", _best(lambda: ca * cb + cc, reps, dev.queue.finish), 16 * n)
    bw("sum", "zyx", _best(lambda: za.sum().realize(), reps, sync), 4 * n)
    bw("sum", "numpy", _best(lambda: a.sum(), reps), 4 * n)
    if torch is not None:
        bw("sum", "torch", _best(lambda: ta.sum(), reps), 4 * n)

    x = rng.normal(size=(rows_, cols)).astype(np.float32)
    zx = zyx.tensor(x).realize()
    g = zyx.ones(cols)
    for name, zf, tf in (("softmax", lambda: zx.softmax(1).realize(), "softmax"),
                         ("layer_norm", lambda: F.layer_norm(zx, (cols,), g, g).realize(), "layer_norm")):
        t = _best(zf, reps, sync)
        out.append({"op": name, "impl": "zyx", "size": f"{rows_}x{cols}", "ms": round(t * 1e3, 3),
                    "GB/s": round(8 * x.size / t / 1e9, 2)})
        if torch is not None:
            tx = torch.from_numpy(x)
            tg = torch.ones(cols)
            fn = (lambda: torch.softmax(tx, 1)) if tf == "softmax" else \
                (lambda: torch.nn.functional.layer_norm(tx, (cols,), tg, tg))
            t = _best(fn, reps)
            out.append({"op": name, "impl": "torch", "size": f"{rows_}x{cols}", "ms": round(t * 1e3, 3),
                        "GB/s": round(8 * x.size / t / 1e9, 2)})

    ma = rng.normal(size=(mm, mm)).astype(np.float32)
    mb = rng.normal(size=(mm, mm)).astype(np.float32)
    zma, zmb = zyx.tensor(ma).realize(), zyx.tensor(mb).realize()
    flops = 2 * mm ** 3
    for impl, fn, s in (("zyx", lambda: (zma @ zmb).realize(), sync), ("numpy", lambda: ma @ mb, lambda: None)):
        t = _best(fn, max(2, reps // 3), s)
        out.append({"op": "matmul", "impl": impl, "size": f"{mm}^3", "ms": round(t * 1e3, 3),
                    "GFLOP/s": round(flops / t / 1e9, 2)})
    if torch is not None:
        tma, tmb = torch.from_numpy(ma), torch.from_numpy(mb)
        t = _best(lambda: tma @ tmb, max(2, reps // 3))
        out.append({"op": "matmul", "impl": "torch", "size": f"{mm}^3", "ms": round(t * 1e3, 3),
                    "GFLOP/s": round(flops / t / 1e9, 2)})

    tiny = zyx.ones(1024).realize()
    t = _best(lambda: (tiny + 1).realize(), 200, sync)
    out.append({"op": "tiny (x+1).realize()", "impl": "zyx", "size": "1024", "us": round(t * 1e6, 1)})
    return out


def main(argv: list[str]) -> None:
    rows = run("--quick" in argv)
    keys: list[str] = []
    for r in rows:
        keys.extend(k for k in r if k not in keys)
    print("| " + " | ".join(keys) + " |")
    print("|" + "---|" * len(keys))
    for r in rows:
        print("| " + " | ".join(str(r.get(k, "")) for k in keys) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
