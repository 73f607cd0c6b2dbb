"""safetensors files: ``save_file`` / ``load_file`` / ``load_file_metadata``, and ``save`` / ``load`` for state
dicts (nested dicts, lists and numbers too), written in the format itself, no pickle anywhere.

The format: an 8-byte little-endian header length N, N bytes of JSON (each tensor's ``dtype``,
``shape`` and ``data_offsets`` [begin, end) into the data section, an optional ``__metadata__`` of
strings; padded with spaces to a multiple of 8), then the tensors' raw little-endian bytes.

Writing streams one tensor at a time into a temporary file beside the target and renames it over
the target at the end, so a reader never sees a half-written file. Loading validates the whole
header before it uploads anything (a bad file raises ``SafetensorsError`` and loads nothing) and
uploads each tensor from a memory map of the file, so no second host copy of the weights exists.
"""
from __future__ import annotations

import json
import os
import secrets
import struct
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from zyx import dtype as dtypes
from zyx.dtype import DType
from zyx.errors import ZyxError
from zyx.frontend.creation import from_numpy
from zyx.frontend.tensor import Tensor

__all__ = ["SafetensorsError", "load", "load_file", "load_file_metadata", "save", "save_file"]

# safetensors' dtype names; float8_e4m3 is its F8_E4M3 (the fn variant: no infinities)
DTYPE_NAMES: dict[str, DType] = {
    "BOOL": dtypes.bool_, "U8": dtypes.uint8, "I8": dtypes.int8, "U16": dtypes.uint16, "I16": dtypes.int16,
    "U32": dtypes.uint32, "I32": dtypes.int32, "U64": dtypes.uint64, "I64": dtypes.int64,
    "F16": dtypes.float16, "BF16": dtypes.bfloat16, "F32": dtypes.float32, "F64": dtypes.float64,
    "F8_E4M3": dtypes.float8_e4m3, "F8_E5M2": dtypes.float8_e5m2,
}
_NAME_OF = {dt: name for name, dt in DTYPE_NAMES.items()}
MAX_HEADER_BYTES = 100_000_000  # the safetensors package's own limit
STRUCTURE_KEY = "zyx.structure"  # metadata entry describing a nested object saved by ``save``


class SafetensorsError(ZyxError, ValueError):
    """A file that is not valid safetensors (truncated, bad header, offsets out of range or overlapping,
    unknown dtype), or an object that cannot be written as one."""


# ------------------------------------------------------------------ writing

