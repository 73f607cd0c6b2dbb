"""x @ W^T with W kept in GGUF blocks: ``templates/gguf/qmatmul.cl.mako``, dequantizing inside the kernel
(no float copy of W is ever made).

A decode step (one activation row) is bound by the bytes of W: each work item streams one row of blocks
once, so a 4.5-bit Q4_0 weight moves ~7x fewer bytes than its float32 copy would. With more rows (a
prefill) a work item multiplies each expanded block with ``mt`` activation rows, reading W ``M / mt``
times. Q8_0, Q4_0 and Q4_K have vector paths; the other block types of ``gguf_dequant.QTYPES`` go through
the shared element formulas of ``templates/gguf/blocks.mako``.
"""
from __future__ import annotations

from zyx import settings
from zyx.backend.device import Device
from zyx.backend.pool import Buffer
from zyx.codegen.render import render
from zyx.dtype import index_type
from zyx.kernels.gguf_dequant import QTYPES
from zyx.kernels.launch import run

FAST = ("Q8_0", "Q4_0", "Q4_K")  # the types with vector paths
MAX_ROWS = 4  # activation rows a work item multiplies with one expanded block (its accumulators stay in registers)
LOCAL = {"cpu": 4, "gpu": 64}  # work items (weight rows) a work-group


def rows_per_item(m: int) -> int:
    """The activation rows a work item takes: the most, up to ``MAX_ROWS``, that divide ``m``."""
    return next(t for t in (MAX_ROWS, 2, 1) if m % t == 0)


def source(qtype: str, m: int, k: int, n: int) -> str:
    """The kernel of (``m``, ``k``) x (``n``, ``k``)^T with the weight in ``qtype`` blocks."""
    q = QTYPES[qtype]
    return render("gguf/qmatmul.cl.mako", qtype=qtype, block=q.block, type_size=q.type_size, K=k, N=n,
                  mt=rows_per_item(m), index_t=index_type(m * k, n * q.row_bytes(k), m * n))


def qmatmul(device: Device, x: Buffer, w: Buffer, qtype: str, m: int, k: int, n: int) -> Buffer:
    """A new (``m``, ``n``) float32 buffer: ``x`` (``m``, ``k``) float32 times the transpose of ``w``, ``n``
    rows of ``k`` values in ``qtype`` blocks (``k`` a multiple of the block)."""
    q = QTYPES[qtype]
    if not q.quantized or k % q.block:
        raise ValueError(f"quantized_matmul: {qtype} rows of {k} values are not whole blocks")
    out = device.pool.allocate(max(m * n, 1) * 4)
    if m and n:
        run(device, source(qtype, m, k, n), "zyx_qmatmul", (n, m // rows_per_item(m)),
            LOCAL[settings.heuristics_kind(device)], [out.cl, x.cl, w.cl], exact=True)
    return out


__all__ = ["FAST", "MAX_ROWS", "qmatmul", "rows_per_item", "source"]
