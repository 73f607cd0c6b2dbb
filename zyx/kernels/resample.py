"""One uint8 separable resampling pass (``templates/resample_pass.cl.mako``), launched on dense buffers.

Per output, the weighted sum of up to ``taps`` input positions along one dim, in int32, rounded, shifted
and clamped to uint8 (exact, so bit for bit PyTorch's), from the taps and int fixed-point weights that
``zyx.nn.functional_resample_separable`` computes on the host and runs as an ``EXTERN`` graph node. A pass
over a dim that is not the last reads each tap as a contiguous row of explicit uchar vectors; the last
dim's pass runs on the transposed rows when there are enough of them, else a run of outputs a work item.
"""
from __future__ import annotations

import numpy as np

from zyx import settings
from zyx.backend.device import Device
from zyx.backend.pool import Buffer
from zyx.codegen.render import render
from zyx.kernels.launch import run

LOCAL = 16  # work items a work-group: each writes a whole row or run, and PoCL starts every group anew
RUN = 64  # outputs a work item in a pass over the last dim (a row's window stays in L1)
VEC = 16  # uchar lanes of a row step
TRANSPOSE_MIN_ROWS = VEC  # a last-dim pass over this many rows or more runs transposed (whole vectors)
#: CPUs: table entries (xmin + weights) up to which a pass carries its tables in the program as ``__constant``
#: arrays (built once per resize, nothing uploaded per call; 32 KiB, half the smallest constant memory OpenCL
#: allows); larger tables, and every table on GPUs, are uploaded with each call.
INLINE_MAX = 8192


def inline_tables(device: Device, entries: int) -> bool:
    """Whether a pass with tables of ``entries`` int32 values carries them in its program. GPUs keep them in
    global memory: neighbouring work items read different entries, which a GPU's constant cache serves one
    address at a time."""
    return entries <= INLINE_MAX and settings.heuristics_kind(device) == "cpu"


def pass_source(n: int, o_size: int, taps: int, shift: int, rows: bool, xmin: np.ndarray | None,
                weights: np.ndarray | None) -> str:
    """The pass's program: ``n`` inputs to ``o_size`` outputs of ``taps`` taps along the dim, ``rows`` when
    dims follow it; ``xmin`` and ``weights`` (int32) given when the program carries the tables."""
    tables = None if xmin is None or weights is None else (tuple(xmin.tolist()), tuple(weights.tolist()))
    return render("resample_pass.cl.mako", n=n, o_size=o_size, taps=taps, shift=shift, vec=VEC, run=RUN, rows=rows,
                  tables=tables)


def pass_items(outer: int, o_size: int, rows: bool) -> int:
    """Work items of a pass: an output row each (``rows``), else a run of ``RUN`` outputs each."""
    return outer * (o_size if rows else -(-o_size // RUN))


def uint8_pass(device: Device, source: str, bufs: list[Buffer], outer: int, o_size: int, inner: int) -> Buffer:
    """Enqueue the pass ``source`` over the dense input (and the uploaded tables, when the program does not
    carry them) in ``bufs``; returns the (outer, o_size, inner) uint8 output."""
    items = pass_items(outer, o_size, inner > 1)
    out = device.pool.allocate(outer * o_size * inner)
    run(device, source, "zyx_resample_u8", (items,), LOCAL, [out.cl, *(b.cl for b in bufs), np.int64(items),
                                                             np.int64(inner)])
    return out