def save_file(tensors: Mapping[str, Tensor], path: str | os.PathLike,
              metadata: Mapping[str, str] | None = None) -> None:
    """Write ``tensors`` (name -> Tensor; any view, any dtype) to ``path`` as safetensors, atomically."""
    if not isinstance(tensors, Mapping):
        raise SafetensorsError(f"save_file: expected a dict of name -> Tensor, got {type(tensors).__name__}")
    header: dict[str, Any] = {}
    if metadata is not None:
        bad = [k for k, v in metadata.items() if not (isinstance(k, str) and isinstance(v, str))]
        if bad:
            raise SafetensorsError(f"save_file: metadata must map str to str; entry {bad[0]!r} does not")
        header["__metadata__"] = dict(metadata)
    offset = 0
    for name in tensors:  # before sorting: names of mixed types would not sort
        if not isinstance(name, str) or name == "__metadata__":
            raise SafetensorsError(f"save_file: tensor name {name!r} is not allowed (expected a str other than "
                                   "'__metadata__')")
    order = sorted(tensors)
    for name in order:
        t = tensors[name]
        if not isinstance(t, Tensor):
            raise SafetensorsError(f"save_file: {name!r} is a {type(t).__name__}, expected a zyx Tensor")
        nbytes = t.numel() * t.dtype.itemsize
        header[name] = {"dtype": _NAME_OF[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode()
    text += b" " * (-len(text) % 8)
    with _AtomicFile(path) as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for name in order:
            arr = tensors[name].detach().numpy()  # one tensor on the host at a time
            if sys.byteorder == "big":
                arr = arr.byteswap()
            f.write(np.ascontiguousarray(arr).reshape(-1).view(np.uint8).data)


class _AtomicFile:
    """A file written beside ``path`` under a temporary name and renamed over it when the block succeeds
    (removed when it fails)."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self.tmp = self.path.with_name(f".{self.path.name}.{secrets.token_hex(6)}.tmp")

    def __enter__(self) -> Any:
        if not self.path.parent.is_dir():  # say so about the target, not about the temporary name
            raise FileNotFoundError(f"cannot write {os.fspath(self.path)}: the directory "
                                    f"{os.fspath(self.path.parent)} does not exist")
        if self.path.is_dir():
            raise IsADirectoryError(f"cannot write {os.fspath(self.path)}: it is a directory")
        fd = os.open(self.tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # the umask applies, as for open()
        self.file = os.fdopen(fd, "wb")
        return self.file

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> None:
        try:
            if kind is None:
                self.file.flush()
                os.fsync(self.file.fileno())
            self.file.close()
            if kind is None:
                os.replace(self.tmp, self.path)
        finally:
            if self.tmp.exists():
                self.tmp.unlink()


# ------------------------------------------------------------------ reading

def _read_header(path: str | os.PathLike) -> tuple[dict[str, Any], dict[str, str], int, int]:
    """The validated header of ``path``: (tensor entries, metadata, data start, file size)."""
    where = os.fspath(path)
    size = os.path.getsize(where)
    with open(where, "rb") as f:
        head = f.read(8)
        if len(head) < 8:
            raise SafetensorsError(f"{where}: {size} bytes is too short for a safetensors file (expected an "
                                   "8-byte header length first)")
        (n,) = struct.unpack("<Q", head)
        if n > MAX_HEADER_BYTES or n > size - 8:
            raise SafetensorsError(f"{where}: header length {n} exceeds the file's remaining {size - 8} bytes "
                                   f"(or the {MAX_HEADER_BYTES}-byte limit): truncated or not safetensors")
        raw = f.read(n)
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SafetensorsError(f"{where}: the header is not valid JSON ({exc})") from None
    if not isinstance(header, dict):
        raise SafetensorsError(f"{where}: the header is a JSON {type(header).__name__}, expected an object")
    metadata = header.pop("__metadata__", None) or {}
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise SafetensorsError(f"{where}: __metadata__ must map strings to strings")
    data_size = size - 8 - n
    spans = []
    for name, entry in header.items():
        if not isinstance(entry, dict) or not {"dtype", "shape", "data_offsets"} <= entry.keys():
            raise SafetensorsError(f"{where}: tensor {name!r}: expected an object with dtype, shape and data_offsets")
        dt = DTYPE_NAMES.get(entry["dtype"]) if isinstance(entry["dtype"], str) else None
        if dt is None:
            raise SafetensorsError(f"{where}: tensor {name!r} has dtype {entry['dtype']!r}; zyx reads "
                                   f"{', '.join(DTYPE_NAMES)}")
        shape, offsets = entry["shape"], entry["data_offsets"]
        if not (isinstance(shape, list) and all(type(d) is int and d >= 0 for d in shape)):
            raise SafetensorsError(f"{where}: tensor {name!r} has shape {shape!r}; expected a list of "
                                   "non-negative ints")
        if not (isinstance(offsets, list) and len(offsets) == 2 and all(type(o) is int for o in offsets)):
            raise SafetensorsError(f"{where}: tensor {name!r} has data_offsets {offsets!r}; expected [begin, end]")
        begin, end = offsets
        nbytes = int(np.prod(shape, dtype=object)) * dt.itemsize
        if not 0 <= begin <= end <= data_size:
            raise SafetensorsError(f"{where}: tensor {name!r} has data_offsets [{begin}, {end}] outside the data "
                                   f"section's {data_size} bytes: truncated or corrupt")
        if end - begin != nbytes:
            raise SafetensorsError(f"{where}: tensor {name!r} ({entry['dtype']}{shape}) needs {nbytes} bytes but "
                                   f"data_offsets [{begin}, {end}] hold {end - begin}")
        spans.append((begin, end, name))
    reach, last = 0, ""  # the furthest end so far (empty tensors occupy nothing) and whose it is
    for begin, end, name in sorted(spans):
        if begin < end:
            if begin < reach:
                raise SafetensorsError(f"{where}: tensors {last!r} and {name!r} overlap in the data section "
                                       f"({last!r} ends at {reach}, {name!r} starts at {begin})")
            reach, last = end, name
    return header, metadata, 8 + n, size


def load_file_metadata(path: str | os.PathLike) -> dict[str, str]:
    """The ``__metadata__`` strings of a safetensors file (empty when it has none); reads the header only."""
    return dict(_read_header(path)[1])


def load_file(path: str | os.PathLike, device: Any = None) -> dict[str, Tensor]:
    """Every tensor of a safetensors file, uploaded to ``device`` (the default device when None; a named
    device pins them there), in the file's order. A sharded checkpoint's index (``*.safetensors.index.json``,
    Hugging Face's ``weight_map`` of tensor name -> shard file) reads every shard it names."""
    if os.fspath(path).endswith(".json"):
        return _load_sharded(path, device)
    header, _, start, size = _read_header(path)
    if size == start:
        data = np.zeros(0, np.uint8)
    else:
        data = np.memmap(os.fspath(path), dtype=np.uint8, mode="r", offset=start, shape=(size - start,))
    out: dict[str, Tensor] = {}
    for name, entry in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
        dt = DTYPE_NAMES[entry["dtype"]]
        begin, end = entry["data_offsets"]
        arr = data[begin:end].view(dt.numpy).reshape(entry["shape"])  # pages of the map, not a copy
        if sys.byteorder == "big":
            arr = arr.byteswap()
        out[name] = from_numpy(np.asarray(arr), device)
    del data  # the map closes once nothing views it
    return out


def _load_sharded(index_path: str | os.PathLike, device: Any) -> dict[str, Tensor]:
    """The tensors a sharded checkpoint's index maps to its shard files (next to the index), checked: each
    shard holds exactly the names the index gives it, so a stale or hand-edited index is an error, not a
    silently partial state dict."""
    where = os.fspath(index_path)
    try:
        with open(where, encoding="utf-8") as f:
            index = json.load(f)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SafetensorsError(f"{where}: the index is not valid JSON ({exc})") from None
    weight_map = index.get("weight_map") if isinstance(index, dict) else None
    if not isinstance(weight_map, dict) or not all(isinstance(v, str) for v in weight_map.values()):
        raise SafetensorsError(f"{where}: expected a JSON object with a 'weight_map' of tensor name -> shard file")
    shards: dict[str, set[str]] = {}
    for name, shard in weight_map.items():
        if os.path.basename(shard) != shard or not shard.endswith(".safetensors"):
            raise SafetensorsError(f"{where}: tensor {name!r} maps to {shard!r}; expected a .safetensors file "
                                   "name in the index's directory")
        shards.setdefault(shard, set()).add(name)
    out: dict[str, Tensor] = {}
    folder = os.path.dirname(where)
    for shard, names in shards.items():
        part = load_file(os.path.join(folder, shard), device)
        if set(part) != names:
            extra, lost = sorted(set(part) - names), sorted(names - set(part))
            raise SafetensorsError(f"{where}: shard {shard!r} holds tensors the index does not give it "
                                   f"({extra}) or lacks ones it does ({lost})")
        out.update(part)
    return {name: out[name] for name in weight_map}


# ------------------------------------------------------------------ state dicts

def save(obj: Mapping[str, Any], path: str | os.PathLike) -> None:
    """Write a state dict: tensors (named by their keys joined with dots), nested dicts, lists and tuples of
    them, and numbers, strings, bools and None (an optimizer's ``state_dict()`` as is). A flat dict of
    tensors is a plain safetensors file; anything else also stores its layout in the metadata."""
    if not isinstance(obj, Mapping):
        raise SafetensorsError(f"save: expected a dict (a state dict), got {type(obj).__name__}")
    tensors: dict[str, Tensor] = {}
    layout = _encode(obj, "", tensors)
    flat = all(isinstance(k, str) and isinstance(v, Tensor) for k, v in obj.items())
    save_file(tensors, path, None if flat else {STRUCTURE_KEY: json.dumps(layout)})


def load(path: str | os.PathLike, device: Any = None) -> dict[str, Any]:
    """Read what ``save`` wrote (any safetensors file: a flat dict of its tensors)."""
    metadata = load_file_metadata(path)
    tensors = load_file(path, device)
    if STRUCTURE_KEY not in metadata:
        return tensors
    try:
        layout = json.loads(metadata[STRUCTURE_KEY])
        return _decode(layout, tensors)
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise SafetensorsError(f"{os.fspath(path)}: the {STRUCTURE_KEY!r} metadata is corrupt ({exc})") from None


def _encode(value: Any, name: str, tensors: dict[str, Tensor]) -> Any:
    """The JSON layout of ``value``; its tensors go into ``tensors`` under their dotted names."""
    if isinstance(value, Tensor):
        if name in tensors:
            raise SafetensorsError(f"save: two entries are both named {name!r} once keys are joined with dots")
        tensors[name] = value
        return {"$t": name}
    if isinstance(value, Mapping):
        items = [(k, _encode(v, f"{name}.{k}" if name else str(k), tensors)) for k, v in value.items()]
        if all(isinstance(k, str) and not k.startswith("$") for k, _ in items):
            return dict(items)
        if not all(isinstance(k, (str, int, float, bool)) or k is None for k, _ in items):
            raise SafetensorsError(f"save: dict keys under {name or 'the top level'!r} must be str, int, float, "
                                   "bool or None")
        return {"$d": [[k, v] for k, v in items]}
    if isinstance(value, (list, tuple)):
        encoded = [_encode(v, f"{name}.{i}" if name else str(i), tensors) for i, v in enumerate(value)]
        return encoded if isinstance(value, list) else {"$tuple": encoded}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, np.generic):
        return value.item()
    raise SafetensorsError(f"save: {name or 'the object'!r} is a {type(value).__name__}; expected tensors, "
                           "numbers, strings, None, and dicts, lists and tuples of them (zyx never pickles)")


def _decode(layout: Any, tensors: dict[str, Tensor]) -> Any:
    if isinstance(layout, list):
        return [_decode(v, tensors) for v in layout]
    if isinstance(layout, dict):
        if "$t" in layout:
            return tensors[layout["$t"]]
        if "$tuple" in layout:
            return tuple(_decode(v, tensors) for v in layout["$tuple"])
        if "$d" in layout:
            return {k: _decode(v, tensors) for k, v in layout["$d"]}
        return {k: _decode(v, tensors) for k, v in layout.items()}
    return layout
