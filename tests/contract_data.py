"""Test data for the contract kernel tests: raw-bit inputs and the views they are seen through. It lives
in tests/ (the root conftest's folder, on sys.path) so tests/contracts and tests/kernels/contracts import it."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

import zyx
from zyx.dtype import ALL_DTYPES, DType

UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}

#: A few NaN bit patterns per float width (quiet and signalling, with payloads and sign).
NAN_BITS = {
    "float16": [0x7E01, 0x7C01, 0xFE00],
    "bfloat16": [0x7FC1, 0x7F81, 0xFFC0],
    "float32": [0x7FC00001, 0x7F800001, 0xFFC00000],
    "float64": [0x7FF8000000000001, 0x7FF0000000000001, 0xFFF8000000000000],
    "float8_e4m3": [0x7F, 0xFF],
    "float8_e5m2": [0x7E, 0x7D, 0xFE],
}

DTYPES: tuple[DType, ...] = ALL_DTYPES
DTYPE_IDS = [d.name for d in DTYPES]


def raw(shape: tuple[int, ...], dtype: DType, seed: int = 0, finite: bool = False) -> np.ndarray:
    """Random raw bit patterns of ``dtype`` (NaN payloads included), as a host array.

    ``finite``: ordinary values in [-1, 1) instead (for arithmetic kernels).
    """
    rng = np.random.default_rng(seed)
    if finite:
        return (rng.random(shape) * 2 - 1).astype(dtype.numpy)
    if dtype.is_bool:
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    width = UINT[dtype.itemsize]
    bits = rng.integers(0, np.iinfo(width).max, size=shape, dtype=width, endpoint=True)
    flat = bits.reshape(-1)
    for i, nan in enumerate(NAN_BITS.get(dtype.name, [])[: flat.size]):
        flat[(i * 7) % flat.size] = nan
    return bits.view(dtype.numpy)


def on_device(a: np.ndarray, device: zyx.Device) -> zyx.Tensor:
    """Upload a host array keeping its dtype."""
    return zyx.from_numpy(np.ascontiguousarray(a), device=device)


# Layouts: each builds (zyx view, numpy view) of a target ``shape`` from raw data.
def _contiguous(shape, dtype, device, seed, finite=False):
    a = raw(shape, dtype, seed, finite)
    return on_device(a, device), a


def _strided(shape, dtype, device, seed, finite=False):
    """Every other element of a wider last axis."""
    big = raw(shape[:-1] + (2 * shape[-1] + 1,), dtype, seed, finite)
    return on_device(big, device)[..., 1::2], big[..., 1::2]


def _transposed(shape, dtype, device, seed, finite=False):
    rev = tuple(reversed(shape))
    a = raw(rev, dtype, seed, finite)
    order = tuple(reversed(range(len(shape))))
    return on_device(a, device).permute(*order), a.transpose(order)


def _offset(shape, dtype, device, seed, finite=False):
    """A view starting inside its buffer (leading rows cut)."""
    big = raw((shape[0] + 2,) + shape[1:], dtype, seed, finite)
    return on_device(big, device)[2:], big[2:]


def _broadcast(shape, dtype, device, seed, finite=False):
    """Stride 0 on the leading axis."""
    a = raw((1,) + shape[1:], dtype, seed, finite)
    return on_device(a, device).expand(*shape), np.broadcast_to(a, shape)


def _reversed(shape, dtype, device, seed, finite=False):
    a = raw(shape, dtype, seed, finite)
    return on_device(a, device)[::-1], a[::-1]


LAYOUTS: dict[str, Callable[..., tuple[zyx.Tensor, np.ndarray]]] = {
    "contiguous": _contiguous,
    "strided": _strided,
    "transposed": _transposed,
    "offset": _offset,
    "broadcast": _broadcast,
    "reversed": _reversed,
}


def make(layout: str, shape: tuple[int, ...], dtype: DType, device: zyx.Device, seed: int = 0,
         finite: bool = False) -> tuple[Any, Any]:
    """(zyx tensor, numpy array) holding the same values through the named layout."""
    return LAYOUTS[layout](tuple(shape), dtype, device, seed, finite)
