"""Cost calibration of the contract kernels: ``time = overhead + bytes_moved / bandwidth``.

Every contract's cost is ``provenance: judge_measured``: its expressions give the bytes a
call moves, and this module supplies the device-specific constants. ``calibrate`` runs each
kernel on a few sizes of a representative workload, times it with OpenCL profiling events
(median of several runs after a warm-up), fits overhead and bandwidth by least squares,
checks the fit on one held-out size (predicted against measured time) and stores the fits as
JSON per device signature under ``<cache dir>/contracts/``. Once stored,
``cost(contract, device, **symbols)`` reports ``predicted_s`` for that device. A corrupt or stale
file is ignored (as if absent), never fatal.

``workload(device, name, nbytes)`` is also what ``bench/bench_contracts.py`` runs.
"""
from __future__ import annotations

import hashlib
import json
import os
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from zyx import settings
from zyx.backend import errorflags
from zyx.backend.device import Device, default_device, resolve
from zyx.backend.timing import Stopwatch, event_seconds
from zyx.contracts.spec.cost import Cost, Fit
from zyx.contracts.spec.model import Contract
from zyx.contracts.spec.registry import all_contracts, get
from zyx.contracts.spec.symbols import symbols_for
from zyx.dtype import DType, float32, float64
from zyx.kernels import contracts as kernels
from zyx.kernels.contracts.workload import events

FORMAT_VERSION = 1
DEFAULT_SIZES = (1 << 16, 1 << 20, 1 << 23)  # bytes of the data operand, for the fit
QUICK_SIZES = (1 << 14, 1 << 18)
CHECK_SIZE, QUICK_CHECK_SIZE = 3 << 20, 96 << 10  # held out: predicted vs measured


# ---------------------------------------------------------------- workloads


@dataclass
class Workload:
    """One runnable instance of a contract kernel on real device buffers.

    ``run()`` enqueues it and returns its events; ``bytes_moved``/``flops`` come from the
    contract's cost expressions evaluated for ``symbols`` (the call's FKC cost symbols:
    ``outer, dim_size, inner, dtype_size`` ...); ``arrays`` are the host inputs (for
    reference runs) and ``params`` the op params, both keyed as ``bench_contracts.py`` expects.
    """

    name: str
    dtype: DType
    shape: tuple[int, ...]
    describe: str
    symbols: dict[str, int]
    bytes_moved: float
    flops: float
    run: Callable[[], list[Any]]
    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)
    keep: list[Any] = field(default_factory=list, repr=False)  # buffers the launches use


def workload(device: Device, name: str, nbytes: int, dtype: DType | None = None) -> Workload:
    """A workload of contract ``name`` whose data operand holds about ``nbytes`` bytes (the
    calibration case of its kernel module, priced with the contract's cost)."""
    contract = get(name)
    module = kernels.module_for(name)
    dt = dtype or (contract.dtypes[0] if module.FIXED_DTYPE else float32)
    n = max(64, nbytes // dt.itemsize)
    if getattr(module, "CALIBRATION_PER_CONTRACT", False):  # one module, several ops (cummax, cummin)
        case = module.calibration(device, dt, n, name)
    else:
        case = module.calibration(device, dt, n)
    symbols = symbols_for(contract, case.ops, case.params)  # the FKC symbols this contract's cost takes
    c = contract.cost(calibration=Fit(0.0, 1.0), **symbols)
    run = case.run
    return Workload(name, dt, tuple(case.ops[0].shape), case.describe, symbols, c.bytes_moved, c.flops,
                    lambda: events(run()), case.arrays, case.params, case.keep)


def time_workload(device: Device, w: Workload, repeats: int = 5, warmup: int = 1) -> float:
    """Median device seconds of ``w`` (sum of its launches' profiled durations)."""
    for _ in range(warmup):
        w.run()
    device.queue.finish()
    samples = []
    for _ in range(repeats):
        samples.append(event_seconds(w.run()))
    errorflags.check(device)
    return statistics.median(samples)


# ---------------------------------------------------------------- fitting


def fit(points: list[tuple[float, float]]) -> Fit:
    """Least-squares ``seconds = overhead + bytes / bandwidth`` over (bytes, seconds) points."""
    if len(points) == 1:
        b, s = points[0]
        return Fit(0.0, b / s if s > 0 else float("inf"))
    xs = np.array([p[0] for p in points], dtype=np.float64)
    ys = np.array([p[1] for p in points], dtype=np.float64)
    slope, intercept = np.polyfit(xs, ys, 1)
    if slope <= 0:  # timing noise swamped the size: call it all bandwidth at the largest size
        return Fit(0.0, float(xs[-1] / ys[-1]))
    return Fit(max(float(intercept), 0.0), float(1.0 / slope))


# ---------------------------------------------------------------- storage


def _path(device: Device) -> Path:
    tag = settings.heuristics_tag(device)  # forced GPU/CPU heuristics measure other kernel variants
    key = hashlib.sha256(f"{device.info.signature}|{FORMAT_VERSION}{tag}".encode()).hexdigest()[:24]
    return settings.cache_dir() / "contracts" / f"{key}.json"


_loaded: dict[str, tuple[str, dict[str, Any] | None]] = {}  # device id -> (heuristics tag, data)


def load(device: Device | None = None) -> dict[str, Any] | None:
    """The stored calibration of ``device`` (None when absent, corrupt or stale)."""
    dev = resolve(device)
    tag = settings.heuristics_tag(dev)
    got = _loaded.get(dev.id)
    if got is not None and got[0] == tag:
        return got[1]
    data: dict[str, Any] | None = None
    try:
        raw = json.loads(_path(dev).read_text(encoding="utf-8"))
        if (isinstance(raw, dict) and raw.get("format") == FORMAT_VERSION
                and raw.get("signature") == dev.info.signature and isinstance(raw.get("kernels"), dict)):
            data = raw
    except (OSError, ValueError):
        data = None
    _loaded[dev.id] = (tag, data)
    return data


def _store(device: Device, data: dict[str, Any]) -> Path:
    path = _path(device)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=1)
    os.replace(tmp, path)
    _loaded[device.id] = (settings.heuristics_tag(device), data)
    return path


