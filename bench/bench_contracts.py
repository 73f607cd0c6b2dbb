"""Benchmark of the contract kernels against NumPy, PyTorch CPU and pyopencl.

Each kernel runs a representative workload (``zyx.contracts.calibrate.workload``) at
64 MiB of data (and one small size); the same operation runs in NumPy, in PyTorch on the
CPU (2 threads; skipped if torch is absent) and, where pyopencl has a ready tool
(``pyopencl.scan`` for cumsum, ``pyopencl.array.concatenate``, array select and slice
assignment), in pyopencl on the same device. Device times come from OpenCL profiling
events, host times from the wall clock (both through ``zyx.backend.timing``); each is the median of several runs after a
warm-up. GB/s count bytes read + written (the contract's ``bytes_moved``), and "% copy" is
the ratio to the device's copy ceiling at the same size, measured in alternating rounds with
the row's kernel (the median of each over ``ROUNDS`` rounds): the fastest of ``enqueue_copy``,
the vectorized copy kernels of ``zyx.benchmarks`` and a copy kernel with non-temporal
(streamed) stores, the technique the byte kernels use on large outputs on CPUs (so the ratio
never credits them for it).

cumsum runs flat (the calibration workload) and along each axis of a 2-D tensor
(``cumsum_f32 axis=-1`` / ``axis=0`` rows: rows of a square-ish matrix of the same bytes),
and ``cumsum_f32`` also along the last axis of (1024, 4096) (many rows, each a few blocks
long). The other scans (cumprod, cummax, cummin, logcumsumexp, integer cumsum) run flat;
NumPy's cummax/cummin rows are ``maximum/minimum.accumulate`` (values only, no indices).

    python bench/bench_contracts.py [--quick] [--only NAME[,NAME...]]

(run as a script it first prints ``zyx.benchmarks.bench_header()``: NumPy without the
OpenBLAS pins, and its kernel)

``run(quick) -> list[dict]`` is the entry point ``bench/run.py`` uses.
"""
from __future__ import annotations

import statistics
import sys
from pathlib import Path
from typing import Any, Callable

import numpy as np

try:
    import zyx
except ImportError:  # run from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    import zyx

from zyx.backend import errorflags, transfer
from zyx.backend.timing import median_wall_seconds, span_seconds
from zyx.benchmarks import bench_header
from zyx.benchmarks import copy_ceiling as kernel_copy_ceiling
from zyx.contracts import calibrate
from zyx.kernels import contracts as kernels
from zyx.kernels.contracts import workload

MIB = 1 << 20
KERNELS = ("contiguize", "flip", "roll", "concat", "write_slice", "write_slice_rotating", "write_slice_doff",
           "triangular", "masked_fill", "cumsum_f32", "cumsum_f64", "cumsum_bf16", "cumsum_f16", "cumsum_int",
           "cumprod_f32", "cumprod_f64", "cumprod_int", "cummax", "cummin", "logcumsumexp_f32", "logcumsumexp_f64")
CUMSUM_ROWS = (1024, 4096)  # an extra cumsum_f32 axis=-1 row: many rows of a few scan blocks each
CUMSUM_AXES = (None, -1, 0)  # flat, last axis of a 2-D tensor, axis 0
ROUNDS = 5  # alternating rounds of (copy ceiling, kernel) per row


def _median_markers(queue: Any, fn: Callable[[], Any], repeats: int) -> float:
    """Device time of everything ``fn`` enqueues, between two profiling markers."""
    import pyopencl as cl

    fn()
    queue.finish()
    samples = []
    for _ in range(repeats):
        before = cl.enqueue_marker(queue)
        fn()
        samples.append(span_seconds(before, cl.enqueue_marker(queue)))
    return statistics.median(samples)


def copy_ceiling(device: zyx.Device, nbytes: int, repeats: int) -> float:
    """Bytes per second (read + written) of the fastest device copy of ``nbytes``: the best of
    ``enqueue_copy`` and the ``zyx.benchmarks`` copy kernels, plain and streamed."""
    return max(r["GB/s"] for r in kernel_copy_ceiling(device, nbytes, runs=repeats)) * 1e9


