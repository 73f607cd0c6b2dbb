"""concat: copy one dense input into its column range of the concatenated output."""
from __future__ import annotations

from typing import Any

from zyx.backend.device import Device
from zyx.backend.pool import Buffer
from zyx.contracts.spec.model import Operand
from zyx.dtype import DType, index_np, index_type
from zyx.kernels.contracts.common import (
    BYTE_TUNABLES,
    Tunables,
    exact_grid,
    run_bytes,
    streams,
    template,
    tunables,
    vector_width,
    widen,
)
from zyx.kernels.contracts.tuning import tuned
from zyx.kernels.contracts.workload import Case, alloc, data, square, upload

CONTRACTS = ("concat",)
DECLARED = BYTE_TUNABLES
FIXED_DTYPE = False  # a byte kernel: calibrated on float32


@tuned("concat", DECLARED, tunables)
def concat_part(device: Device, out: Buffer, src: Buffer, outer: int, row_in: int, row_out: int, col0: int,
                itemsize: int, tun: Tunables | None = None) -> Any:
    """Copy dense ``src`` (outer x row_in) into columns ``col0..col0+row_in`` of ``out`` rows."""
    n = outer * row_in
    if n == 0:
        return None
    tun = tun or tunables(device)
    k = widen(device, itemsize, tun, row_in, row_out, col0)
    row_in, row_out, col0, n, itemsize = row_in // k, row_out // k, col0 // k, n // k, itemsize * k
    vw = vector_width(itemsize, row_in, tun)
    exact = exact_grid(device, itemsize, k, vw, (outer, row_in))
    vw = 1 if exact else vw
    index_t = index_type(outer * row_out)
    params = dict(itemsize=itemsize, stream=streams(tun, n * itemsize, vw),
                  outer=outer, row_in=row_in, row_out=row_out, n=n, vw=vw,
                  per_item=tun.per_item, index_t=index_t, exact=exact)
    return run_bytes(device, template("concat"), "zyx_concat", params, n, vw, exact,
                     [out.cl, src.cl, index_np(index_t)(col0)], tun, (outer, row_in))


def calibration(device: Device, dt: DType, n: int) -> Case:
    """Two inputs of about ``n`` elements together, concatenated along the last axis."""
    rows, cols = square(n)
    half = cols // 2
    a, b = data((rows, half), dt, 1), data((rows, cols - half), dt, 2)
    sa, sb, out = upload(device, a), upload(device, b), alloc(device, rows * cols, dt)

    def run() -> list[Any]:
        return [concat_part(device, out, sa, rows, half, cols, 0, dt.itemsize),
                concat_part(device, out, sb, rows, cols - half, cols, half, dt.itemsize)]
    return Case(f"cat [({rows}, {half}), ({rows}, {cols - half})] dim=1", run,
                [Operand(dt, a.shape), Operand(dt, b.shape)], {"dim": 1}, {"a": a, "b": b}, [sa, sb, out])


def tune_op(zyx: Any, x: Any, rows: int) -> None:
    """What ``zyx tune`` runs for this kernel on a (rows, 4096) float32 tensor ``x``."""
    zyx.cat([x, x], 0).realize()