def fit_for(contract: Contract, device: Device | None = None) -> Fit | None:
    """The stored fit of ``contract`` on ``device`` (default device), if calibrated."""
    try:
        data = load(device)
    except Exception:  # noqa: BLE001 - no device or no cache: simply no prediction
        return None
    rec = (data or {}).get("kernels", {}).get(contract.name)
    try:
        return Fit(float(rec["overhead_s"]), float(rec["bytes_per_s"])) if rec else None
    except (KeyError, TypeError, ValueError):
        return None


def calibrate(device: Any = None, quick: bool = False, names: list[str] | None = None,
              repeats: int = 5, log: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Measure every contract kernel on ``device``, fit and store the results; returns them."""
    dev = resolve(device)
    sizes = QUICK_SIZES if quick else DEFAULT_SIZES
    records: dict[str, Any] = {}
    for contract in all_contracts():
        if names is not None and contract.name not in names:
            continue
        fixed = kernels.module_for(contract.name).FIXED_DTYPE
        if fixed and any(d is float64 for d in contract.dtypes) and not dev.info.has_fp64:
            continue
        points = []
        watch = Stopwatch()
        for nbytes in sizes:
            w = workload(dev, contract.name, nbytes)
            seconds = time_workload(dev, w, repeats=3 if quick else repeats)
            points.append((w.bytes_moved, seconds, w.describe, w.symbols))
            del w
        f = fit([(b, s) for b, s, _, _ in points])
        w = workload(dev, contract.name, QUICK_CHECK_SIZE if quick else CHECK_SIZE)
        check_s = time_workload(dev, w, repeats=3 if quick else repeats)
        check = {"bytes_moved": w.bytes_moved, "measured_s": check_s,
                 "predicted_s": f.overhead_s + w.bytes_moved / f.bytes_per_s, "workload": w.describe,
                 "symbols": w.symbols}
        del w
        records[contract.name] = {
            "overhead_s": f.overhead_s,
            "bytes_per_s": f.bytes_per_s,
            "dtype": (contract.dtypes[0] if fixed else float32).name,
            "points": [{"bytes_moved": b, "measured_s": s, "predicted_s": f.overhead_s + b / f.bytes_per_s,
                        "workload": d, "symbols": sym} for b, s, d, sym in points],
            "check": check,
        }
        if log:
            log(f"{contract.name:<22} overhead {f.overhead_s * 1e6:8.1f} us  {f.bytes_per_s / 1e9:7.2f} GB/s  "
                f"held-out {check['workload']}: predicted {check['predicted_s'] * 1e3:.3f} ms, measured "
                f"{check['measured_s'] * 1e3:.3f} ms ({watch.seconds():.1f} s)")
    previous = load(dev) or {}
    kernels_rec = dict(previous.get("kernels", {}))
    kernels_rec.update(records)
    data = {"format": FORMAT_VERSION, "signature": dev.info.signature, "device": str(dev),
            "tunables": kernels.tunables(dev).__dict__, "created": time.time(), "kernels": kernels_rec}
    _store(dev, data)
    return data


def cost(contract: Contract, device: Device | None = None, **symbols: Any) -> Cost:
    """``contract.cost(**symbols)`` with ``predicted_s`` from the stored fit of ``device``
    (default device); ``predicted_s`` is None when that device is not calibrated."""
    return contract.cost(fit_for(contract, device), **symbols)


def main() -> None:
    """``python -m zyx.contracts.calibrate [--quick]``: calibrate the default device."""
    import sys

    quick = "--quick" in sys.argv[1:]
    dev = default_device()
    print(f"calibrating contract kernels on {dev}")
    calibrate(dev, quick=quick, log=print)
    print(f"stored in {_path(dev)}")


if __name__ == "__main__":
    main()
