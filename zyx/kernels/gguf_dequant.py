"""GGUF dequantization on the device: the raw bytes of a tensor in one of ggml's block formats, uploaded as
uint8, expanded to float32 by ``templates/gguf/dequant.cl.mako``, bit for bit what ``gguf.quants.dequantize``
(NumPy) computes.

``QTYPES`` is the one table of the types zyx reads: ggml's type id, the elements a block holds and the
bytes it takes. The layouts themselves (where each scale, min and quant bit sits) are written once, in
``templates/gguf/blocks.mako``, which the quantized matmul (``zyx.kernels.quantized_matmul``) shares.
"""
from __future__ import annotations

from dataclasses import dataclass

from zyx.backend.device import Device
from zyx.backend.pool import Buffer
from zyx.codegen.render import render
from zyx.dtype import index_type
from zyx.kernels.launch import run


@dataclass(frozen=True)
class QType:
    """One of ggml's tensor types: its name, ggml's id, the elements a block holds, the bytes it takes."""
    name: str
    ggml_id: int
    block: int
    type_size: int

    @property
    def quantized(self) -> bool:
        return self.block > 1

    def row_bytes(self, n: int) -> int:
        """The bytes of a row of ``n`` elements (``n`` a multiple of the block)."""
        return n // self.block * self.type_size


# ggml's ids (ggml.h ``enum ggml_type``); F32 is uploaded as it is, the others through the kernel
QTYPES: dict[str, QType] = {q.name: q for q in (
    QType("F32", 0, 1, 4), QType("F16", 1, 1, 2), QType("BF16", 30, 1, 2),
    QType("Q4_0", 2, 32, 18), QType("Q4_1", 3, 32, 20), QType("Q5_0", 6, 32, 22), QType("Q5_1", 7, 32, 24),
    QType("Q8_0", 8, 32, 34),
    QType("Q2_K", 10, 256, 84), QType("Q3_K", 11, 256, 110), QType("Q4_K", 12, 256, 144),
    QType("Q5_K", 13, 256, 176), QType("Q6_K", 14, 256, 210),
)}
BY_ID: dict[int, QType] = {q.ggml_id: q for q in QTYPES.values()}
LOCAL = 16  # work items a work-group (PoCL packs a group's items into vector lanes)


def source(qtype: str, nbytes: int, n: int) -> str:
    """The dequantization kernel of ``qtype`` for ``nbytes`` raw bytes expanding to ``n`` values."""
    q = QTYPES[qtype]
    return render("gguf/dequant.cl.mako", qtype=qtype, block=q.block, type_size=q.type_size,
                  index_t=index_type(nbytes, n))


def dequantize(device: Device, out: Buffer, src: Buffer, qtype: str, n: int) -> None:
    """Enqueue the expansion of ``src`` (the raw bytes of ``n`` values of ``qtype``, not F32) into ``out``
    (``n`` float32 values)."""
    q = QTYPES[qtype]
    if q.name == "F32":
        raise ValueError("gguf_dequant.dequantize: F32 needs no kernel (upload the values)")
    if n % q.block:
        raise ValueError(f"gguf_dequant.dequantize: {n} values are not whole {qtype} blocks of {q.block}")
    items = n // q.block
    if items:
        run(device, source(qtype, items * q.type_size, n), "zyx_gguf_dequant", (items,), LOCAL,
            [out.cl, src.cl], exact=True)


__all__ = ["BY_ID", "QTYPES", "QType", "dequantize", "source"]
