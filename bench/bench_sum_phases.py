"""Where ``x.sum()`` of a realized 16M float32 tensor spends its time, per phase (issue 14's sum gap).

Two splits, every call right after a finish (as in a benchmark loop, where the Python thread
runs cold after the kernel):

* host phases of ``float(x.sum())``: ``build`` (``x.sum()``), ``to_1st`` (``realize()`` until the
  first kernel enqueue starts), ``launch`` (the rest of ``realize()``), ``readback`` (``float(s)``
  of the finished result); then end to end ``float(x.sum())``, ``x.sum().realize()`` +
  ``zyx.synchronize()`` and PyTorch's ``float(t.sum())`` (2 threads), alternating;
* ``x.sum().realize(); zyx.synchronize()`` split at the device's profiling timestamps (mapped to
  the host clock through the first enqueue): host before the first enqueue, queue -> kernel 1
  start, kernel 1, kernel 1 end -> kernel 2 start, kernel 2, kernel 2 end -> synchronize returns.

``python bench/bench_sum_phases.py [CALLS]`` prints best / median microseconds of each;
``python bench/bench_sum_phases.py --floor`` compares ``float(x.sum())`` with the same two launches
and read made straight through pyopencl (``floor``) and with PyTorch; ``--bare`` pairs PyTorch's
``t.sum()`` with one launch of hand-written streaming kernels (no zyx Python, no second launch: what
the device itself can do) and with zyx's ``x.sum().realize(); zyx.synchronize()``, per round.
"""
from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import zyx


def _line(res: dict[str, list[int]]) -> str:
    return "  ".join(f"{k} {min(v) / 1e3:.0f}/{statistics.median(v) / 1e3:.0f}" for k, v in res.items() if v)


def _inputs() -> tuple[Any, Any]:
    """The realized 16M float32 zyx tensor and the same values as a PyTorch tensor (None without
    PyTorch, which runs at 2 threads)."""
    a = np.random.default_rng(0).uniform(-1, 1, 1 << 24).astype(np.float32)
    try:
        import torch

        torch.set_num_threads(2)
    except ImportError:  # pragma: no cover
        return zyx.tensor(a).realize(), None
    return zyx.tensor(a).realize(), torch.from_numpy(a)


def phases(calls: int = 30) -> tuple[str, str]:
    """The two splits' lines (best/median us per phase)."""
    import pyopencl as cl

    import zyx.graph.schedule as sched
    from zyx.backend import launch as launch_mod

    x, t = _inputs()
    queue = zyx.default_device().queue
    for _ in range(5):
        float(x.sum())
    clock = time.perf_counter_ns  # CLOCK_MONOTONIC on Linux, the clock PoCL's profiling uses
    enqueue = cl.enqueue_nd_range_kernel
    marks: list[int] = []
    events: list[Any] = []

    def timed_enqueue(*args: Any, **kwargs: Any) -> Any:
        marks.append(clock())
        event = enqueue(*args, **kwargs)
        events.append(event)
        return event

    res: dict[str, list[int]] = {k: [] for k in ("build", "to_1st", "launch", "readback", "e2e_float",
                                                  "e2e_sync", "torch")}
    try:
        for _ in range(calls):
            cl.enqueue_nd_range_kernel = timed_enqueue
            queue.finish()
            marks.clear()
            t0 = clock()
            s = x.sum()
            t1 = clock()
            s.realize()
            t2 = clock()
            queue.finish()
            t3 = clock()
            float(s)
            t4 = clock()
            cl.enqueue_nd_range_kernel = enqueue
            for k, v in zip(res, (t1 - t0, marks[0] - t1, t2 - marks[0], t4 - t3)):
                res[k].append(v)
            zyx.synchronize()
            t0 = clock()
            float(x.sum())
            res["e2e_float"].append(clock() - t0)
            zyx.synchronize()
            t0 = clock()
            x.sum().realize()
            zyx.synchronize()
            res["e2e_sync"].append(clock() - t0)
            if t is not None:
                t0 = clock()
                float(t.sum())
                res["torch"].append(clock() - t0)
        # the device split needs each launch's event: replays launch through launch() meanwhile
        prepared = getattr(sched, "launch_prepared", None)
        if prepared is not None:
            sched.launch_prepared = lambda ck, g, loc, args, off, counts: launch_mod.launch(
                ck, g, loc, args, offset=off, counts=counts)
        cl.enqueue_nd_range_kernel = timed_enqueue
        names = ("host_pre", "q1->start1", "kern1", "end1->start2", "kern2", "end2->return", "total")
        dev: dict[str, list[int]] = {k: [] for k in names}
        for _ in range(calls):
            zyx.synchronize()
            marks.clear()
            events.clear()
            t0 = clock()
            x.sum().realize()
            zyx.synchronize()
            t2 = clock()
            p1, p2 = events[0].profile, events[-1].profile
            offset = p1.queued - marks[0]
            for k, v in zip(names, (marks[0] - t0, p1.start - p1.queued, p1.end - p1.start, p2.start - p1.end,
                                    p2.end - p2.start, t2 - (p2.end - offset), t2 - t0)):
                dev[k].append(v)
    finally:
        cl.enqueue_nd_range_kernel = enqueue
        if prepared is not None:
            sched.launch_prepared = prepared
    return _line(res), _line(dev)


