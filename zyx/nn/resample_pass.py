"""One uint8 separable resampling pass as a template kernel (``templates/resample_pass.cl.mako``).

``functional_resample_separable`` computes PyTorch's taps and int fixed-point weights on the host; this
runs the pass over them: per output, the weighted sum of up to ``taps`` input positions along one dim, in
int32, rounded, shifted and clamped to uint8 (exact, so bit for bit PyTorch's). A pass over a dim that is
not the last reads each tap as a contiguous row of explicit uchar vectors (the generic gather kernel
computed an index per element and did not vectorize: ~1.2 ns an element on the 2-core VM); the last dim's
pass runs one output a work item.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from zyx import dtype as dtypes
from zyx import graph
from zyx.backend.launch import compile_kernel, launch
from zyx.backend.pool import Buffer
from zyx.codegen.render import render
from zyx.frontend.base import tensor_class
from zyx.frontend.creation import from_host, pinned_as
from zyx.ir.view import View

ROW_LOCAL = 16  # work items (each an output row's inner run) a work-group: PoCL starts each group in ~1 us
RUN = 64  # outputs a work item in a pass over the last dim (a row's window stays in L1)
TRANSPOSE_MIN_ROWS = 16  # a last-dim pass over this many rows or more runs transposed (uchar16 rows)


def uint8_pass(x: Any, dim: int, xmin: np.ndarray, weights: np.ndarray, shift: int) -> Any:
    """``x`` (uint8) resized along ``dim``: output ``o`` is ``clamp((2**(shift-1) + sum_j weights[o, j] *
    x[min(xmin[o] + j, n - 1)]) >> shift, 0, 255)``; ``weights`` (outputs, taps) int, zero past a row's taps.

    A pass over the last dim of at least ``TRANSPOSE_MIN_ROWS`` rows runs on the transposed rows (two
    transposing copies around a vectorized pass: 2x bilinear of (8, 3, 256, 256), the width pass ~1.2 ms
    against 3.6 ms of one output a work item)."""
    shape = list(x.shape)
    outer = math.prod(shape[:dim])
    if dim == x.ndim - 1 and outer >= TRANSPOSE_MIN_ROWS:
        rows = _pass(x.reshape(outer, shape[dim]).T, 0, xmin, weights, shift)  # (outputs, outer)
        return rows.T.contiguous().reshape(*shape[:dim], weights.shape[0])
    return _pass(x, dim, xmin, weights, shift)


def _pass(x: Any, dim: int, xmin: np.ndarray, weights: np.ndarray, shift: int) -> Any:
    o_size, taps = weights.shape
    shape = list(x.shape)
    n = shape[dim]
    out_shape = (*shape[:dim], o_size, *shape[dim + 1:])
    outer, inner = math.prod(shape[:dim]), math.prod(shape[dim + 1:])
    device = x.device
    if math.prod(out_shape) == 0 or taps == 0 or n == 0:
        from zyx.frontend.creation import zeros

        return zeros(*out_shape, dtype=dtypes.uint8, device=device)
    xc = x.contiguous()
    if xc._view.offset:
        xc = xc.clone()  # the kernel reads from the storage's first element
    tables = [pinned_as(from_host(np.ascontiguousarray(t, np.int32), dtypes.int32, device), x)
              for t in (xmin.astype(np.int64), weights.reshape(-1))]
    inputs = [xc, *tables]
    vec = 16 if inner >= 16 else 8
    src = render("resample_pass.cl.mako", n=n, o_size=o_size, inner=inner, outer=outer, taps=taps, shift=shift,
                 vec=vec, run=RUN)
    total = outer * (-(-o_size // RUN) if inner == 1 else o_size)
    local = ROW_LOCAL

    def run(bufs: list[Buffer]) -> Buffer:
        kernel = compile_kernel(device, src, "zyx_resample_u8")
        group = max(1, min(local, kernel.work_group_size, device.info.max_work_group_size))
        out = device.pool.allocate(outer * o_size * inner)
        launch(kernel, (-(-total // group) * group,), (group,), [out.cl, *(b.cl for b in bufs)])
        return out

    srcs = [graph.Src(t._data, t._view, t.dtype) for t in inputs]
    node = graph.extern("resample uint8", run, srcs, dtypes.uint8, out_shape, device)
    node.pinned = any(t.pinned for t in inputs)
    return tensor_class()(node, View.contiguous(out_shape), dtypes.uint8, device)
