"""masked_fill: ``out = mask ? fill : src`` over dense elements."""
from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from zyx.backend.device import Device
from zyx.backend.pool import Buffer
from zyx.contracts.spec.model import Operand
from zyx.dtype import UINT_OF_SIZE, DType, bool_
from zyx.kernels.contracts.common import (
    BYTE_TUNABLES,
    Tunables,
    exact_grid,
    on_gpu,
    overridden,
    run_exact,
    run_strided,
    streams,
    template,
    tunables,
)
from zyx.kernels.contracts.tuning import tuned
from zyx.kernels.contracts.workload import Case, alloc, data, upload

CONTRACTS = ("masked_fill",)
DECLARED = BYTE_TUNABLES
FIXED_DTYPE = False  # a byte kernel: calibrated on float32

#: CPUs: masked_fill's vectors are at least this wide (16 float32 lanes, so the mask load is
#: 16 bytes; narrower vectors are slower, see bench/RESULTS.md).
MASKED_FILL_VECTOR_BYTES_CPU = 64


def masked_fill_tunables(device: Device) -> Tunables:
    """masked_fill's tunables: the device's, with vectors of at least MASKED_FILL_VECTOR_BYTES_CPU
    bytes on CPUs unless ``set_tunables`` overrode them."""
    tun = tunables(device)
    if on_gpu(device) or overridden(device):
        return tun
    return replace(tun, vector_bytes=max(tun.vector_bytes, MASKED_FILL_VECTOR_BYTES_CPU))


@tuned("masked_fill", DECLARED, masked_fill_tunables)
def masked_fill(device: Device, out: Buffer, src: Buffer, mask: Buffer, n: int, fill_bits: np.ndarray,
                itemsize: int, tun: Tunables | None = None) -> Any:
    """``out = mask ? fill : src`` over ``n`` dense elements; ``fill_bits`` is one element's bits."""
    if n == 0:
        return None
    tun = tun or masked_fill_tunables(device)
    vw = max(1, min(16, tun.vector_bytes // itemsize))
    vw = 1 << (vw.bit_length() - 1)
    vw = 1 if exact_grid(device, itemsize, 1, vw, (n,)) else vw  # 1-/2-byte elements on CPUs
    fill = np.ascontiguousarray(fill_bits).view(UINT_OF_SIZE[itemsize].numpy).reshape(())[()]
    args = [out.cl, src.cl, mask.cl, fill, np.int64(n)]
    params = dict(itemsize=itemsize, vw=vw, per_item=tun.per_item, stream=streams(tun, n * itemsize, vw))
    if vw == 1:
        return run_exact(device, template("masked_fill"), "zyx_masked_fill", params, n, args, tun)
    return run_strided(device, template("masked_fill"), "zyx_masked_fill", params, -(-n // vw), tun.per_item, args,
                       tun)


def calibration(device: Device, dt: DType, n: int) -> Case:
    """A fill of every third of ``n`` elements."""
    x = data((n,), dt)
    m = (np.arange(n) % 3 == 0)
    src, mask, out = upload(device, x), upload(device, m.astype(np.uint8)), alloc(device, n, dt)
    fill = np.array(7, dtype=dt.numpy)
    return Case(f"masked_fill ({n},) every third", lambda: masked_fill(device, out, src, mask, n, fill, dt.itemsize),
                [Operand(dt, (n,)), Operand(bool_, (n,))], {"fill": 7}, {"x": x, "mask": m}, [src, mask, out])


def tune_op(zyx: Any, x: Any, rows: int) -> None:
    """What ``zyx tune`` runs for this kernel on a (rows, 4096) float32 tensor ``x``."""
    x.masked_fill(x > 0.5, 0.0).realize()
