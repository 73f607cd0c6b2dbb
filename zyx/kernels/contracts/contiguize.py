"""contiguize: copy a strided view densely (a tiled transpose on CPUs when the view is one)."""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from zyx.backend.device import Device
from zyx.backend.pool import Buffer
from zyx.contracts.spec.model import Operand
from zyx.dtype import DType, index_type
from zyx.ir.view import View
from zyx.kernels.contracts.common import (
    BYTE_TUNABLES,
    Tunables,
    exact_grid,
    fold_axes,
    on_gpu,
    run_bytes,
    run_strided,
    streams,
    template,
    tunables,
    vector_width,
    widen,
)
from zyx.kernels.contracts.tuning import tuned
from zyx.kernels.contracts.workload import Case, alloc, data, square, upload

CONTRACTS = ("contiguize",)
DECLARED = BYTE_TUNABLES
FIXED_DTYPE = False  # a byte kernel: calibrated on float32

#: Tile of the transposed contiguize in bytes (CPUs): TILE along the source's unit axis by
#: TILE_L along the last axis (output runs of TILE_L bytes; see bench/RESULTS.md for the sweep).
TRANSPOSE_TILE_BYTES = 64
TRANSPOSE_TILE_L_BYTES = 512

#: Work-group size cap of the transposed contiguize (one tile per work-item): many small
#: work-groups spread the tiles over the cores.
TRANSPOSE_LOCAL = 16

#: Smallest extents of the unit-stride axis and of the last axis for the tiled transpose.
TRANSPOSE_MIN = 4


