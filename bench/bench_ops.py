"""Op benchmarks: zyx vs NumPy, torch CPU (2 threads) and pyopencl.array on the same device.

Rows: fused a*b+c (16M f32), sum (16M), cumsum along the last axis (1024x4096 and 4096x4096
f32, through the contract kernel), softmax and layer_norm (4096x1024), matmul
1024^3 f32, and the latency of a tiny op. Bandwidth rows report GB/s and their ratio to
the copy ceiling (the best of enqueue_copy and the plain and streamed copy kernels of
zyx.benchmarks, measured in the same run). Implementations of one op are timed in
alternating blocks of consecutive calls (best and median of each), so a burst of load on
the shared machine hits them alike while no timed call directly follows another library's;
a pause follows each NumPy/PyTorch matmul, whose BLAS threads spin on for a while after
returning and would slow whatever runs next.
``run(quick, only)`` returns the rows as dicts; ``python bench/bench_ops.py [--quick]
[--only OP[,OP...]]`` prints them (after ``zyx.benchmarks.bench_header()``: NumPy without the
OpenBLAS pins, and its kernel; the numpy matmul row names the OpenBLAS kernel too).
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
import zyx.nn.functional as F
from zyx.backend.timing import SETTLE_SECONDS, Stopwatch


def _best(fn: Callable[[], Any], reps: int, sync: Callable[[], None] = lambda: None) -> float:
    fn()
    sync()
    best = float("inf")
    for _ in range(reps):
        watch = Stopwatch()
        fn()
        sync()
        best = min(best, watch.seconds())
    return best


def _alternating(fns: dict[str, tuple[Callable[[], Any], Callable[[], None]]], reps: int,
                 pause: float = 0.0, block: int = 5) -> dict[str, tuple[float, float]]:
    """(best, median) seconds of each ``name: (fn, sync)``: ``reps`` rounds, each running every
    implementation in turn for a block of ``block`` timed calls; ``pause`` seconds of sleep after
    each host-library call (names not starting with ``zyx``).

    Blocks, not single calls, alternate, with ``SETTLE_SECONDS`` of sleep and one untimed call
    before each: a call right after another library's pays for it (its threads still spinning, its
    data in the caches). On the 2-core VM a layer_norm call cost zyx ~0.2 ms more right after a
    PyTorch call and PyTorch ~0.1 ms more right after zyx's; PyTorch's OpenMP workers spin ~5 ms
    after each call, so without the sleep zyx's 16M ``sum`` ran 1.34x PyTorch's time, with it 1.11x
    (median of per-round ratios, same run)."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    for fn, sync in fns.values():
        fn()
        sync()
    for _ in range(reps):
        for name, (fn, sync) in fns.items():
            time.sleep(SETTLE_SECONDS)
            fn()  # the first call of a block follows the other implementation: not timed
            sync()
            for _ in range(block):
                watch = Stopwatch()
                fn()
                sync()
                times[name].append(watch.seconds())
                if pause and not name.startswith("zyx"):
                    time.sleep(pause)
    return {name: (min(ts), statistics.median(ts)) for name, ts in times.items()}


def _copy_ceiling(nbytes: int, reps: int) -> float:
    """The device's copy ceiling (GB/s, read + write): the best of enqueue_copy and the plain and
    streamed copy kernels of zyx.benchmarks."""
    from zyx.benchmarks import copy_ceiling

    return max(r["GB/s"] for r in copy_ceiling(zyx.default_device(), nbytes, runs=reps))


OPS = ("a*b+c", "sum", "cumsum", "softmax", "layer_norm", "matmul", "tiny")
#: cumsum rows (float32 along the last axis): many rows a few scan blocks long, and the square 64 MiB one.
CUMSUM_SHAPES = ((1024, 4096), (4096, 4096))


def _blas_note() -> str:
    """The BLAS NumPy's matmul ran on (threadpoolctl's record), for the numpy matmul row."""
    from zyx.benchmarks import blas_info

    return "; ".join(f"{i.get('internal_api')} {i.get('architecture')}, {i.get('num_threads')} threads"
                     for i in blas_info()) or "BLAS kernel unknown (no threadpoolctl)"


