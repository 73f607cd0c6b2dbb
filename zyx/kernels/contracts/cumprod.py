"""cumprod: running product along the middle axis of (outer, dim_size, inner), the scan of
``scan.py`` with ``*`` (accumulated as cumsum accumulates: float32, float64 or int64)."""
from __future__ import annotations

from typing import Any

import numpy as np

from zyx.backend.device import Device
from zyx.backend.pool import Buffer
from zyx.contracts.spec.model import Operand
from zyx.dtype import DType
from zyx.kernels.contracts.common import SCAN_TUNABLES, Tunables, template, tunables
from zyx.kernels.contracts.cumsum import accumulator, result_dtype
from zyx.kernels.contracts.scan import scan
from zyx.kernels.contracts.tuning import tuned
from zyx.kernels.contracts.workload import Case, alloc, upload

CONTRACTS = ("cumprod_f32", "cumprod_f64", "cumprod_int")
DECLARED = SCAN_TUNABLES
FIXED_DTYPE = True  # one contract per accumulator: each calibrated on its first dtype


@tuned("cumprod", DECLARED, tunables)
def cumprod(device: Device, out: Buffer, src: Buffer, dtype: DType, outer: int, dim_size: int, inner: int,
            tun: Tunables | None = None) -> list[Any]:
    """Inclusive running product of dense ``src`` (outer, dim_size, inner) along the middle axis
    (bool and integers into int64, wrapping as PyTorch). Returns the events of every launch."""
    return scan(device, "cumprod", template(CONTRACTS[0]), out, None, src, dtype, result_dtype(dtype),
                accumulator(dtype), "cumprod", outer, dim_size, inner, tun or tunables(device))


def calibration(device: Device, dt: DType, n: int) -> Case:
    """A flat running product of ``n`` values near 1 (so it neither overflows nor vanishes)."""
    x = _near_one((n,), dt)
    src, out = upload(device, x), alloc(device, n, result_dtype(dt))
    return Case(f"cumprod ({n},) {dt.name}", lambda: cumprod(device, out, src, dt, 1, n, 1), [Operand(dt, (n,))],
                {"dim": 0}, {"x": x}, [src, out])


def _near_one(shape: tuple[int, ...], dt: DType) -> np.ndarray:
    rng = np.random.default_rng(0)
    if dt.is_float:
        return (1.0 + (rng.random(shape) - 0.5) * 1e-3).astype(dt.numpy)
    return rng.integers(0, 2, size=shape).astype(dt.numpy) if dt.is_bool else np.ones(shape, dt.numpy)


def tune_op(zyx: Any, x: Any, rows: int) -> None:
    """What ``zyx tune`` runs for this kernel on a (rows, 4096) float32 tensor ``x``."""
    x.cumprod(1).realize()
