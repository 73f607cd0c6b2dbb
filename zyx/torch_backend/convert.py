"""Tensors across the torch/zyx border: torch CPU tensors in, zyx tensors out, and back.

Uploads are cached per torch tensor object and its version counter (``t._version``, which every in-place
write bumps), so a parameter crosses once and again only after torch changed it (an optimizer step), and
a value the compiled forward handed to torch (a tensor saved for backward) comes back as the zyx tensor it
was, without an upload.
"""
from __future__ import annotations

import weakref
from typing import Any

from zyx import dtype as dtypes
from zyx.dtype import DType
from zyx.frontend.dlpack import from_dlpack

_TORCH_TO_ZYX: dict[str, DType] = {
    "bool": dtypes.bool_, "uint8": dtypes.uint8, "int8": dtypes.int8, "int16": dtypes.int16,
    "uint16": dtypes.uint16, "int32": dtypes.int32, "uint32": dtypes.uint32, "int64": dtypes.int64,
    "uint64": dtypes.uint64, "float16": dtypes.float16, "bfloat16": dtypes.bfloat16, "float32": dtypes.float32,
    "float64": dtypes.float64, "float8_e4m3fn": dtypes.float8_e4m3, "float8_e5m2": dtypes.float8_e5m2,
}


def zyx_dtype(torch_dtype: Any) -> DType:
    """The zyx dtype of a ``torch.dtype``; NotImplementedError for one zyx lacks (complex, quantized)."""
    name = str(torch_dtype).removeprefix("torch.")
    found = _TORCH_TO_ZYX.get(name)
    if found is None:
        raise NotImplementedError(f"torch dtype {torch_dtype} has no zyx equivalent")
    return found


class UploadCache:
    """zyx tensors of torch tensors, valid while the torch tensor lives with the same version."""

    def __init__(self) -> None:
        self._entries: dict[int, tuple[weakref.ref, int, Any]] = {}

    def get(self, t: Any) -> Any:
        """The zyx tensor remembered for ``t`` at its current version, or None."""
        entry = self._entries.get(id(t))
        if entry is not None and entry[0]() is t and entry[1] == t._version:
            return entry[2]
        return None

    def to_zyx(self, t: Any, device: Any) -> Any:
        z = self.get(t)
        if z is not None:
            return z
        z = from_dlpack(t.detach(), device=device) if t.device.type == "cpu" else None
        if z is None:
            raise NotImplementedError(f"the zyx backend takes CPU tensors; got one on {t.device}")
        self.remember(t, z)
        return z

    def remember(self, t: Any, z: Any) -> None:
        """Note that the torch tensor ``t`` holds ``z``'s values (dropped when ``t`` dies)."""
        key = id(t)
        self._entries[key] = (weakref.ref(t, lambda _r, key=key: self._entries.pop(key, None)), t._version, z)

    def clear(self) -> None:
        """Forget every upload (their device buffers go back to the pool as their last users drop them)."""
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


def to_torch(z: Any, cache: UploadCache) -> Any:
    """A torch CPU tensor holding ``z``'s values (remembered, so it comes back without an upload)."""
    import torch

    t = torch.from_dlpack(z)
    cache.remember(t, z)
    return t
