"""write_slice_doff: a write at a start read from a device buffer, range-checked by the kernel."""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from zyx.backend import errorflags
from zyx.backend.device import Device
from zyx.backend.pool import Buffer
from zyx.contracts.spec.model import Operand
from zyx.dtype import DType, index_type
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
from zyx.kernels.contracts.workload import Case, events, upload, write_box

CONTRACTS = ("write_slice_doff",)
DECLARED = BYTE_TUNABLES
FIXED_DTYPE = False  # a byte kernel: calibrated on float32


@tuned("write_slice_doff", DECLARED, tunables)
def write_slice_doff(device: Device, dest: Buffer, src: Buffer, shape: Sequence[int], strides: Sequence[int],
                     axis: int, base: int, dest_extent: int, offset: tuple[Buffer, int], flags: tuple[Buffer, int],
                     itemsize: int, tun: Tunables | None = None) -> Any:
    """Write dense ``src`` into ``dest`` at the start on ``axis`` read from ``offset`` = (int64 buffer, index).

    ``flags`` = (flag buffer, slot): the kernel records (bad, offset) there for the host's check.
    Launched even for an empty source, so the offset is checked.
    """
    n = math.prod(shape)
    tun = tun or tunables(device)
    off_stride = strides[axis]
    fshape, fstrides, _ = fold_axes(shape, strides)  # the offset moves the whole box: no axis kept
    if n and fstrides[-1] == 1 and (off_stride == 1 or axis == len(shape) - 1):
        k = 1  # the run-time offset steps single elements along the contiguous run: no words
    else:
        fshape, fstrides, base, n, itemsize, k = widen_box(device, itemsize, tun, fshape, fstrides, None, base, n,
                                                           off_stride)
    off_stride //= k
    run = fshape[-1] if n and fstrides[-1] == 1 else 1
    vw = vector_width(itemsize, run, tun) if n else 1
    exact = n > 0 and exact_grid(device, itemsize, k, vw, fshape)  # an empty source still runs one work-item
    vw = 1 if exact else vw
    off_buf, off_index = offset
    flag_buf, slot = flags
    params = dict(itemsize=itemsize, stream=streams(tun, n * itemsize, vw),
                  shape=fshape, strides=fstrides, off_stride=off_stride, width=shape[axis],
                  dest_extent=dest_extent, n=n, vw=vw, per_item=tun.per_item,
                  index_t=index_type(n, dest_elements(dest, itemsize)), exact=exact)
    return run_bytes(device, template("write_slice_doff"), "zyx_write_slice_doff", params, n, vw, exact,
                     [dest.cl, src.cl, np.int64(base), off_buf.cl, np.int64(off_index), flag_buf, np.int32(slot)],
                     tun, fshape)


def calibration(device: Device, dt: DType, n: int) -> Case:
    """A write of about ``n`` elements at a start read from the device."""
    b = write_box(device, dt, n)
    rows, cols, dest_rows, start = b.rows, b.cols, b.dest_rows, b.start
    off_buf = upload(device, np.array([start], np.int64))

    def run() -> list[Any]:
        flags = errorflags.reserve(device, "calibration write_slice_doff: offset {offset} out of range")
        return events(write_slice_doff(device, b.dest, b.src, (rows, cols), b.strides, 0, 0, dest_rows,
                                       (off_buf, 0), flags, dt.itemsize))
    return Case(f"device-offset write ({rows}, {cols}) at {start} of ({dest_rows}, {cols})", run,
                [Operand(dt, (rows, cols))], {"dest_shape": (dest_rows, cols), "axis": 0, "offset": start},
                b.arrays, [b.src, b.dest, off_buf])