def tile_length(extent: int, preferred: int, step: int) -> int:
    """The transposed tiles' length along the last axis: ``preferred`` when it divides ``extent``, else the
    longest multiple of ``step`` down to a quarter of it that divides, else the longest that fits: a tile
    running past the end is copied element by element (rows shorter than the preferred tile would have
    only such tiles)."""
    if extent % preferred == 0:
        return preferred
    for t in range(preferred - step, max(step, preferred // 4) - 1, -step):
        if extent % t == 0:
            return t
    return preferred if extent >= preferred else max(step, extent // step * step)


def transpose_axis(shape: Sequence[int], strides: Sequence[int]) -> int | None:
    """The innermost axis of unit stride when it is not the last one (a transposed view), else None.

    On CPUs such a view is copied by tiles (``contiguize.cl.mako``, ``tile``): each
    work-item copies TILE x TILE blocks of (that axis, the last axis) with vector loads
    along the source's unit stride and vector stores along the output's rows, so both
    sides move whole cache lines; GPUs keep the elementwise copy.
    """
    if len(shape) < 2 or strides[-1] == 1 or shape[-1] < TRANSPOSE_MIN:
        return None
    for k in range(len(shape) - 2, -1, -1):
        if strides[k] == 1:
            return k if shape[k] >= TRANSPOSE_MIN else None
    return None


def padded_strides(shape: Sequence[int], row: int) -> tuple[int, ...]:
    """Row-major strides of ``shape`` with rows (the last axis) ``row`` elements apart."""
    out = [1] * len(shape)
    if len(shape) >= 2:
        out[-2] = row
        for k in range(len(shape) - 3, -1, -1):
            out[k] = out[k + 1] * shape[k + 1]
    return tuple(out)


@tuned("contiguize", DECLARED, tunables)
def contiguize(device: Device, out: Buffer, src: Buffer, view: View, itemsize: int,
               tun: Tunables | None = None, row: int = 0) -> Any:
    """Copy ``view`` of ``src`` densely into ``out`` (returns the event; None if empty); with ``row``
    (at least ``view.shape[-1]``), rows of the last axis lie ``row`` elements apart in ``out`` (the
    elements between them are left as they were)."""
    n = view.numel
    if n == 0:
        return None
    tun = tun or tunables(device)
    lo, hi = view.span()
    if row:  # the last axis keeps its own extent (the output's rows); the axes before it fold together
        lead, lead_strides, _ = fold_axes(view.shape[:-1], view.strides[:-1])
        shape, strides = (*lead, view.shape[-1]), (*lead_strides, view.strides[-1])
        if shape[0] == 1 and len(shape) > 1:  # nothing before the rows (fold_axes keeps one axis)
            shape, strides = shape[1:], strides[1:]
        ostr = padded_strides(shape, row)
    else:
        shape, strides, _ = fold_axes(view.shape, view.strides)
        ostr = padded_strides(shape, shape[-1])
    index_t = index_type(max(n, math.prod(shape[:-1]) * row), lo, hi + 1)
    unit = transpose_axis(shape, strides) if not on_gpu(device) else None
    if unit is not None:
        tv = max(2, min(16, tun.vector_bytes // itemsize))
        tv = 1 << (tv.bit_length() - 1)
        sb = 4 if itemsize == 1 else 2  # superblocks of sb x sb register blocks (see the template)
        tile = max(sb * tv, TRANSPOSE_TILE_BYTES // itemsize)
        tile_l = tile_length(shape[-1], max(sb * tv, TRANSPOSE_TILE_L_BYTES // itemsize), sb * tv)
        params = dict(itemsize=itemsize, stream=streams(tun, n * itemsize, tv), shape=shape, strides=strides,
                      ostr=ostr, offset=view.offset, n=n, vw=1, per_item=1, index_t=index_t, tile=tile,
                      tile_l=tile_l, unit=unit, tv=tv, sb=sb, exact=False)
        outer = math.prod(d for k, d in enumerate(shape) if k not in (unit, len(shape) - 1))
        n_tiles = outer * -(-shape[unit] // tile) * -(-shape[-1] // tile_l)
        tile_tun = replace(tun, local_size=min(tun.local_size, TRANSPOSE_LOCAL))
        return run_strided(device, template("contiguize"), "zyx_contiguize", params, n_tiles, 1, [out.cl, src.cl],
                           tile_tun)
    if row:  # vectors along rows (when they divide the rows and the padded row), each to its padded place
        vw = vector_width(itemsize, math.gcd(shape[-1], row) if strides[-1] == 1 else 1, tun)
        params = dict(itemsize=itemsize, stream=streams(tun, n * itemsize, vw), shape=shape, strides=strides,
                      ostr=ostr, offset=view.offset, n=n, vw=vw, per_item=tun.per_item, index_t=index_t, tile=0,
                      tile_l=0, unit=None, tv=1, sb=1, exact=False)
        return run_bytes(device, template("contiguize"), "zyx_contiguize", params, n, vw, False, [out.cl, src.cl],
                         tun, shape)
    offset = view.offset
    k = widen(device, itemsize, tun, shape[-1], *strides[:-1], offset) if strides[-1] == 1 else 1
    if k > 1:
        shape, strides = (*shape[:-1], shape[-1] // k), (*(s // k for s in strides[:-1]), 1)
        offset, n, itemsize = offset // k, n // k, itemsize * k
    run = shape[-1] if strides[-1] == 1 else 1
    vw = vector_width(itemsize, run, tun)
    exact = exact_grid(device, itemsize, k, vw, shape)
    vw = 1 if exact else vw
    params = dict(itemsize=itemsize, stream=streams(tun, n * itemsize, vw), shape=shape, strides=strides,
                  ostr=None, offset=offset, n=n, vw=vw, per_item=tun.per_item, index_t=index_t, tile=0, tile_l=0,
                  unit=None, tv=1, sb=1, exact=exact)
    return run_bytes(device, template("contiguize"), "zyx_contiguize", params, n, vw, exact, [out.cl, src.cl], tun,
                     shape)


def calibration(device: Device, dt: DType, n: int) -> Case:
    """A transpose of about ``n`` elements."""
    rows, cols = square(n)
    x = data((cols, rows), dt)
    src, out = upload(device, x), alloc(device, rows * cols, dt)
    view = View.contiguous((cols, rows)).permute((1, 0))
    return Case(f"transpose ({cols}, {rows}) -> ({rows}, {cols})",
                lambda: contiguize(device, out, src, view, dt.itemsize),
                [Operand(dt, (rows, cols), is_contiguous=False)], {}, {"x": x}, [src, out])


def tune_op(zyx: Any, x: Any, rows: int) -> None:
    """What ``zyx tune`` runs for this kernel on a (rows, 4096) float32 tensor ``x``."""
    x.T.contiguous().realize()
