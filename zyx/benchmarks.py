"""The foundation's benchmarks (copy ceiling, host<->device).

Device work is timed with ``backend.timing`` (OpenCL profiling events: warm-up runs, then
the median of several timed runs). Bandwidth counts bytes read plus bytes written.

Every bench entry point starts with ``bench_header()``: NumPy is compared at its real
speed, without the OpenBLAS pins (``BLAS_PINS``) some machines set, and the header says
which OpenBLAS kernel ran.
"""
from __future__ import annotations

import functools
import json
import os
import sys
from typing import Any

import numpy as np

from zyx.backend import transfer
from zyx.backend.device import Device
from zyx.backend.launch import compile_kernel, launch
from zyx.backend.timing import median_event_seconds
from zyx.codegen.render import render


def row(name: str, nbytes: int, seconds: float, ceiling_gbps: float | None = None, **extra: Any) -> dict:
    """A benchmark result row: GB/s from bytes moved (read + written) and time."""
    gbps = nbytes / seconds / 1e9 if seconds > 0 else float("inf")
    out = {"name": name, "bytes": nbytes, "ms": seconds * 1e3, "GB/s": gbps}
    if ceiling_gbps:
        out["x ceiling"] = gbps / ceiling_gbps
    out.update(extra)
    return out


def copy_ceiling(device: Device, nbytes: int = 64 << 20, runs: int = 7) -> list[dict]:
    """Buffer-to-buffer ``enqueue_copy`` and vectorized copy kernels (plain and with streamed, non-temporal
    stores, as zyx's large-output kernels use on CPUs), in GB/s (read + write). The ceiling is the best row."""
    import pyopencl as cl

    nbytes = -(-nbytes // 32) * 32
    src = transfer.upload(device, np.random.default_rng(0).integers(0, 255, nbytes, dtype=np.uint8))
    dst = device.pool.allocate(nbytes)
    t_copy = median_event_seconds(
        lambda: cl.enqueue_copy(device.queue, dst.cl, src.cl, byte_count=nbytes), runs=runs)
    ceiling = 2 * nbytes / t_copy / 1e9
    rows = [row("enqueue_copy buffer->buffer", 2 * nbytes, t_copy, ceiling)]
    for word, vec, stream in (("uint4", 1, False), ("uint4", 4, False), ("uint8", 1, True)):
        width = 16 if word == "uint4" else 32
        words = nbytes // width
        name = f"zyx_vcopy_{word}x{vec}{'_stream' if stream else ''}"
        local = min(256, device.info.max_work_group_size)
        source = render("vcopy.cl.mako", name=name, n_words=words, vec=vec, word=word, stream=stream, group=local)
        kernel = compile_kernel(device, source, name)
        glob = -(-words // (vec * local)) * local
        cl.enqueue_fill_buffer(device.queue, dst.cl, np.uint8(0x5A), 0, nbytes)  # poisoned, and real pages
        t = median_event_seconds(functools.partial(launch, kernel, (glob,), (local,), [dst.cl, src.cl]), runs=runs)
        rows.append(row(f"copy kernel ({word} x{vec} per item{', streamed stores' if stream else ''})",
                        2 * words * width, t, ceiling))
        if not np.array_equal(transfer.read(dst, words * width), transfer.read(src, words * width)):
            raise RuntimeError(f"{name} produced wrong bytes")
    return rows


def host_transfer(device: Device, nbytes: int = 64 << 20, runs: int = 5) -> list[dict]:
    """Host->device and device->host bandwidth of blocking copies (bytes counted once each way)."""
    import pyopencl as cl

    host = np.random.default_rng(1).integers(0, 255, nbytes, dtype=np.uint8)
    back = np.empty_like(host)
    buf = device.pool.allocate(nbytes)
    t_h2d = median_event_seconds(lambda: cl.enqueue_copy(device.queue, buf.cl, host), runs=runs)
    t_d2h = median_event_seconds(lambda: cl.enqueue_copy(device.queue, back, buf.cl), runs=runs)
    if not np.array_equal(host, back):
        raise RuntimeError("host round trip produced wrong bytes")
    return [row("host -> device", nbytes, t_h2d), row("device -> host", nbytes, t_d2h)]


def foundation(device: Device, quick: bool = False) -> list[dict]:
    """The foundation's benchmark rows: copy ceiling and host<->device bandwidth."""
    size = (8 << 20) if quick else (64 << 20)
    return copy_ceiling(device, size) + host_transfer(device, size)


def markdown_table(rows: list[dict], floats: str | None = None, titles: dict[str, str] | None = None) -> str:
    """Render result rows as a markdown table (columns: union of keys, in first-seen order).

    ``floats``: a format spec for every float cell (``""``: as Python prints it; default: 3
    significant digits); ``titles``: column headers for some keys (default: the key)."""
    if not rows:
        return "(no rows)"
    cols: list[str] = []
    for r in rows:
        cols.extend(k for k in r if k not in cols)

    def fmt(v: Any) -> str:
        if isinstance(v, float):
            if floats is not None:
                return format(v, floats)
            return f"{v:.3g}" if abs(v) < 1000 else f"{v:.0f}"
        if isinstance(v, int) and v >= 1 << 20:
            return f"{v / (1 << 20):.0f} MiB"
        return "" if v is None else str(v)

    names = [(titles or {}).get(c, c) for c in cols]
    lines = ["| " + " | ".join(names) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(fmt(r.get(c)) for c in cols) + " |" for r in rows]
    return "\n".join(lines)


# ---------------------------------------------------------------- NumPy's BLAS at its real speed

#: Variables that hold OpenBLAS below the CPU it runs on: a VM kind sets
#: OPENBLAS_CORETYPE=Haswell (AVX2 kernels on AVX-512 hosts) and OPENBLAS_L2_SIZE, which
#: slows NumPy's matmul ~2x. OpenBLAS reads them when it is loaded (with NumPy).
BLAS_PINS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
_HANDOFF = "_ZYX_BENCH_BLAS_DROPPED"  # tells the re-executed bench process what it dropped
_dropped: dict[str, str] | None = None


def unpin_blas() -> dict[str, str]:
    """Drop ``BLAS_PINS`` from this bench process; returns what was dropped (name -> value).

    OpenBLAS has read them once NumPy is imported, so when one is set the process
    re-executes itself (same interpreter and command line) without them; this call never
    returns then, and the new process's call returns what the first one dropped. Only bench
    entry points call it: tests and CI keep the environment they are given.
    """
    global _dropped
    if _dropped is None:
        handoff = os.environ.pop(_HANDOFF, None)
        _dropped = dict(json.loads(handoff)) if handoff else {}
        pinned = {k: os.environ[k] for k in BLAS_PINS if k in os.environ}
        if pinned and not handoff:  # (a second exec would loop if something re-sets them at start-up)
            env = {k: v for k, v in os.environ.items() if k not in BLAS_PINS}
            env[_HANDOFF] = json.dumps(pinned)
            sys.stdout.flush()
            sys.stderr.flush()
            os.execve(sys.executable, [sys.executable, *sys.orig_argv[1:]], env)
    return dict(_dropped)


def blas_info() -> list[dict[str, Any]]:
    """threadpoolctl's record of each BLAS loaded in this process (``internal_api``,
    ``version``, ``architecture``, ``num_threads``, ...); [] without threadpoolctl."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return []
    return [i for i in threadpool_info() if i.get("user_api") == "blas"]


def bench_header() -> str:
    """Unpin NumPy's BLAS (``unpin_blas``, may re-execute the process) and describe it: which
    OpenBLAS kernel runs, and whether ``BLAS_PINS`` were dropped."""
    dropped = unpin_blas()
    infos = blas_info()
    lines = [f"NumPy BLAS: {i.get('internal_api')} {i.get('version')}, {i.get('architecture')} kernel, "
             f"{i.get('num_threads')} threads" for i in infos]
    if not infos:
        lines.append("NumPy BLAS: kernel unknown (install threadpoolctl to see it)")
    pins = ", ".join(f"{k}={v}" for k, v in dropped.items())
    lines.append(f"{pins} dropped for this bench process" if dropped else
                 f"{' and '.join(BLAS_PINS)}: not set")
    still = [k for k in BLAS_PINS if k in os.environ]
    if still:
        lines.append(f"{', '.join(still)} still set: NumPy runs pinned")
    return "\n".join([machine_line(), *lines])


def machine_line() -> str:
    """When and where the numbers were taken: UTC time, CPU model, cores, and the load average (a
    loaded machine slows every row, so a table says what else ran)."""
    import datetime
    import platform

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            cpu = next((line.split(":", 1)[1].strip() for line in info if line.startswith("model name")), cpu)
    except OSError:
        pass
    load = ", ".join(f"{v:.2f}" for v in os.getloadavg()) if hasattr(os, "getloadavg") else "unknown"
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return f"{now}; {cpu}, {os.cpu_count()} cores; load average {load}"


def synced(make: Any) -> Any:
    """A benchmark call of ``make``: realize its result and wait for the device (zyx is lazy)."""
    from zyx.runtime import synchronize

    def call() -> Any:
        y = make().realize()
        synchronize()
        return y

    return call


def versus_torch(op: str, size: str, times: dict[str, tuple[float, float]], digits: int = 3) -> list[dict]:
    """Table rows of one same-run comparison (``timing.alternating``'s best/median seconds per
    implementation); zyx implementations also get PyTorch's best and median over theirs."""
    rows = []
    for impl, (best, med) in times.items():
        row = {"op": op, "impl": impl, "size": size, "ms": round(best * 1e3, digits),
               "median_ms": round(med * 1e3, digits)}
        if impl.startswith("zyx"):
            row["x_torch"] = round(times["torch"][0] / best, 2)
            row["x_torch_median"] = round(times["torch"][1] / med, 2)
        rows.append(row)
    return rows
