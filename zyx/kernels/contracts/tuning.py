"""Tuning the contract kernels' declared tunables with the shared autotuner (``zyx.opt``).

``tuned(name)`` decorates a launch function of a contract kernel module (signature
``(device, out, ..., tun=None)``). With ``ZYX_TUNE=0``, or when a caller passes ``tun``,
the call goes straight through. Otherwise the tunables the contract declares are chosen
by ``zyx.opt.tuner.choose``: from the database, or by a search in which each candidate runs
on a scratch copy of the output buffer (in-place kernels never touch the real
destination while being measured), is timed with ``backend.launch.trial_seconds``, and must produce
the same bytes as the device defaults before it may win.
"""
from __future__ import annotations

import functools
import inspect
from dataclasses import asdict, replace
from typing import Any, Callable

import numpy as np

from zyx import settings
from zyx.backend import transfer
from zyx.backend.launch import trial_seconds
from zyx.dtype import DType
from zyx.opt.search import Param, Space
from zyx.opt.tuner import choose

#: Candidate values of each tunable (filtered by the device's work-group limit).
CANDIDATES: dict[str, tuple[int, ...]] = {
    "local_size": (32, 64, 128, 256, 512),
    "per_item": (1, 2, 4, 8, 16),
    "vector_bytes": (4, 8, 16, 32),
    "scan_local": (4, 16, 32, 64, 128, 256),
    "scan_items": (4, 8, 16, 32, 64, 256),
    "scan_lanes_min": (16, 64, 256, 1024, 4096),
}


#: Kernels whose float rounding depends on the scan's block shape: candidates need only agree closely.
FLOAT_SCANS = ("cumsum", "cumprod", "logcumsumexp")


def _space(declared: tuple[str, ...], max_wg: int) -> Space:
    params = []
    for name in declared:
        values = CANDIDATES[name]
        if name in ("local_size", "scan_local"):
            values = tuple(v for v in values if v <= max_wg) or (1,)
        params.append(Param(name, values))
    return Space(tuple(params))


def _signature_token(value: Any) -> str:
    """What of an argument enters the kernel key: dtypes and ranks, never sizes or values."""
    if isinstance(value, DType):
        return value.name
    if isinstance(value, (tuple, list)):
        return f"rank{len(value)}"
    if isinstance(value, bool):
        return str(value)
    return type(value).__name__


def _same_bytes_or_close(dtype: DType | None) -> Callable[[np.ndarray, np.ndarray], bool]:
    if dtype is None or not dtype.is_float:
        return lambda a, b: bool(np.array_equal(a, b))

    def close(a: np.ndarray, b: np.ndarray) -> bool:  # a scan's rounding depends on its block shape
        x = a.view(dtype.numpy).astype(np.float64)
        y = b.view(dtype.numpy).astype(np.float64)
        return bool(np.allclose(x, y, rtol=1e-3, atol=1e-6, equal_nan=True))

    return close


def _read_output(buf: Any, nbytes: int) -> np.ndarray:
    """A candidate's output bytes (a seam for tests that inject wrong candidates)."""
    return transfer.read(buf, nbytes)


def tuned(name: str, declared: tuple[str, ...], defaults: Callable[[Any], Any]) -> Callable:
    """Decorate a contract launch function so its tunables come from the autotuner."""

    def wrap(fn: Callable) -> Callable:
        sig = inspect.signature(fn)

        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            if settings.TUNE <= 0:
                return fn(*args, **kwargs)
            bound = sig.bind(*args, **kwargs)
            if bound.arguments.get("tun") is not None:
                return fn(*args, **kwargs)
            device, out = bound.arguments["device"], bound.arguments.get("out", bound.arguments.get("dest"))
            if out is None or out.nbytes == 0:
                return fn(*args, **kwargs)
            base = defaults(device)
            rest = [v for k, v in bound.arguments.items() if k not in ("device", "out", "dest", "src", "tun")]
            key = f"contract:{name}:" + ",".join(_signature_token(v) for v in rest)
            dtype = next((v for v in rest if isinstance(v, DType)), None)
            out_key = "out" if "out" in bound.arguments else "dest"

            def measure(cfg: dict[str, Any]) -> tuple[float, np.ndarray]:
                scratch = device.pool.allocate(out.nbytes)
                transfer.copy_buffer(out, scratch, out.nbytes)
                trial = sig.bind(*bound.args, **bound.kwargs)
                trial.arguments[out_key] = scratch
                trial.arguments["tun"] = replace(base, **cfg)
                return trial_seconds(lambda: fn(*trial.args, **trial.kwargs)), _read_output(scratch, out.nbytes)

            default_cfg = {k: v for k, v in asdict(base).items() if k in declared}
            cfg = choose(device, key, (out.nbytes,), _space(declared, device.info.max_work_group_size),
                         default_cfg, measure, _same_bytes_or_close(dtype if name in FLOAT_SCANS else None),
                         label=f"{name} ({out.nbytes >> 20} MiB)" if out.nbytes >= 1 << 20 else name)
            bound.arguments["tun"] = replace(base, **cfg)
            return fn(*bound.args, **bound.kwargs)

        return call

    return wrap