def floor(rounds: int = 6, block: int = 20) -> list[str]:
    """Per round, best/median ms of ``float(x.sum())`` three ways, in blocks of ``block`` calls 0.3 s apart
    (so no runtime's spinning threads slow the next): ``raw`` makes zyx's two recorded launches and the
    blocking read straight through pyopencl (no zyx Python: the floor of this design on this device),
    then zyx, then PyTorch (2 threads)."""
    import pyopencl as cl

    from zyx.backend import launch as launch_mod

    x, t = _inputs()
    queue = zyx.default_device().queue
    float(x.sum())
    with launch_mod.recording() as launches:
        x.sum().realize()
    steps = [(ck.cl_kernel, glob, local, args) for ck, glob, local, args, _, _ in launches]
    result = np.empty(1, np.float32)

    def raw() -> float:
        for kernel, glob, local, args in steps:
            kernel.set_args(*args)
            cl.enqueue_nd_range_kernel(queue, kernel, glob, local)
        cl.enqueue_copy(queue, result, steps[-1][3][0], is_blocking=True)
        return float(result[0])

    fns = {"raw": raw, "zyx": lambda: float(x.sum())}
    if t is not None:
        fns["torch"] = lambda: float(t.sum())
    lines = []
    clock = time.perf_counter_ns
    for _ in range(rounds):
        cells = []
        for name, fn in fns.items():
            for _ in range(3):
                fn()
            times = []
            for _ in range(block):
                t0 = clock()
                fn()
                times.append(clock() - t0)
            cells.append(f"{name} {min(times) / 1e6:.3f}/{statistics.median(times) / 1e6:.3f}")
            time.sleep(0.3)
        lines.append("  ".join(cells))
    return lines


# (vector width, accumulators) of the hand-written streaming kernels ``bare`` times
BARE_SHAPES = ((4, 8), (8, 2), (8, 4), (8, 8), (16, 1), (16, 2), (16, 4))
BARE_GROUPS = 256  # work-items, one contiguous 64K-element chunk each (work-groups of one)


