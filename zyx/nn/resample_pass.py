"""One uint8 separable resampling pass as a template kernel (``templates/resample_pass.cl.mako``).

``functional_resample_separable`` computes PyTorch's taps and int fixed-point weights on the host; this
runs the pass over them: per output, the weighted sum of up to ``taps`` input positions along one dim, in
int32, rounded, shifted and clamped to uint8 (exact, so bit for bit PyTorch's). A pass over a dim that is
not the last reads each tap as a contiguous row of explicit uchar vectors; the last dim's pass runs on the
transposed rows when there are enough of them, else a run of outputs a work item (bench/RESULTS.md,
thirteenth session, has the timings).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from zyx import dtype as dtypes
from zyx import settings
from zyx.backend.launch import compile_kernel, launch
from zyx.backend.pool import Buffer
from zyx.codegen.render import render
from zyx.frontend.base import extern_tensor
from zyx.frontend.creation import from_host, pinned_as, zeros

LOCAL = 16  # work items a work-group: each writes a whole row or run, and PoCL starts every group anew
RUN = 64  # outputs a work item in a pass over the last dim (a row's window stays in L1)
VEC = 16  # uchar lanes of a row step
TRANSPOSE_MIN_ROWS = VEC  # a last-dim pass over this many rows or more runs transposed (whole vectors)
#: CPUs: table entries (xmin + weights) up to which a pass carries its tables in the program as ``__constant``
#: arrays (built once per resize, nothing uploaded per call; 32 KiB, half the smallest constant memory OpenCL
#: allows); larger tables, and every table on GPUs, are uploaded with each call.
INLINE_MAX = 8192


def uint8_pass(x: Any, dim: int, xmin: np.ndarray, weights: np.ndarray, shift: int) -> Any:
    """``x`` (uint8) resized along ``dim``: output ``o`` is ``clamp((2**(shift-1) + sum_j weights[o, j] *
    x[min(xmin[o] + j, n - 1)]) >> shift, 0, 255)``; ``weights`` (outputs, taps) int, zero past a row's taps.

    A pass over the last dim of at least ``TRANSPOSE_MIN_ROWS`` rows runs on the transposed rows: two
    transposing copies around the vectorized pass over dim 0."""
    shape = list(x.shape)
    outer = math.prod(shape[:dim])
    if dim == x.ndim - 1 and outer >= TRANSPOSE_MIN_ROWS:
        rows = _pass(x.reshape(outer, shape[dim]).T, 0, xmin, weights, shift)  # (outputs, outer)
        return rows.T.contiguous().reshape(*shape[:dim], weights.shape[0])
    return _pass(x, dim, xmin, weights, shift)


def _pass(x: Any, dim: int, xmin: np.ndarray, weights: np.ndarray, shift: int) -> Any:
    """``uint8_pass`` as one launch of the template on ``x`` as it is (rows when ``dim`` is not the last)."""
    o_size, taps = weights.shape
    shape = list(x.shape)
    n = shape[dim]
    out_shape = (*shape[:dim], o_size, *shape[dim + 1:])
    outer, inner = math.prod(shape[:dim]), math.prod(shape[dim + 1:])
    device = x.device
    if math.prod(out_shape) == 0 or taps == 0 or n == 0:
        return zeros(*out_shape, dtype=dtypes.uint8, device=device)
    xc = x.contiguous()
    if xc._view.offset:
        xc = xc.clone()  # the kernel reads from the storage's first element
    xmin32, w32 = np.ascontiguousarray(xmin, np.int32), np.ascontiguousarray(weights, np.int32).reshape(-1)
    # GPUs keep them in global memory: neighbouring work items read different entries, which a GPU's
    # constant cache serves one address at a time
    inline = xmin32.size + w32.size <= INLINE_MAX and settings.heuristics_kind(device) == "cpu"
    inputs = [xc] if inline else [xc, *(pinned_as(from_host(t, dtypes.int32, device), x) for t in (xmin32, w32))]
    rows = inner > 1
    src = render("resample_pass.cl.mako", n=n, o_size=o_size, taps=taps, shift=shift, vec=VEC, run=RUN, rows=rows,
                 tables=(tuple(xmin32.tolist()), tuple(w32.tolist())) if inline else None)
    items = outer * (o_size if rows else -(-o_size // RUN))

    def run(bufs: list[Buffer]) -> Buffer:
        kernel = compile_kernel(device, src, "zyx_resample_u8")
        group = max(1, min(LOCAL, kernel.work_group_size, device.info.max_work_group_size))
        out = device.pool.allocate(outer * o_size * inner)
        launch(kernel, (-(-items // group) * group,), (group,),
               [out.cl, *(b.cl for b in bufs), np.int64(items), np.int64(inner)])
        return out

    return extern_tensor("resample uint8", run, inputs, dtypes.uint8, out_shape, device)
