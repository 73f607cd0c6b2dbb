"""logcumsumexp: log(cumsum(exp(x))) along the middle axis of (outer, dim_size, inner),
the scan of ``scan.py`` with log-add-exp (16-bit floats folded in float32)."""
from __future__ import annotations

from typing import Any

from zyx.backend.device import Device
from zyx.backend.pool import Buffer
from zyx.contracts.spec.model import Operand
from zyx.dtype import DType
from zyx.kernels.contracts.common import SCAN_TUNABLES, Tunables, template, tunables
from zyx.kernels.contracts.cumsum import accumulator
from zyx.kernels.contracts.scan import scan
from zyx.kernels.contracts.tuning import tuned
from zyx.kernels.contracts.workload import Case, alloc, data, upload

CONTRACTS = ("logcumsumexp_f32", "logcumsumexp_f64")
DECLARED = SCAN_TUNABLES
FIXED_DTYPE = True  # one contract per accumulator: each calibrated on its first dtype


@tuned("logcumsumexp", DECLARED, tunables)
def logcumsumexp(device: Device, out: Buffer, src: Buffer, dtype: DType, outer: int, dim_size: int, inner: int,
                 tun: Tunables | None = None) -> list[Any]:
    """log(cumsum(exp(src))) of dense float ``src`` (outer, dim_size, inner) along the middle axis.
    Returns the events of every launch."""
    return scan(device, "logcumsumexp", template(CONTRACTS[0]), out, None, src, dtype, dtype, accumulator(dtype),
                "logcumsumexp", outer, dim_size, inner, tun or tunables(device))


def calibration(device: Device, dt: DType, n: int) -> Case:
    """A flat logcumsumexp of ``n`` elements."""
    x = data((n,), dt)
    src, out = upload(device, x), alloc(device, n, dt)
    return Case(f"logcumsumexp ({n},) {dt.name}", lambda: logcumsumexp(device, out, src, dt, 1, n, 1),
                [Operand(dt, (n,))], {"dim": 0}, {"x": x}, [src, out])


def tune_op(zyx: Any, x: Any, rows: int) -> None:
    """What ``zyx tune`` runs for this kernel on a (rows, 4096) float32 tensor ``x``."""
    x.logcumsumexp(1).realize()
