"""triangular: triu / tril of a dense batch of matrices."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from zyx.backend.device import Device
from zyx.backend.pool import Buffer
from zyx.contracts.spec.model import Operand
from zyx.dtype import DType, index_type
from zyx.kernels.contracts.common import (
    BYTE_TUNABLES,
    Tunables,
    on_gpu,
    run_strided,
    streams,
    template,
    tunables,
    vector_width,
)
from zyx.kernels.contracts.tuning import tuned
from zyx.kernels.contracts.workload import Case, alloc, data, upload

CONTRACTS = ("triangular",)
DECLARED = BYTE_TUNABLES
FIXED_DTYPE = False  # a byte kernel: calibrated on float32


@tuned("triangular", DECLARED, tunables)
def triangular(device: Device, out: Buffer, src: Buffer, batch: int, rows: int, cols: int, upper: bool,
               diagonal: int, itemsize: int, tun: Tunables | None = None) -> Any:
    """triu (``upper``) or tril of dense ``src`` (batch x rows x cols) into ``out``."""
    n = batch * rows * cols
    if n == 0:
        return None
    tun = tun or tunables(device)
    vw = vector_width(itemsize, cols, tun)
    rowwise = not on_gpu(device)  # CPUs: whole rows per work-item (copy kept vectors, store zeros unread)
    params = dict(itemsize=itemsize, stream=streams(tun, n * itemsize, vw),
                  batch=batch, rows=rows, cols=cols, upper=bool(upper), n=n, vw=vw,
                  per_item=tun.per_item, index_t=index_type(n), rowwise=rowwise)
    diag = np.int64(max(min(diagonal, 2**62), -(2**62)))
    return run_strided(device, template("triangular"), "zyx_triangular", params,
                       batch * rows if rowwise else n // vw, tun.per_item, [out.cl, src.cl, diag], tun)


def calibration(device: Device, dt: DType, n: int) -> Case:
    """tril of a batch of square matrices of about ``n`` elements."""
    side = max(8, int(math.sqrt(n / 4)))
    batch = max(1, n // (side * side))
    x = data((batch, side, side), dt)
    src, out = upload(device, x), alloc(device, x.size, dt)
    return Case(f"tril ({batch}, {side}, {side})",
                lambda: triangular(device, out, src, batch, side, side, False, 0, dt.itemsize),
                [Operand(dt, x.shape)], {"upper": False, "diagonal": 0}, {"x": x}, [src, out])


def tune_op(zyx: Any, x: Any, rows: int) -> None:
    """What ``zyx tune`` runs for this kernel on a (rows, 4096) float32 tensor ``x``."""
    x.triu(1).realize()
