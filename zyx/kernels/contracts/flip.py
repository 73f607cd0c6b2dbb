"""flip: reverse a dense tensor along some axes."""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from zyx.backend.device import Device
from zyx.backend.pool import Buffer
from zyx.contracts.spec.model import Operand
from zyx.dtype import DType, index_type
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

CONTRACTS = ("flip",)
DECLARED = BYTE_TUNABLES
FIXED_DTYPE = False  # a byte kernel: calibrated on float32


def flip_groups(shape: Sequence[int], dims: Sequence[int]) -> tuple[tuple[int, bool], ...]:
    """Axes of a flip merged into (extent, flipped) groups; extent-1 axes dropped."""
    groups: list[list[Any]] = []
    for k, d in enumerate(shape):
        if d == 1:
            continue
        flipped = k in dims
        if groups and groups[-1][1] == flipped:
            groups[-1][0] *= d
        else:
            groups.append([d, flipped])
    return tuple((g[0], g[1]) for g in groups) or ((1, False),)


@tuned("flip", DECLARED, tunables)
def flip(device: Device, out: Buffer, src: Buffer, shape: Sequence[int], dims: Sequence[int],
         itemsize: int, tun: Tunables | None = None) -> Any:
    """Dense ``src`` of ``shape`` reversed along ``dims`` (non-negative) into ``out``."""
    n = math.prod(shape)
    if n == 0:
        return None
    tun = tun or tunables(device)
    groups = flip_groups(shape, dims)
    sub = itemsize
    k = widen(device, itemsize, tun, groups[-1][0])
    if k > 1:  # a flipped last group also reverses the elements inside each word
        groups = (*groups[:-1], (groups[-1][0] // k, groups[-1][1]))
        n, itemsize = n // k, itemsize * k
    vw = vector_width(itemsize, groups[-1][0], tun)
    exact = exact_grid(device, itemsize, k, vw, [g[0] for g in groups])
    vw = 1 if exact else vw
    params = dict(itemsize=itemsize, stream=streams(tun, n * itemsize, vw),
                  groups=groups, n=n, vw=vw, per_item=tun.per_item,
                  index_t=index_type(n), exact=exact, sub=sub)
    return run_bytes(device, template("flip"), "zyx_flip", params, n, vw, exact, [out.cl, src.cl], tun,
                     [g[0] for g in groups])


def calibration(device: Device, dt: DType, n: int) -> Case:
    """A flip of the last axis of about ``n`` elements."""
    rows, cols = square(n)
    x = data((rows, cols), dt)
    src, out = upload(device, x), alloc(device, rows * cols, dt)
    return Case(f"flip ({rows}, {cols}) dims=(1,)", lambda: flip(device, out, src, (rows, cols), (1,), dt.itemsize),
                [Operand(dt, (rows, cols))], {"dims": (1,)}, {"x": x}, [src, out])


def tune_op(zyx: Any, x: Any, rows: int) -> None:
    """What ``zyx tune`` runs for this kernel on a (rows, 4096) float32 tensor ``x``."""
    x.flip(1).realize()
