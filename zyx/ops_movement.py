"""Movement additions (API.md "Movement and indexing"): pad, stack, split, chunk.

``pad`` is lazy: a pad node whose reads are guarded by a validity condition, so it
fuses with the work around it. ``split``/``chunk`` are views; ``stack`` concatenates
unsqueezed views through ``zyx.cat``.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from zyx import lazy
from zyx.errors import ShapeError
from zyx.ir.view import normalize_dim
from zyx.ops_elementwise import _scalar_value, from_node


def pad(x: Any, pads: Sequence[int], value: Any = 0):
    """Pad with ``value``; ``pads`` in ``F.pad`` order (last dim first: before, after, ...).

    Negative amounts crop.
    """
    pads = tuple(int(p) for p in pads)
    if len(pads) % 2 or len(pads) // 2 > x.ndim:
        raise ShapeError(f"pad: expected an even number of pad amounts for at most {x.ndim} dims, got {pads}")
    per_dim = [(0, 0)] * x.ndim
    for i in range(len(pads) // 2):
        per_dim[x.ndim - 1 - i] = (pads[2 * i], pads[2 * i + 1])
    # negative amounts crop first
    for d, (lo, hi) in enumerate(per_dim):
        if lo < 0 or hi < 0:
            start = -lo if lo < 0 else 0
            stop = x.shape[d] + (hi if hi < 0 else 0)
            if stop < start:
                raise ShapeError(f"pad: cropping {(lo, hi)} exceeds dim {d} of size {x.shape[d]}")
            x = x.narrow(d, start, stop - start)
            per_dim[d] = (max(lo, 0), max(hi, 0))
    if all(lo == 0 and hi == 0 for lo, hi in per_dim):
        return x
    v = _scalar_value(value, x.dtype)
    node = lazy.pad(lazy.Src(x._data, x._view, x.dtype), tuple(per_dim), v, x.device)
    return from_node(node)


def stack(tensors: Sequence[Any], dim: int = 0):
    """Join same-shaped tensors along a new dim ``dim``."""
    tensors = list(tensors)
    if not tensors:
        raise ShapeError("stack expects a non-empty sequence of tensors")
    shape = tensors[0].shape
    for t in tensors[1:]:
        if t.shape != shape:
            raise ShapeError(f"stack expects each tensor to be equal size, got {shape} and {t.shape}")
    d = normalize_dim(dim, len(shape) + 1)
    from zyx.contracts.ops import cat

    return cat([t.unsqueeze(d) for t in tensors], d)


def split(x: Any, split_size_or_sections: Any, dim: int = 0) -> tuple:
    """Views of ``x`` along ``dim``: chunks of one size (last may be smaller) or the listed sizes."""
    d = normalize_dim(dim, x.ndim)
    size = x.shape[d]
    if isinstance(split_size_or_sections, int):
        step = split_size_or_sections
        if step <= 0:
            raise ShapeError(f"split: split_size must be positive, got {step}")
        sizes = [min(step, size - s) for s in range(0, size, step)] or [0]
    else:
        sizes = [int(s) for s in split_size_or_sections]
        if sum(sizes) != size or any(s < 0 for s in sizes):
            raise ShapeError(f"split: sizes {sizes} do not add up to dim {d} of size {size}")
    out, start = [], 0
    for s in sizes:
        out.append(x.narrow(d, start, s))
        start += s
    return tuple(out)


def chunk(x: Any, chunks: int, dim: int = 0) -> tuple:
    """``chunks`` (at most) nearly equal views along ``dim``."""
    if chunks <= 0:
        raise ShapeError(f"chunk: chunks must be positive, got {chunks}")
    d = normalize_dim(dim, x.ndim)
    size = x.shape[d]
    if size == 0:  # like PyTorch: ``chunks`` empty pieces
        return tuple(x.narrow(d, 0, 0) for _ in range(chunks))
    return split(x, -(-size // chunks), dim)


def install(Tensor: type) -> None:
    Tensor.pad = pad
    Tensor.split = split
    Tensor.chunk = chunk
