"""Plan replay costs (zyx.jit / zyx.Tape) against PoCL's own launch latency, in one run.

Rows (best and median of alternating blocks, microseconds):

* PoCL launch latency: an empty kernel, enqueue to ``finish`` (pyopencl directly, no zyx), and
  the host time of the bare enqueue alone;
* a captured 20-kernel plan (20 dependent elementwise kernels on 1024 floats) replayed through
  ``zyx.jit``: per kernel, host time of the replay call and enqueue-to-finish time, and what
  that costs beyond the empty-kernel latency; the same 20 kernels eager (graph building,
  schedule cache) for comparison;
* a jitted one-kernel function (``x * 2 + 1``, one fused kernel) call + finish against the bare
  latency and against its own kernel launched bare through pyopencl, and eager;
* ``x * a + 1`` with a new Python float ``a`` at every call, jitted (a replay: the float is an
  argument of the plan) and eager;
* examples/kv_cache_decode.py's decode step, eager and jitted (ms per token).

``python bench/bench_tape.py [--quick]`` prints a markdown table; the machine is shared, so
implementations are timed in alternating blocks.
"""
from __future__ import annotations

import importlib.util
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import zyx  # noqa: E402 - after the checkout is put on the path
from zyx.backend.launch import compile_kernel  # noqa: E402
from zyx.benchmarks import markdown_table  # noqa: E402

N = 1024
CHAIN = 20


def _alternate(fns: dict[str, Callable[[], Any]], reps: int, block: int,
               sync: Callable[[], Any] | None = None) -> dict[str, tuple[float, float]]:
    """(best, median) seconds per call of each function over alternating blocks of ``block`` calls
    (``sync`` runs untimed after each block)."""
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(reps):
        for name, fn in fns.items():
            fn()
            if sync is not None:
                sync()
            t0 = time.perf_counter()
            for _ in range(block):
                fn()
            times[name].append((time.perf_counter() - t0) / block)
            if sync is not None:
                sync()
    return {k: (min(v), statistics.median(v)) for k, v in times.items()}


def _chain(x: Any) -> Any:
    for i in range(CHAIN):
        x = (x * 1.0001 + 0.001 * i).realize()  # one kernel each
    return x


