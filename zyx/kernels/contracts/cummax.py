"""cummax / cummin: the running maximum or minimum along the middle axis of (outer,
dim_size, inner) and the int64 index where it was taken, the indexed scan of ``scan.py``
(ties give the last index, NaN wins: PyTorch's rules)."""
from __future__ import annotations

from typing import Any

from zyx.backend.device import Device
from zyx.backend.pool import Buffer
from zyx.contracts.spec.model import Operand
from zyx.dtype import DType, float32, int64
from zyx.kernels.contracts.common import SCAN_TUNABLES, Tunables, template, tunables
from zyx.kernels.contracts.scan import scan
from zyx.kernels.contracts.tuning import tuned
from zyx.kernels.contracts.workload import Case, alloc, data, upload

CONTRACTS = ("cummax", "cummin")
DECLARED = SCAN_TUNABLES
FIXED_DTYPE = False  # comparisons only: calibrated on float32
CALIBRATION_PER_CONTRACT = True  # calibration(device, dt, n, contract): cummax and cummin each timed


def compare_dtype(dtype: DType) -> DType:
    """The dtype values are compared (and block totals kept) in: float32 for the 16-bit floats
    (exact), else ``dtype`` itself."""
    return float32 if dtype.is_float and dtype.itemsize < 4 else dtype


def _extremum(device: Device, op: str, out: Buffer, out_idx: Buffer, src: Buffer, dtype: DType, outer: int,
              dim_size: int, inner: int, tun: Tunables | None) -> list[Any]:
    return scan(device, op, template(CONTRACTS[0]), out, out_idx, src, dtype, dtype, compare_dtype(dtype), op[3:],
                outer, dim_size, inner, tun or tunables(device))


@tuned("cummax", DECLARED, tunables)
def cummax(device: Device, out: Buffer, out_idx: Buffer, src: Buffer, dtype: DType, outer: int, dim_size: int,
           inner: int, tun: Tunables | None = None) -> list[Any]:
    """Running maximum of dense ``src`` (outer, dim_size, inner) along the middle axis into ``out``
    and its int64 index into ``out_idx``. Returns the events of every launch."""
    return _extremum(device, "cummax", out, out_idx, src, dtype, outer, dim_size, inner, tun)


@tuned("cummin", DECLARED, tunables)
def cummin(device: Device, out: Buffer, out_idx: Buffer, src: Buffer, dtype: DType, outer: int, dim_size: int,
           inner: int, tun: Tunables | None = None) -> list[Any]:
    """Running minimum of dense ``src`` (outer, dim_size, inner) along the middle axis into ``out``
    and its int64 index into ``out_idx``. Returns the events of every launch."""
    return _extremum(device, "cummin", out, out_idx, src, dtype, outer, dim_size, inner, tun)


def calibration(device: Device, dt: DType, n: int, op: str = "cummax") -> Case:  # op: the contract name
    """A flat running maximum (or minimum) of ``n`` elements."""
    x = data((n,), dt)
    src, out, idx = upload(device, x), alloc(device, n, dt), alloc(device, n, int64)
    fn = cummax if op == "cummax" else cummin
    return Case(f"{op} ({n},) {dt.name}", lambda: fn(device, out, idx, src, dt, 1, n, 1), [Operand(dt, (n,))],
                {"dim": 0}, {"x": x}, [src, out, idx])


def tune_op(zyx: Any, x: Any, rows: int) -> None:
    """What ``zyx tune`` runs for this kernel on a (rows, 4096) float32 tensor ``x``."""
    x.cummax(1)[0].realize()
    x.cummin(1)[0].realize()
