"""roll: rotate a dense tensor folded to (outer, dim_size, inner) along its middle axis."""
from __future__ import annotations

import math
from typing import Any

from zyx.backend.device import Device
from zyx.backend.launch import compile_kernel, launch
from zyx.backend.pool import Buffer
from zyx.codegen.render import render
from zyx.contracts.spec.model import Operand
from zyx.dtype import DType, index_np, index_type
from zyx.kernels.contracts.common import (
    BYTE_TUNABLES,
    Tunables,
    exact_grid,
    on_gpu,
    run_bytes,
    streams,
    template,
    tunables,
    vector_width,
    widen,
)
from zyx.kernels.contracts.tuning import tuned
from zyx.kernels.contracts.workload import Case, alloc, data, square, upload

CONTRACTS = ("roll",)
DECLARED = BYTE_TUNABLES
FIXED_DTYPE = False  # a byte kernel: calibrated on float32


@tuned("roll", DECLARED, tunables)
def roll(device: Device, out: Buffer, src: Buffer, outer: int, dim_size: int, inner: int, shift: int,
         itemsize: int, tun: Tunables | None = None) -> Any:
    """Dense ``src`` folded to (outer, dim_size, inner) rolled by ``shift`` on the middle axis."""
    n = outer * dim_size * inner
    if n == 0:
        return None
    tun = tun or tunables(device)
    shift %= dim_size
    if inner == 1:
        return _roll_rows(device, out, src, outer, dim_size, shift, itemsize, tun)
    k = widen(device, itemsize, tun, inner)
    inner //= k
    n, itemsize = n // k, itemsize * k
    vw = vector_width(itemsize, inner, tun)
    exact = exact_grid(device, itemsize, k, vw, (outer, dim_size, inner))
    vw = 1 if exact else vw
    index_t = index_type(n)
    params = dict(itemsize=itemsize, stream=streams(tun, n * itemsize, vw),
                  outer=outer, dim_size=dim_size, inner=inner, n=n, vw=vw,
                  per_item=tun.per_item, index_t=index_t, exact=exact, rows=0, clamp=False)
    return run_bytes(device, template("roll"), "zyx_roll", params, n, vw, exact,
                     [out.cl, src.cl, index_np(index_t)(shift)], tun, (outer, dim_size, inner))


def _roll_rows(device: Device, out: Buffer, src: Buffer, rows: int, row: int, shift: int, itemsize: int,
               tun: Tunables) -> Any:
    """Roll each of ``rows`` dense rows of ``row`` elements right by ``shift`` (in [0, row)) as
    two offset copies, out[:, s:] = src[:, :row - s] and out[:, :s] = src[:, row - s:]: one
    kernel (``zyx_roll_rows``) over a 2-D grid whose x is the output column, launched over each
    column range at a global offset with the input ``delta`` elements back (s, then s - row).
    The source index is then affine in x (no wrap-around select per element), so PoCL
    vectorizes the unaligned copy like concat's. Each part runs whole work-groups, then its
    remaining columns as one work-group per row of a size fixed by the row (a clamped
    variant): work-group sizes never depend on the shift, which is a run-time argument, so a
    new shift compiles nothing (PoCL re-specializes a kernel for each new work-group size).
    1- and 2-byte elements move as words when the row and the shift allow (``widen``); CPUs
    move one word per work-item (the runtime vectorizes across them), GPUs vectors of up to
    vector_bytes dividing row and shift."""
    k = widen(device, itemsize, tun, row, shift)
    row, shift, itemsize = row // k, shift // k, itemsize * k
    n = rows * row
    vw = vector_width(itemsize, math.gcd(row, shift), tun) if on_gpu(device) else 1
    index_t = index_type(n)
    params = dict(itemsize=itemsize, stream=streams(tun, n * itemsize, vw), outer=rows, dim_size=row, inner=1,
                  n=n, vw=vw, per_item=1, index_t=index_t, exact=False, rows=row)
    kernel = compile_kernel(device, render(template("roll"), clamp=False, **params), "zyx_roll_rows")
    local = max(1, min(tun.local_size, kernel.work_group_size))
    ity = index_np(index_t)
    events: list[Any] = []
    for col0, width, delta in ((shift, row - shift, shift), (0, shift, shift - row)):
        c0, w = col0 // vw, width // vw
        bulk = w // local * local
        if bulk:
            events.append(launch(kernel, (bulk, rows), (local, 1), [out.cl, src.cl, ity(delta)], offset=(c0, 0),
                                 counts=not events))
        if w > bulk:  # the rest of the part's columns: one clamped work-group per row
            clamped = compile_kernel(device, render(template("roll"), clamp=True, **params), "zyx_roll_rows")
            group = min(max(1, min(tun.local_size, clamped.work_group_size)), 1 << (row // vw - 1).bit_length())
            events.append(launch(clamped, (group, rows), (group, 1), [out.cl, src.cl, ity(delta), ity(c0 + w)],
                                 offset=(c0 + bulk, 0), counts=not events))
    return events[0] if len(events) == 1 else events


def calibration(device: Device, dt: DType, n: int) -> Case:
    """A roll along the first axis of about ``n`` elements."""
    rows, cols = square(n)
    x = data((rows, cols), dt)
    src, out = upload(device, x), alloc(device, rows * cols, dt)
    shift = rows // 3 + 1
    return Case(f"roll ({rows}, {cols}) shift={shift} dim=0",
                lambda: roll(device, out, src, 1, rows, cols, shift, dt.itemsize), [Operand(dt, (rows, cols))],
                {"shift": shift, "outer": 1, "dim_size": rows, "inner": cols}, {"x": x}, [src, out])


def tune_op(zyx: Any, x: Any, rows: int) -> None:
    """What ``zyx tune`` runs for this kernel on a (rows, 4096) float32 tensor ``x``."""
    x.roll(7, 1).realize()