def cumsum_workload(device: zyx.Device, name: str, nbytes: int, axis: int,
                    shape: tuple[int, int] | None = None) -> calibrate.Workload:
    """``name``'s cumsum along ``axis`` (-1 or 0) of a 2-D tensor of about ``nbytes`` bytes (or of ``shape``)."""
    w = calibrate.workload(device, name, 64)  # the contract's dtype and cost model
    dt = w.dtype
    n = max(64, nbytes // dt.itemsize)
    rows, cols = shape or workload.square(n)
    x = workload.data((rows, cols), dt)
    src, out = transfer.upload(device, x), device.pool.allocate(x.nbytes)
    outer, dim, inner = (rows, cols, 1) if axis == -1 else (1, rows, cols)
    symbols = {"outer": outer, "dim_size": dim, "inner": inner, "dtype_size": dt.itemsize}
    cost = zyx.contracts.get(name).cost(**symbols)

    def run() -> list[Any]:
        return kernels.cumsum(device, out, src, dt, outer, dim, inner)
    return calibrate.Workload(name, dt, (rows, cols), f"cumsum ({rows}, {cols}) {dt.name} axis={axis}", symbols,
                              cost.bytes_moved, cost.flops, run, {"x": x}, {"dim": axis % 2}, [src, out])


# ---------------------------------------------------------------- reference implementations


def numpy_op(w: calibrate.Workload) -> Callable[[], Any]:
    """The workload's operation in NumPy (16-bit floats summed in float32, as zyx does)."""
    a, p = w.arrays, w.params
    name = w.name
    if name == "contiguize":
        return lambda: np.ascontiguousarray(a["x"].T)
    if name == "flip":
        return lambda: np.ascontiguousarray(np.flip(a["x"], p["dims"]))
    if name == "roll":
        return lambda: np.roll(a["x"], p["shift"], 0)
    if name == "concat":
        return lambda: np.concatenate([a["a"], a["b"]], p["dim"])
    if name in ("write_slice", "write_slice_doff"):
        start = p["ranges"][0][0] if name == "write_slice" else p["offset"]
        rows = a["x"].shape[0]

        def write() -> None:
            a["dest"][start:start + rows] = a["x"]
        return write
    if name == "write_slice_rotating":
        rows, m, pos = a["x"].shape[0], p["modulus"], p["position"] % p["modulus"]
        first = min(rows, m - pos)

        def ring() -> None:
            a["dest"][pos:pos + first] = a["x"][:first]
            a["dest"][:rows - first] = a["x"][first:]
        return ring
    if name == "triangular":
        return lambda: np.tril(a["x"])
    if name == "masked_fill":
        fill = np.array(p["fill"], dtype=a["x"].dtype)
        return lambda: np.where(a["mask"], fill, a["x"])
    if name in ("cumsum_int", "cumprod_int"):
        return lambda: getattr(np, name[:-4])(a["x"], p["dim"], dtype=np.int64)
    if name.startswith(("cumprod", "logcumsumexp")):
        x = a["x"].astype(np.float32) if a["x"].dtype.itemsize == 2 else a["x"]
        fn = np.cumprod if name.startswith("cumprod") else np.logaddexp.accumulate
        return lambda: fn(x, p["dim"])
    if name in ("cummax", "cummin"):
        ufunc = np.maximum if name == "cummax" else np.minimum
        return lambda: ufunc.accumulate(a["x"], p["dim"])
    if name.startswith("cumsum"):
        x = a["x"]
        axis = p["dim"]
        if x.dtype.itemsize == 2:
            def widened() -> Any:
                with np.errstate(over="ignore"):  # float16 sums of 32M values overflow, as in zyx
                    return np.cumsum(x.astype(np.float32), axis).astype(x.dtype)
            return widened
        return lambda: np.cumsum(x, axis)
    raise KeyError(name)


def torch_op(torch: Any, w: calibrate.Workload) -> Callable[[], Any] | None:
    """The workload's operation in PyTorch on the CPU."""
    def tt(x: np.ndarray) -> Any:
        if x.dtype.name == "bfloat16":
            return torch.from_numpy(x.astype(np.float32)).to(torch.bfloat16)
        return torch.from_numpy(np.ascontiguousarray(x))

    a, p, name = w.arrays, w.params, w.name
    if name == "contiguize":
        x = tt(a["x"])
        return lambda: x.T.contiguous()
    if name == "flip":
        x = tt(a["x"])
        return lambda: torch.flip(x, p["dims"])
    if name == "roll":
        x = tt(a["x"])
        return lambda: torch.roll(x, p["shift"], 0)
    if name == "concat":
        ta, tb = tt(a["a"]), tt(a["b"])
        return lambda: torch.cat([ta, tb], p["dim"])
    if name.startswith("write_slice"):
        x, dest = tt(a["x"]), tt(a["dest"].copy())
        rows = x.shape[0]
        if name == "write_slice_rotating":
            m, pos = p["modulus"], p["position"] % p["modulus"]
            first = min(rows, m - pos)

            def ring() -> None:
                dest[pos:pos + first].copy_(x[:first])
                dest[:rows - first].copy_(x[first:])
            return ring
        start = p["ranges"][0][0] if name == "write_slice" else p["offset"]
        return lambda: dest[start:start + rows].copy_(x)
    if name == "triangular":
        x = tt(a["x"])
        return lambda: torch.tril(x)
    if name == "masked_fill":
        x, mask = tt(a["x"]), torch.from_numpy(a["mask"])
        return lambda: x.masked_fill(mask, p["fill"])
    if name.startswith(("cumsum", "cumprod", "cummax", "cummin", "logcumsumexp")):
        x = tt(a["x"])
        fn = getattr(torch, name.split("_")[0])
        return lambda: fn(x, p["dim"])
    return None


def pyopencl_op(device: zyx.Device, w: calibrate.Workload) -> Callable[[], Any] | None:
    """The workload's operation with a ready pyopencl tool on the same device, if one exists."""
    import pyopencl.array as cla

    q, a, p, name = device.queue, w.arrays, w.params, w.name
    if name == "concat":
        da, db = cla.to_device(q, a["a"]), cla.to_device(q, a["b"])
        return lambda: cla.concatenate([da, db], axis=p["dim"], queue=q)
    if name == "masked_fill":
        x = cla.to_device(q, a["x"])
        mask = cla.to_device(q, a["mask"].astype(np.int8))
        fill = cla.empty_like(x).fill(p["fill"])
        return lambda: cla.if_positive(mask, fill, x, queue=q)
    if name in ("write_slice", "write_slice_doff"):
        x, dest = cla.to_device(q, a["x"]), cla.to_device(q, a["dest"])
        start = p["ranges"][0][0] if name == "write_slice" else p["offset"]
        rows = a["x"].shape[0]

        def write() -> None:
            dest[start:start + rows] = x
        return write
    if name in ("cumsum_f32", "cumsum_f64") and w.arrays["x"].ndim == 1:
        from pyopencl.scan import InclusiveScanKernel

        x = cla.to_device(q, a["x"])
        knl = InclusiveScanKernel(device.context, a["x"].dtype, "a+b", neutral="0")
        return lambda: knl(x.copy(queue=q), queue=q)
    return None


# ---------------------------------------------------------------- the run


def _gbs(nbytes: float, seconds: float | None) -> float | None:
    return nbytes / seconds / 1e9 if seconds else None


def run(quick: bool = False, only: tuple[str, ...] | None = None) -> list[dict]:
    """Benchmark every contract kernel (or those in ``only``); one row per (kernel, size, axis)."""
    device = zyx.default_device()
    repeats = 3 if quick else 5
    sizes = (64 * 1024, 8 * MIB) if quick else (64 * 1024, 64 * MIB)
    try:
        import torch
        torch.set_num_threads(2)
    except ImportError:
        torch = None
    rows: list[dict] = []
    floats = ("cumsum_f32", "cumsum_f64", "cumsum_bf16", "cumsum_f16")
    runs: list[tuple[str, int, int | None, tuple[int, int] | None]] = [
        (name, nbytes, axis, None) for name in KERNELS if only is None or name in only
        for axis in (CUMSUM_AXES if name in floats else (None,)) for nbytes in sizes]
    if only is None or "cumsum_f32" in only:
        runs.append(("cumsum_f32", CUMSUM_ROWS[0] * CUMSUM_ROWS[1] * 4, -1, CUMSUM_ROWS))
    for name, nbytes, axis, shape in runs:
        if name.endswith("_f64") and not device.info.has_fp64:
            continue
        if axis is None:
            w = calibrate.workload(device, name, nbytes)
        else:
            w = cumsum_workload(device, name, nbytes, axis, shape)
        # the ceiling and the kernel in alternating rounds (median of each): the VM's bandwidth drifts
        # over seconds, and the ratio should compare them in the same machine state
        ceilings, times = [], []
        for _ in range(ROUNDS):
            ceilings.append(copy_ceiling(device, nbytes, repeats))
            times.append(calibrate.time_workload(device, w, repeats=repeats))
        ceiling, zyx_s = statistics.median(ceilings), statistics.median(times)
        row = {"kernel": name if axis is None else f"{name} axis={axis}", "workload": w.describe, "bytes": nbytes,
               "bytes_moved": w.bytes_moved, "zyx_ms": zyx_s * 1e3, "zyx_gbs": _gbs(w.bytes_moved, zyx_s),
               "copy_ceiling_gbs": ceiling / 1e9, "copy_ratio": (w.bytes_moved / zyx_s) / ceiling}
        row["numpy_ms"] = median_wall_seconds(numpy_op(w), warmup=1, runs=repeats) * 1e3
        row["numpy_gbs"] = _gbs(w.bytes_moved, row["numpy_ms"] / 1e3)
        t_op = torch_op(torch, w) if torch is not None else None
        row["torch_ms"] = median_wall_seconds(t_op, warmup=1, runs=repeats) * 1e3 if t_op else None
        row["torch_gbs"] = _gbs(w.bytes_moved, row["torch_ms"] / 1e3) if t_op else None
        p_op = pyopencl_op(device, w)
        try:
            p_s = _median_markers(device.queue, p_op, repeats) if p_op else None
        except NotImplementedError:  # e.g. pyopencl cannot concatenate along a strided axis
            p_s = None
        row["pyopencl_ms"] = p_s * 1e3 if p_s else None
        row["pyopencl_gbs"] = _gbs(w.bytes_moved, p_s)
        rows.append(row)
        del w
    errorflags.check(device)
    return rows


def _fmt(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def table(rows: list[dict]) -> str:
    """The rows as a markdown table."""
    out = ["| kernel | workload | data | zyx ms | zyx GB/s | ceiling GB/s | % copy | NumPy GB/s | torch GB/s | "
           "pyopencl GB/s |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        size = f"{r['bytes'] // MIB} MiB" if r["bytes"] >= MIB else f"{r['bytes'] // 1024} KiB"
        out.append(f"| {r['kernel']} | {r['workload']} | {size} | {_fmt(r['zyx_ms'], 3)} | {_fmt(r['zyx_gbs'])} | "
                   f"{_fmt(r['copy_ceiling_gbs'])} | {r['copy_ratio'] * 100:.0f}% | {_fmt(r['numpy_gbs'])} | "
                   f"{_fmt(r['torch_gbs'])} | {_fmt(r['pyopencl_gbs'])} |")
    return "\n".join(out)


def main() -> None:
    args = sys.argv[1:]
    if "-h" in args or "--help" in args:
        print(__doc__)
        return
    quick = "--quick" in args
    only = tuple(args[args.index("--only") + 1].split(",")) if "--only" in args else None
    print(bench_header())
    device = zyx.default_device()
    rows = run(quick, only)
    print(f"# contract kernels on {device}{' (quick)' if quick else ''}")
    print("ceiling: best of enqueue_copy, copy kernels, streamed copy kernel (read + written), per row")
    print()
    print(table(rows))


if __name__ == "__main__":
    main()
