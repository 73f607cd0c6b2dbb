"""x @ W^T with W kept in GGUF blocks: ``templates/gguf/qmatmul.cl.mako``, dequantizing inside the kernel
(no float copy of W is ever made).

A decode step (one activation row) is bound by the bytes of W: each work item streams one row of blocks
once, so a 4.5-bit Q4_0 weight moves ~7x fewer bytes than its float32 copy would. With more rows (a
prefill) a work item multiplies each expanded block with ``mt`` activation rows, reading W ``M / mt``
times. On a CPU a work item streams a whole row; on a GPU a work-group of ``LANES`` work items shares a row,
neighbours reading neighbouring blocks, and adds its sums in local memory. Q8_0, Q4_0 and Q4_K have vector
paths; the other block types of ``gguf_dequant.QTYPES`` go through
the shared element formulas of ``templates/gguf/blocks.mako``. Several weights of one input (a layer's Q, K
and V projections) go in one launch as ``parts`` of the output's columns: a decode step of small matrices
is bound by launches as much as by bytes.
"""
from __future__ import annotations

import functools
from collections.abc import Sequence

from zyx import settings
from zyx.backend.device import Device
from zyx.backend.launch import CompiledKernel, compile_kernel
from zyx.backend.pool import Buffer
from zyx.codegen.render import render
from zyx.dtype import index_np, index_type
from zyx.kernels.gguf_dequant import QTYPES
from zyx.kernels.launch import group_size, launch_grid

FAST = ("Q8_0", "Q4_0", "Q4_K")  # the types with vector paths
MAX_ROWS = 4  # activation rows a work item multiplies with one expanded block (its accumulators stay in registers)
LOCAL = 4  # CPUs: work items (weight rows) a work-group
LANES = {"cpu": 1, "gpu": 32}  # work items sharing a weight row (a power of two)


def rows_per_item(m: int) -> int:
    """The activation rows a work item takes: ``m`` up to ``MAX_ROWS`` (a last tile may hang past ``m``)."""
    return max(1, min(MAX_ROWS, m))


def _index_t(qtype: str, m: int, k: int, n: int) -> str:
    """The kernel's index type: every offset into x, W and out, and every work item id, fits it."""
    return index_type(m * k, n * QTYPES[qtype].row_bytes(k), m * n * max(LANES.values()))


def source(qtype: str, m: int, k: int, parts: tuple[int, ...], lanes: int = 1) -> str:
    """The kernel of (``m``, ``k``) x (``sum(parts)``, ``k``)^T with the weight in ``qtype`` blocks, given as
    ``len(parts)`` buffers of ``parts[i]`` rows, ``lanes`` work items a weight row."""
    q = QTYPES[qtype]
    return render("gguf/qmatmul.cl.mako", qtype=qtype, block=q.block, type_size=q.type_size, K=k,
                  parts=tuple(parts), mt=rows_per_item(m), lanes=lanes, index_t=_index_t(qtype, m, k, sum(parts)))


@functools.lru_cache(maxsize=512)
def _kernel(device: Device, qtype: str, m: int, k: int, parts: tuple[int, ...],
            kind: str) -> tuple[CompiledKernel, int]:
    """The compiled kernel for a device of ``kind`` and its lanes a weight row (fewer where the kernel's
    work-group limit is lower); memoized: a decode step launches the same few shapes every token."""
    lanes = LANES[kind]
    kernel = compile_kernel(device, source(qtype, m, k, parts, lanes), "zyx_qmatmul")
    while lanes > 1 and group_size(kernel, lanes) < lanes:
        lanes //= 2
        kernel = compile_kernel(device, source(qtype, m, k, parts, lanes), "zyx_qmatmul")
    return kernel, lanes


def qmatmul(device: Device, x: Buffer, ws: Sequence[Buffer], qtype: str, m: int, k: int,
            parts: Sequence[int]) -> Buffer:
    """A new (``m``, ``sum(parts)``) float32 buffer: ``x`` (``m``, ``k``) float32 times the transpose of the
    weight whose rows are ``ws[0]``'s ``parts[0]`` rows, then ``ws[1]``'s ``parts[1]``, ...: rows of ``k``
    values in ``qtype`` blocks (``k`` a multiple of the block)."""
    q = QTYPES[qtype]
    if not q.quantized or k % q.block:
        raise ValueError(f"quantized_matmul: {qtype} rows of {k} values are not whole blocks")
    if len(ws) != len(parts) or not ws:
        raise ValueError(f"quantized_matmul: {len(ws)} weight buffers for {len(parts)} parts")
    n = sum(parts)
    out = device.pool.allocate(max(m * n, 1) * 4)
    if not (m and n):
        return out
    grid_m = -(-m // rows_per_item(m))
    ity = index_np(_index_t(qtype, m, k, n))
    kernel, lanes = _kernel(device, qtype, m, k, tuple(parts), settings.heuristics_kind(device))
    args = [out.cl, x.cl, *(w.cl for w in ws), ity(m)]
    if lanes > 1:
        launch_grid(kernel, (n * lanes, grid_m), lanes, args)
    else:
        launch_grid(kernel, (n, grid_m), LOCAL, args, exact=True)
    return out


__all__ = ["FAST", "LANES", "LOCAL", "MAX_ROWS", "qmatmul", "rows_per_item", "source"]