def _bare_kernel(ctx: Any, width: int, accs: int, chunk: int) -> Any:
    """A kernel summing each work-item's ``chunk`` elements with ``accs`` vector accumulators of ``width``."""
    import pyopencl as cl

    decl = ", ".join(f"a{i} = 0" for i in range(accs))
    body = " ".join(f"a{i} += v[i + {i}];" for i in range(accs))
    lanes = " + ".join(f"s.s{i:x}" for i in range(width))
    src = f"""__kernel void bare(__global const float *restrict x, __global float *restrict part) {{
    const int g = get_global_id(0);
    __global const float{width} *v = (__global const float{width} *)(x + (long)g * {chunk});
    float{width} {decl};
    for (int i = 0; i < {chunk // width}; i += {accs}) {{ {body} }}
    const float{width} s = {" + ".join(f"a{i}" for i in range(accs))};
    part[g] = {lanes};
}}"""
    return cl.Program(ctx, src).build().bare


def bare(rounds: int = 25, block: int = 5) -> list[str]:
    """Per-round ratios to PyTorch's ``t.sum()`` (2 threads) of zyx's ``x.sum().realize();
    zyx.synchronize()``, of zyx's two recorded launches made straight through pyopencl, and of one
    launch of each ``BARE_SHAPES`` kernel over the same buffer (enqueue + finish): lines of
    ``name best/median us, median ratio (quartiles)``. A round times ``block`` calls of each after a
    20 ms pause; the ratio is of the round's best times."""
    import pyopencl as cl

    from zyx.backend import launch as launch_mod

    x, t = _inputs()
    if t is None:
        return ["PyTorch is not installed: nothing to pair with"]
    device = zyx.default_device()
    queue = device.queue
    float(x.sum())
    with launch_mod.recording() as launches:
        x.sum().realize()
    steps = [(ck.cl_kernel, glob, local, args) for ck, glob, local, args, _, _ in launches]
    source = steps[0][3][1]  # the first stage reads x's buffer
    partials = cl.Buffer(device.context, cl.mem_flags.READ_WRITE, 4 * BARE_GROUPS)

    def two_launches() -> None:
        for kernel, glob, local, args in steps:
            kernel.set_args(*args)
            cl.enqueue_nd_range_kernel(queue, kernel, glob, local)
        queue.finish()

    def one_launch(kernel: Any) -> Any:
        kernel.set_args(source, partials)

        def run() -> None:
            cl.enqueue_nd_range_kernel(queue, kernel, (BARE_GROUPS,), (1,))
            queue.finish()
        return run

    fns: dict[str, Any] = {"zyx": lambda: (x.sum().realize(), zyx.synchronize()), "raw_zyx_2": two_launches}
    for width, accs in BARE_SHAPES:
        fns[f"bare_v{width}x{accs}"] = one_launch(_bare_kernel(device.context, width, accs, (1 << 24) // BARE_GROUPS))
    fns["torch"] = lambda: t.sum()
    clock = time.perf_counter_ns
    times: dict[str, list[float]] = {k: [] for k in fns}
    ratios: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(rounds):
        best = {}
        for name, fn in fns.items():
            time.sleep(0.02)
            fn()
            block_times = []
            for _ in range(block):
                t0 = clock()
                fn()
                block_times.append((clock() - t0) / 1e3)
            best[name] = min(block_times)
            times[name] += block_times
        for name in fns:
            ratios[name].append(best[name] / best["torch"])
    lines = []
    for name in fns:
        q = statistics.quantiles(ratios[name], n=4)
        lines.append(f"{name:12s} {min(times[name]):6.0f}/{statistics.median(times[name]):6.0f} us  "
                     f"ratio {statistics.median(ratios[name]):.3f} ({q[0]:.3f}-{q[2]:.3f})")
    return lines


if __name__ == "__main__":
    if sys.argv[1:2] == ["--bare"]:
        print("paired with PyTorch's t.sum(), per-round best: best/median us, median ratio (quartiles):")
        print("\n".join(bare()))
        sys.exit(0)
    if sys.argv[1:2] == ["--floor"]:
        print("float(x.sum()) per round, best/median ms:")
        print("\n".join(floor()))
        sys.exit(0)
    host, device = phases(int(sys.argv[1]) if len(sys.argv) > 1 else 30)
    print("host phases (best/median us):", host)
    print("device split (best/median us):", device)
