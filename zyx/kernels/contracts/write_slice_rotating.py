"""write_slice_rotating: a ring write of a dense source along one axis of the destination."""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from zyx.backend import journal
from zyx.backend.device import Device
from zyx.backend.pool import Buffer
from zyx.contracts.spec.model import Operand
from zyx.dtype import DType, index_type, int32
from zyx.ir.variable import VariableArg
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
from zyx.kernels.contracts.workload import Case, upload, write_box

CONTRACTS = ("write_slice_rotating",)
DECLARED = BYTE_TUNABLES
FIXED_DTYPE = False  # a byte kernel: calibrated on float32


def _axis_vector(itemsize: int, shape: Sequence[int], strides: Sequence[int], axis: int, tun: Tunables) -> int:
    if axis == len(shape) - 1 or strides[-1] != 1:
        return 1
    return vector_width(itemsize, shape[-1], tun)


@tuned("write_slice_rotating", DECLARED, tunables)
def write_slice_rotating(device: Device, dest: Buffer, src: Buffer, shape: Sequence[int],
                         strides: Sequence[int], axis: int, base: int, modulus: int,
                         position: int | tuple[Buffer, int, DType], itemsize: int,
                         tun: Tunables | None = None) -> Any:
    """Ring write of dense ``src`` into ``dest``; ``position`` is an int or (buffer, index, dtype)."""
    n = math.prod(shape)
    if n == 0:
        return None
    tun = tun or tunables(device)
    fshape, fstrides, faxis = fold_axes(shape, strides, keep=axis)
    fshape, fstrides, base, n, itemsize, k = widen_box(device, itemsize, tun, fshape, fstrides, faxis, base, n)
    vw = _axis_vector(itemsize, fshape, fstrides, faxis, tun)
    exact = exact_grid(device, itemsize, k, vw, fshape)
    vw = 1 if exact else vw
    if isinstance(position, tuple):
        pos_buf, pos_index, pos_dtype = position
        position_from = "uint" if pos_dtype.kind == "uint" else "int"
        pos_args = [pos_buf.cl, np.int64(pos_index)]
    else:
        position_from = "arg"
        pos_args = [np.int64(position)]
        if isinstance(position, VariableArg):  # a capture binds it to the variable (graph.plan)
            journal.note_param(pos_args[0], position)
    params = dict(itemsize=itemsize, stream=streams(tun, n * itemsize, vw),
                  shape=fshape, strides=fstrides, axis=faxis, modulus=modulus,
                  position_from=position_from, n=n, vw=vw, per_item=tun.per_item,
                  index_t=index_type(n, dest_elements(dest, itemsize)), exact=exact)
    return run_bytes(device, template("write_slice_rotating"), "zyx_write_slice_rotating", params, n, vw, exact,
                     [dest.cl, src.cl, np.int64(base), *pos_args], tun, fshape)


def calibration(device: Device, dt: DType, n: int) -> Case:
    """A ring write of about ``n`` elements that wraps around a destination twice its size."""
    b = write_box(device, dt, n)
    rows, cols, dest_rows = b.rows, b.cols, b.dest_rows
    pos = dest_rows - rows // 2
    pos_buf = upload(device, np.array([pos], np.int32))
    return Case(f"ring write ({rows}, {cols}) at position {pos} of ({dest_rows}, {cols}) (wraps)",
                lambda: write_slice_rotating(device, b.dest, b.src, (rows, cols), b.strides, 0, 0, dest_rows,
                                             (pos_buf, 0, int32), dt.itemsize),
                [Operand(dt, (rows, cols))],
                {"dest_shape": (dest_rows, cols), "axis": 0, "modulus": dest_rows, "position": pos}, b.arrays,
                [b.src, b.dest, pos_buf])
