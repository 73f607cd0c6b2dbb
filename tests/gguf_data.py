"""GGUF test data: tensors in every block type zyx reads, and files written by ``gguf.GGUFWriter``.

The non-K types (and F16/BF16) come from quantizing random float32 values with ``gguf.quants.quantize``;
the gguf package cannot quantize the K types in NumPy, so their blocks are random bytes with finite
float16 scales written over the scale fields of the type's layout."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

gguf = __import__("pytest").importorskip("gguf")
T = gguf.GGMLQuantizationType

NON_K = ["F16", "BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0"]
K_TYPES = ["Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K"]
# the byte offsets of each K type's float16 scales (d, dmin) inside a block
K_SCALES = {"Q2_K": (80, 82), "Q3_K": (108,), "Q4_K": (0, 2), "Q5_K": (0, 2), "Q6_K": (208,)}


def raw(qtype: str, rows: int, cols: int, rng: np.random.Generator) -> np.ndarray:
    """A (rows, cols) matrix stored as ``qtype``: its bytes, uint8 (rows, bytes a row)."""
    block, size = gguf.GGML_QUANT_SIZES[T[qtype]]
    if qtype in K_TYPES:
        out = rng.integers(0, 256, (rows * cols // block, size), dtype=np.uint8)
        for at in K_SCALES[qtype]:
            out[:, at:at + 2] = rng.uniform(-1, 1, (len(out), 1)).astype(np.float16).view(np.uint8)
        return out.reshape(rows, -1)
    q = gguf.quants.quantize(rng.standard_normal((rows, cols)).astype(np.float32), T[qtype])
    return np.ascontiguousarray(q).view(np.uint8).reshape(rows, -1)


def reference(qtype: str, data: np.ndarray, cols: int) -> np.ndarray:
    """``gguf.quants.dequantize`` of ``data`` (rows of ``qtype`` bytes) as float32 (rows, cols)."""
    return gguf.quants.dequantize(data, T[qtype]).reshape(-1, cols)


def write(path: Path, tensors: dict[str, tuple[str, np.ndarray]], metadata: dict[str, Any] | None = None,
          arch: str = "llama") -> Path:
    """A GGUF file of ``tensors`` (name -> (type, float32 values for F32, else the stored bytes as from
    ``raw``)) and metadata (str, int, float or list of str values)."""
    w = gguf.GGUFWriter(str(path), arch)
    for key, value in (metadata or {}).items():
        if isinstance(value, str):
            w.add_string(key, value)
        elif isinstance(value, bool):
            w.add_bool(key, value)
        elif isinstance(value, int):
            w.add_uint32(key, value)
        elif isinstance(value, float):
            w.add_float32(key, value)
        else:
            w.add_array(key, value)
    for name, (qtype, data) in tensors.items():
        if qtype == "F32":
            w.add_tensor(name, data)
        else:
            w.add_tensor(name, data, raw_dtype=T[qtype])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path