def run(quick: bool = False, only: tuple[str, ...] = OPS) -> list[dict]:
    """The rows of the ops in ``only`` (every op of ``OPS`` by default)."""
    reps = 3 if quick else 10
    n = (1 << 22) if quick else (1 << 24)
    rows_, cols = (1024, 1024) if quick else (4096, 1024)
    mm = 512 if quick else 1024
    out: list[dict] = []
    sync = zyx.synchronize
    try:
        import torch

        torch.set_num_threads(2)
    except ImportError:  # pragma: no cover
        torch = None
    try:
        import pyopencl.array as cla
    except ImportError:  # pragma: no cover
        cla = None

    def none() -> None:  # the host libraries have nothing to synchronize
        return None

    rng = np.random.default_rng(0)
    a, b, c = (rng.uniform(-1, 1, n).astype(np.float32) for _ in range(3))
    if "a*b+c" in only or "sum" in only:
        ceiling = _copy_ceiling(n * 4, reps)
        out.append({"op": "copy ceiling", "impl": "best of enqueue_copy, copy kernels (plain, streamed)",
                    "size": f"{n}", "GB/s": round(ceiling, 2)})
        za, zb, zc = (zyx.tensor(x).realize() for x in (a, b, c))
        if torch is not None:
            ta, tb, tc = (torch.from_numpy(x) for x in (a, b, c))

        def bw(op: str, impl: str, t: tuple[float, float], nbytes: int) -> None:
            gbs = nbytes / t[0] / 1e9
            out.append({"op": op, "impl": impl, "size": str(n), "ms": round(t[0] * 1e3, 3),
                        "median_ms": round(t[1] * 1e3, 3), "GB/s": round(gbs, 2), "x_copy": round(gbs / ceiling, 2)})

    if "a*b+c" in only:
        fns = {"zyx": (lambda: (za * zb + zc).realize(), sync), "numpy": (lambda: a * b + c, none)}
        if torch is not None:
            fns["torch"] = (lambda: ta * tb + tc, none)
        if cla is not None:
            dev = zyx.default_device()
            ca, cb, cc = (cla.to_device(dev.queue, x) for x in (a, b, c))
            fns["pyopencl.array"] = (lambda: ca * cb + cc, dev.queue.finish)
        for impl, t in _alternating(fns, max(2, reps // 2), block=3).items():
            bw("a*b+c", impl, t, 16 * n)
    if "sum" in only:
        fns = {"zyx": (lambda: za.sum().realize(), sync), "numpy": (lambda: a.sum(), none)}
        if torch is not None:
            fns["torch"] = (lambda: ta.sum(), none)
        for impl, t in _alternating(fns, max(2, reps // 2), block=3).items():
            bw("sum", impl, t, 4 * n)

    if "cumsum" in only:
        for shape in CUMSUM_SHAPES[:1] if quick else CUMSUM_SHAPES:
            xs = rng.uniform(-1, 1, shape).astype(np.float32)
            zs = zyx.tensor(xs).realize()
            fns = {"zyx": (lambda zs=zs: zs.cumsum(1).realize(), sync),
                   "numpy": (lambda xs=xs: np.cumsum(xs, 1), none)}
            if torch is not None:
                ts = torch.from_numpy(xs)
                fns["torch"] = (lambda ts=ts: torch.cumsum(ts, 1), none)
            for impl, t in _alternating(fns, max(2, reps // 2), block=3).items():
                out.append({"op": "cumsum dim=1", "impl": impl, "size": f"{shape[0]}x{shape[1]}",
                            "ms": round(t[0] * 1e3, 3), "median_ms": round(t[1] * 1e3, 3),
                            "GB/s": round(8 * xs.size / t[0] / 1e9, 2)})
            del zs

    x = rng.normal(size=(rows_, cols)).astype(np.float32)
    zx = zyx.tensor(x).realize()
    g = zyx.ones(cols)
    tx = torch.from_numpy(x) if torch is not None else None
    tg = torch.ones(cols) if torch is not None else None
    for name, zf, tf in (("softmax", lambda: zx.softmax(1).realize(), lambda: torch.softmax(tx, 1)),
                         ("layer_norm", lambda: F.layer_norm(zx, (cols,), g, g).realize(),
                          lambda: torch.nn.functional.layer_norm(tx, (cols,), tg, tg))):
        if name not in only:
            continue
        fns = {"zyx": (zf, sync)}
        if torch is not None:
            fns["torch"] = (tf, none)
        for impl, t in _alternating(fns, 2 * reps).items():
            out.append({"op": name, "impl": impl, "size": f"{rows_}x{cols}", "ms": round(t[0] * 1e3, 3),
                        "median_ms": round(t[1] * 1e3, 3), "GB/s": round(8 * x.size / t[0] / 1e9, 2)})

    ma = rng.normal(size=(mm, mm)).astype(np.float32)
    mb = rng.normal(size=(mm, mm)).astype(np.float32)
    if "matmul" in only:
        zma, zmb = zyx.tensor(ma).realize(), zyx.tensor(mb).realize()
        flops = 2 * mm ** 3
        fns = {"zyx": (lambda: (zma @ zmb).realize(), sync), "numpy": (lambda: ma @ mb, none)}
        if torch is not None:
            tma, tmb = torch.from_numpy(ma), torch.from_numpy(mb)
            fns["torch"] = (lambda: tma @ tmb, none)
        for impl, t in _alternating(fns, max(3, reps), pause=0.2, block=2).items():
            out.append({"op": "matmul", "impl": impl, "size": f"{mm}^3", "ms": round(t[0] * 1e3, 3),
                        "median_ms": round(t[1] * 1e3, 3), "GFLOP/s": round(flops / t[0] / 1e9, 2)})
            if impl == "numpy":
                out[-1]["blas"] = _blas_note()

    if "tiny" in only:
        tiny = zyx.ones(1024).realize()
        t = _best(lambda: (tiny + 1).realize(), 200, sync)
        out.append({"op": "tiny (x+1).realize()", "impl": "zyx", "size": "1024", "us": round(t * 1e6, 1)})
    return out


def main(argv: list[str]) -> None:
    from zyx.benchmarks import bench_header, markdown_table

    print(bench_header())
    only = tuple(argv[argv.index("--only") + 1].split(",")) if "--only" in argv else OPS
    unknown = [op for op in only if op not in OPS]
    if unknown:
        sys.exit(f"bench_ops: unknown op {unknown[0]!r}; known: {', '.join(OPS)}")
    print(markdown_table(run("--quick" in argv, only), floats=""))


if __name__ == "__main__":
    main(sys.argv[1:])
