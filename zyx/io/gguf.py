"""GGUF files (llama.cpp's format): ``load_gguf`` reads the tensors and the key-value metadata through the
``gguf`` package's reader (``pip install zyx[gguf]``) and expands every tensor to float32 on the device.

The file's bytes are memory-mapped; each tensor is uploaded as it is stored (ggml blocks as uint8, F16 and
BF16 as their 16-bit words) and expanded by one kernel of its type family (``zyx.kernels.gguf_dequant``),
bit for bit what ``gguf.quants.dequantize`` gives. With ``dequantize=False`` a 2-D quantized tensor stays in
its blocks, a ``zyx.nn.QuantizedWeight`` for ``zyx.nn.QuantizedLinear``.

A file is data: a bad magic, a truncated file, a tensor of a type zyx cannot read or whose data lies
beyond the end of the file raises ``GGUFError`` naming the file and what is wrong, before anything is
uploaded. GGUF shapes are ggml's (innermost first); tensors here have NumPy's order (outermost first).
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from zyx.errors import ZyxError
from zyx.frontend.creation import from_numpy
from zyx.kernels.gguf_dequant import BY_ID, QTYPES
from zyx.nn.quantized import QuantizedWeight
from zyx.nn.quantized import dequantize as dequantize_raw

__all__ = ["GGUFError", "GGUFFile", "GGUFTensor", "load_gguf", "read_gguf"]


class GGUFError(ZyxError, ValueError):
    """A file that is not a GGUF file zyx can read (bad magic, truncated, a tensor of an unknown type or
    with data beyond the end of the file)."""


@dataclass(frozen=True)
class GGUFTensor:
    """One tensor of a GGUF file, not yet uploaded: ``data`` is its stored bytes (a view of the file's map;
    uint8 (rows..., bytes a row) for block types, float32 / 16-bit words otherwise)."""
    name: str
    qtype: str
    shape: tuple[int, ...]
    data: np.ndarray

    def load(self, device: Any = None, dequantize: bool = True, rows: np.ndarray | None = None) -> Any:
        """The tensor on ``device`` (default device when None; a named device pins it): float32 of
        ``shape``, or, with ``dequantize=False`` and a 2-D block type, a ``QuantizedWeight``. ``rows``
        (an index array over the first dim) reorders the rows first; a row of blocks moves whole, so it
        applies to block bytes too."""
        q = QTYPES[self.qtype]
        raw = np.asarray(self.data)
        if rows is not None:
            raw = raw[rows]
        if q.name == "F32":
            return from_numpy(np.ascontiguousarray(raw, dtype=np.float32).reshape(self.shape), device)
        raw = np.ascontiguousarray(raw).view(np.uint8)
        if q.quantized and not dequantize and len(self.shape) == 2:
            blocks = from_numpy(raw.reshape(self.shape[0], q.row_bytes(self.shape[1])), device)
            return QuantizedWeight(blocks, self.qtype, (int(self.shape[0]), int(self.shape[1])))
        return dequantize_raw(from_numpy(raw.reshape(-1), device), self.qtype, self.shape)


@dataclass(frozen=True)
class GGUFFile:
    """A read and checked GGUF file: its tensors by name (file order) and its metadata (key -> Python value:
    int, float, bool, str or a list of them)."""
    path: str
    tensors: dict[str, GGUFTensor]
    metadata: dict[str, Any]


def _gguf() -> Any:
    try:
        import gguf
    except ImportError as e:
        raise ImportError("reading GGUF files needs the gguf package: pip install 'zyx[gguf]'") from e
    return gguf


def _checked_reader(gguf: Any, path: str) -> Any:
    """The ``gguf`` reader of ``path``, each tensor's type and extent checked before the reader views its
    data (the reader itself would fail with a bare reshape error, or not at all, on a truncated file)."""

    class Reader(gguf.GGUFReader):
        def _build_tensors(self, start_offs: int, fields: list[Any]) -> None:
            size = len(self.data)
            for field in fields:
                _, name_data, _, dims, raw_type, offset = field.parts
                name = bytes(name_data).decode("utf-8", "replace")
                q = BY_ID.get(int(raw_type[0]))
                if q is None:
                    known = {int(t): t.name for t in gguf.GGMLQuantizationType}
                    what = (f"type {known[int(raw_type[0])]}" if int(raw_type[0]) in known
                            else f"unknown type id {int(raw_type[0])}")
                    raise GGUFError(f"{path}: tensor {name!r} has {what}; zyx reads {', '.join(QTYPES)}")
                n = math.prod(int(d) for d in dims)
                if dims.size and int(dims[0]) % q.block:
                    raise GGUFError(f"{path}: tensor {name!r} has rows of {int(dims[0])} values, not whole "
                                    f"{q.name} blocks of {q.block}")
                begin = int(start_offs) + int(offset[0])
                end = begin + n // q.block * q.type_size
                if begin > size:
                    raise GGUFError(f"{path}: tensor {name!r} data offset {begin} is beyond the end of the file "
                                    f"({size} bytes)")
                if end > size:
                    raise GGUFError(f"{path}: tensor {name!r} data [{begin}, {end}) runs past the end of the file "
                                    f"({size} bytes): the file is truncated")
            super()._build_tensors(start_offs, fields)

    return Reader(path)


def _field_value(gguf: Any, field: Any) -> Any:
    """A metadata field's value as Python: a scalar, a str, or a list of them."""
    kinds = gguf.GGUFValueType

    def one(kind: Any, part: np.ndarray) -> Any:
        if kind == kinds.STRING:
            return bytes(part).decode("utf-8", "replace")
        if kind == kinds.FLOAT32:  # the shortest decimal naming this float32 (1e-05, not 9.99999974e-06)
            return float(str(part[0]))
        return part.tolist()[0]

    if not field.types:
        return None
    if field.types[0] == kinds.ARRAY:
        return [one(field.types[-1], field.parts[i]) for i in field.data]
    return one(field.types[0], field.parts[field.data[0]])


def read_gguf(path: str | os.PathLike) -> GGUFFile:
    """Read and check ``path``'s header and tensor table (nothing is uploaded; the data stays mapped)."""
    gguf = _gguf()
    path = os.fspath(path)
    try:
        reader = _checked_reader(gguf, path)
    except GGUFError:
        raise
    except (ValueError, IndexError, KeyError, TypeError, OverflowError, UnicodeDecodeError) as e:
        raise GGUFError(f"{path}: not a readable GGUF file ({e})") from e
    if reader.byte_order != "I":
        raise GGUFError(f"{path}: a GGUF file of the other byte order; zyx reads files of this machine's order")
    metadata = {name: _field_value(gguf, f) for name, f in reader.fields.items() if not name.startswith("GGUF.")}
    tensors = {}
    for t in reader.tensors:
        q = BY_ID[int(t.tensor_type)]
        tensors[t.name] = GGUFTensor(t.name, q.name, tuple(int(d) for d in reversed(t.shape.tolist())), t.data)
    return GGUFFile(path, tensors, metadata)


def load_gguf(path: str | os.PathLike, device: Any = None, dequantize: bool = True) -> tuple[dict[str, Any], dict]:
    """The tensors (name -> float32 Tensor, or ``QuantizedWeight`` for a 2-D block tensor when ``dequantize``
    is False) and the metadata (key -> value) of a GGUF file, uploaded to ``device``."""
    f = read_gguf(path)
    return {name: t.load(device, dequantize) for name, t in f.tensors.items()}, f.metadata