def run(quick: bool = False) -> list[dict]:
    import pyopencl as cl

    dev = zyx.default_device()
    queue = dev.queue
    reps, block = (3, 50) if quick else (25, 60)
    empty = compile_kernel(dev, "__kernel void zyx_bench_empty(__global float* a) {}", "zyx_bench_empty")
    x = zyx.tensor(np.random.default_rng(0).standard_normal(N).astype(np.float32)).realize()
    buf = x._realized().cl
    empty.cl_kernel.set_args(buf)

    def bare_finish() -> None:
        cl.enqueue_nd_range_kernel(queue, empty.cl_kernel, (N,), None)
        queue.finish()

    def bare_enqueue() -> None:
        cl.enqueue_nd_range_kernel(queue, empty.cl_kernel, (N,), None)

    jchain = zyx.jit(_chain)
    one = lambda t: t * 2.0 + 1.0  # noqa: E731 - one fused kernel
    jone = zyx.jit(one)
    scaled = lambda t, a: t * a + 1.0  # noqa: E731 - the same kernel with a Python float argument
    jscaled = zyx.jit(scaled)
    for i in range(3):
        jchain(x).realize()
        jone(x).realize()
        jscaled(x, 2.0 + i).realize()
    queue.finish()

    # the jitted function's own kernel launched bare (pyopencl, same arguments): what the call
    # would cost with no zyx code at all
    ck, glob, local, template = next(iter(jone.cache.values()))[0].plan.steps[0][:4]
    same_out = zyx.zeros(N).realize()._realized()
    same_args = [same_out.cl, buf, *template[2:]]

    def bare_same_finish() -> None:
        ck.cl_kernel.set_args(*same_args)
        cl.enqueue_nd_range_kernel(queue, ck.cl_kernel, glob, local)
        queue.finish()

    def jit_chain_host() -> None:
        jchain(x)

    def jit_chain_finish() -> None:
        jchain(x)
        queue.finish()

    def eager_chain_finish() -> None:
        _chain(x)
        queue.finish()

    def jit_one_finish() -> None:
        jone(x)
        queue.finish()

    def eager_one_finish() -> None:
        one(x).realize()
        queue.finish()

    values = iter(np.linspace(0.5, 4.0, 1 << 20).tolist())

    def jit_scaled_finish() -> None:  # a new float each call: a replay (frontend/traced_scalar.py)
        jscaled(x, next(values))
        queue.finish()

    def eager_scaled_finish() -> None:
        scaled(x, next(values)).realize()
        queue.finish()

    t = _alternate({"bare_finish": bare_finish, "jit_chain_finish": jit_chain_finish,
                    "eager_chain_finish": eager_chain_finish, "bare_same_finish": bare_same_finish,
                    "jit_one_finish": jit_one_finish, "eager_one_finish": eager_one_finish,
                    "jit_scaled_finish": jit_scaled_finish, "eager_scaled_finish": eager_scaled_finish}, reps, block)
    # host-only timings: the queue is drained (untimed) after each block
    host = _alternate({"bare_enqueue": bare_enqueue, "jit_chain_host": jit_chain_host}, reps, block // 4,
                      sync=queue.finish)
    queue.finish()
    lat = t["bare_finish"]
    per = CHAIN

    def row(what: str, v: tuple[float, float], div: int = 1, base: tuple[float, float] | None = None,
            how: str = "") -> dict:
        r = dict(what=what, best_us=v[0] / div * 1e6, median_us=v[1] / div * 1e6)
        if base is not None:
            if how == "ratio":
                r["note"] = f"{v[0] / base[0]:.2f}x / {v[1] / base[1]:.2f}x the bare latency (best / median)"
            else:
                r["note"] = (f"{(v[0] / div - base[0]) * 1e6:.1f} / {(v[1] / div - base[1]) * 1e6:.1f} us beyond "
                             "the latency (best / median)")
        return r

    rows = [
        row("PoCL launch latency (empty kernel, enqueue to finish)", lat),
        row("PoCL bare enqueue of the empty kernel, host time", host["bare_enqueue"]),
        row(f"jit replay of a {CHAIN}-kernel plan, host time per kernel", host["jit_chain_host"], per),
        row(f"jit replay of a {CHAIN}-kernel plan, enqueue to finish per kernel", t["jit_chain_finish"], per, lat),
        row(f"eager {CHAIN} kernels (graph + schedule cache), enqueue to finish per kernel",
            t["eager_chain_finish"], per, lat),
        row("the same kernel launched bare (pyopencl, set_args + enqueue + finish)", t["bare_same_finish"], 1, lat,
            "ratio"),
        row("jitted one-kernel call, to finish", t["jit_one_finish"], 1, lat, "ratio")
        | {"note": f"{t['jit_one_finish'][0] / lat[0]:.2f}x / {t['jit_one_finish'][1] / lat[1]:.2f}x the empty "
                   f"kernel, {t['jit_one_finish'][0] / t['bare_same_finish'][0]:.2f}x / "
                   f"{t['jit_one_finish'][1] / t['bare_same_finish'][1]:.2f}x its own kernel bare (best / median)"},
        row("eager one-kernel call, to finish", t["eager_one_finish"], 1, lat, "ratio"),
        row("jitted x * a + 1 with a new float a each call (replays), to finish", t["jit_scaled_finish"], 1, lat,
            "ratio"),
        row("eager x * a + 1 with a new float a each call, to finish", t["eager_scaled_finish"], 1, lat, "ratio"),
    ]
    rows += _decode(quick)
    try:
        import torch

        torch.set_num_threads(2)
        tx = torch.from_numpy(x.numpy())
        tt = _alternate({"torch": lambda: tx * 2.0 + 1.0}, reps, block)["torch"]
        rows.append(dict(what="PyTorch CPU x * 2 + 1 (1024 floats), for reference", best_us=tt[0] * 1e6,
                         median_us=tt[1] * 1e6))
    except ImportError:
        pass
    return rows


def _decode(quick: bool) -> list[dict]:
    spec = importlib.util.spec_from_file_location("kv_cache_decode", ROOT / "examples" / "kv_cache_decode.py")
    ex = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ex)  # type: ignore[union-attr]
    model = ex.Decoder()
    tokens = 40 if quick else 96
    eager, jitted = [], []
    ex.generate(model, 4, jit=False)
    for _ in range(2 if quick else 3):  # alternating
        eager.append(ex.generate(model, tokens, jit=False)[1])
        jitted.append(ex.generate(model, tokens, jit=True)[1])
    e, j = (min(eager), statistics.median(eager)), (min(jitted), statistics.median(jitted))
    return [dict(what="KV-cache decode step, eager (us per token)", best_us=e[0] * 1e6, median_us=e[1] * 1e6),
            dict(what="KV-cache decode step, jit (us per token)", best_us=j[0] * 1e6, median_us=j[1] * 1e6,
                 note=f"{e[0] / j[0]:.1f}x / {e[1] / j[1]:.1f}x faster than eager (best / median)")]


def main() -> None:
    quick = "--quick" in sys.argv
    rows = run(quick)
    print(f"device: {zyx.default_device()}")
    print(markdown_table(rows, floats=".1f"))


if __name__ == "__main__":
    main()
