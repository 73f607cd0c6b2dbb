"""Attention over a variable-length window: a bound ``zyx.Variable`` length against a plain int
length (a new plan, and new kernels, per length), jitted and eager, with PyTorch for reference.

The function is one head-batched attention step over the first ``t`` rows of a (128, 64) cache:
``softmax(q @ k[:t].T / 8) @ v[:t]`` with ``q`` (4, 64). Rows (microseconds per call, to finish):

* jit, Variable length, cycling through LENGTHS: one plan replayed for every length;
* jit, int length, the first call at each new length: a capture (graph, schedule, compile of the
  kernels at that length) per length;
* jit, int length, after every length was captured once: a plan per length, replayed;
* eager, Variable length and int length (the int one after warm-up at each length);
* PyTorch CPU (2 threads), the same computation.

``python bench/bench_varsize.py [--quick]`` prints a markdown table.
"""
from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import zyx  # noqa: E402 - after the checkout is put on the path
from zyx.benchmarks import markdown_table  # noqa: E402

WINDOW, DIM, HEADS = 128, 64, 4


def _attend(q: Any, k: Any, v: Any, t: Any) -> Any:
    return (q @ k[:t].T * 0.125).softmax(-1) @ v[:t]


def _per_call(fn: Callable[[int], Any], lengths: list[int], reps: int) -> tuple[float, float]:
    """(best, median) seconds per call of ``fn(length)`` + finish, cycling through ``lengths``."""
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for n in lengths:
            fn(n)
        zyx.synchronize()
        times.append((time.perf_counter() - t0) / len(lengths))
    return min(times), statistics.median(times)


def run(quick: bool = False) -> list[dict]:
    rng = np.random.default_rng(0)
    q = zyx.tensor(rng.standard_normal((HEADS, DIM)).astype(np.float32)).realize()
    k = zyx.tensor(rng.standard_normal((WINDOW, DIM)).astype(np.float32)).realize()
    v = zyx.tensor(rng.standard_normal((WINDOW, DIM)).astype(np.float32)).realize()
    var = zyx.Variable("t", 1, WINDOW)
    reps = 3 if quick else 7
    lengths = list(range(3, WINDOW + 1, 9))  # 14 lengths
    fresh = list(range(2, WINDOW, 17))[: 4 if quick else 8]  # never seen by the int-keyed plans below

    jvar = zyx.jit(_attend)
    jint = zyx.jit(_attend)
    jvar(q, k, v, var.bind(lengths[0])).realize()
    for n in lengths:
        jint(q, k, v, n).realize()  # one capture per length
    zyx.synchronize()

    # new lengths for the int version: each first call captures and compiles
    t0 = time.perf_counter()
    for n in fresh:
        jint(q, k, v, n + 1).realize()
    zyx.synchronize()
    first_int = (time.perf_counter() - t0) / len(fresh)
    t0 = time.perf_counter()
    for n in fresh:
        jvar(q, k, v, var.bind(n + 1)).realize()
    zyx.synchronize()
    first_var = (time.perf_counter() - t0) / len(fresh)

    res: dict[str, tuple[float, float]] = {}
    torch_fn = None
    try:
        import torch

        torch.set_num_threads(2)
        tq, tk, tv = (torch.from_numpy(a.numpy()) for a in (q, k, v))
        torch_fn = lambda n: (tq @ tk[:n].T * 0.125).softmax(-1) @ tv[:n]  # noqa: E731
    except ImportError:
        pass
    fns: dict[str, Callable[[int], Any]] = {
        "jit_var": lambda n: jvar(q, k, v, var.bind(n)),
        "jit_int": lambda n: jint(q, k, v, n),
        "eager_var": lambda n: _attend(q, k, v, var.bind(n)).realize(),
        "eager_int": lambda n: _attend(q, k, v, n).realize(),
    }
    if torch_fn is not None:
        fns["torch"] = torch_fn
    for fn in fns.values():  # warm-up (the eager int path at every length)
        for n in lengths:
            fn(n)
    for _ in range(2):  # alternating blocks
        for name, fn in fns.items():
            got = _per_call(fn, lengths, max(reps // 2, 1))
            old = res.get(name)
            res[name] = got if old is None else (min(old[0], got[0]), (old[1] + got[1]) / 2)

    def row(what: str, v: tuple[float, float], note: str = "") -> dict:
        return dict(what=what, best_us=v[0] * 1e6, median_us=v[1] * 1e6, note=note)

    jv = res["jit_var"]
    rows = [
        row("jit, Variable length (one plan for all lengths)", jv),
        row("jit, int length, first call at a new length (capture + compile)", (first_int, first_int),
            f"{first_int / jv[0]:.0f}x the Variable replay"),
        row("jit, Variable length, first call at a new length", (first_var, first_var), "a replay: nothing new"),
        row("jit, int length, each length captured before (a plan per length)", res["jit_int"],
            f"{res['jit_int'][0] / jv[0]:.2f}x the Variable replay (best)"),
        row("eager, Variable length", res["eager_var"]),
        row("eager, int length (warm schedule cache per length)", res["eager_int"]),
    ]
    if "torch" in res:
        rows.append(row("PyTorch CPU, 2 threads", res["torch"],
                        f"jit Variable / torch: {jv[0] / res['torch'][0]:.2f}x (best)"))
    return rows


def main() -> None:
    rows = run("--quick" in sys.argv)
    print(f"device: {zyx.default_device()}; window {WINDOW}, dim {DIM}, {HEADS} query rows")
    print(markdown_table(rows, floats=".1f"))


if __name__ == "__main__":
    main()
