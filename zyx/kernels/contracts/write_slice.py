"""write_slice: scatter a dense source into a strided box of the destination, in place."""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from zyx.backend.device import Device
from zyx.backend.pool import Buffer
from zyx.contracts.spec.model import Operand
from zyx.dtype import DType, index_np, index_type
from zyx.kernels.contracts.common import (
    BYTE_TUNABLES,
    Tunables,
    dest_elements,
    exact_grid,
    fold_axes,
    run_bytes,
    streams,
    template,
    tunables,
    vector_width,
    widen_box,
)
from zyx.kernels.contracts.tuning import tuned
from zyx.kernels.contracts.workload import Case, write_box

CONTRACTS = ("write_slice",)
DECLARED = BYTE_TUNABLES
FIXED_DTYPE = False  # a byte kernel: calibrated on float32


@tuned("write_slice", DECLARED, tunables)
def write_slice(device: Device, dest: Buffer, src: Buffer, shape: Sequence[int], strides: Sequence[int],
                base: int, itemsize: int, tun: Tunables | None = None) -> Any:
    """Scatter dense ``src`` of ``shape`` into ``dest`` at element ``base`` with ``strides``."""
    n = math.prod(shape)
    if n == 0:
        return None
    tun = tun or tunables(device)
    fshape, fstrides, _ = fold_axes(shape, strides)
    fshape, fstrides, base, n, itemsize, k = widen_box(device, itemsize, tun, fshape, fstrides, None, base, n)
    run = fshape[-1] if fstrides[-1] == 1 else 1
    vw = vector_width(itemsize, run, tun)
    exact = exact_grid(device, itemsize, k, vw, fshape)
    vw = 1 if exact else vw
    index_t = index_type(n, dest_elements(dest, itemsize))
    params = dict(itemsize=itemsize, stream=streams(tun, n * itemsize, vw),
                  shape=fshape, strides=fstrides, n=n, vw=vw, per_item=tun.per_item,
                  index_t=index_t, exact=exact)
    return run_bytes(device, template("write_slice"), "zyx_write_slice", params, n, vw, exact,
                     [dest.cl, src.cl, index_np(index_t)(base)], tun, fshape)


def calibration(device: Device, dt: DType, n: int) -> Case:
    """A write of about ``n`` elements into rows of a destination twice its size."""
    b = write_box(device, dt, n)
    rows, cols, start = b.rows, b.cols, b.start
    return Case(f"write ({rows}, {cols}) into rows [{start}, {start + rows}) of ({b.dest_rows}, {cols})",
                lambda: write_slice(device, b.dest, b.src, (rows, cols), b.strides, start * cols, dt.itemsize),
                [Operand(dt, (rows, cols))],
                {"dest_shape": (b.dest_rows, cols), "ranges": ((start, start + rows), (0, cols))}, b.arrays,
                [b.src, b.dest])


def tune_op(zyx: Any, x: Any, rows: int) -> None:
    """What ``zyx tune`` runs for this kernel on a (rows, 4096) float32 tensor ``x``."""
    zyx.write_slice(x, zyx.rand(rows // 2, 2048), ((0, rows // 2), (1024, 3072)))
    x.realize()
