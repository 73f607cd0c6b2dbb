"""More movement and shape ops (API.md "More movement and shape ops") and ``ShapeOpsMixin``.

Views wherever the result is a strided window on the input (``movedim``, ``swapaxes``, ``diagonal``,
``meshgrid``); ``repeat``/``tile``/``repeat_interleave`` with int repeats are an expand seen through a
reshape, a lazy copy that fuses with its readers; ``repeat_interleave`` with a tensor of repeats reads
the repeats (its size depends on them) and gathers (``index_map``); ``diag`` of a vector places it on
the flattened matrix with stride ``n + 1`` (lazy pads, no scatter). Gradients come by composition.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from zyx import dtype as dtypes
from zyx.dtype import to_dtype
from zyx.errors import DTypeError, IndexOutOfRange, ShapeError
from zyx.frontend.args import shape_arg
from zyx.frontend.autograd.engine import needs_grad, record
from zyx.frontend.autograd.rules import place
from zyx.frontend.base import TensorBase
from zyx.frontend.creation import from_host, pinned_as, zeros
from zyx.frontend.index_map import take_along
from zyx.ir.view import View, normalize_dim


def _dims_arg(dims: Any, ndim: int, what: str) -> list[int]:
    items = [dims] if isinstance(dims, (int, np.integer)) and not isinstance(dims, bool) else list(dims)
    out = [normalize_dim(int(d) if isinstance(d, np.integer) else d, ndim, what) for d in items]
    if len(set(out)) != len(out):
        raise ShapeError(f"{what}: repeated dim in {tuple(items)}")
    return out


def movedim(x: Any, source: Any, destination: Any) -> Any:
    """``x`` with the dims ``source`` moved to positions ``destination`` (the others keep their order);
    a view."""
    src = _dims_arg(source, x.ndim, "movedim source")
    dst = _dims_arg(destination, x.ndim, "movedim destination")
    if len(src) != len(dst):
        raise ShapeError(f"movedim: source {source} and destination {destination} must name as many dims")
    if x.ndim == 0:
        return x
    order: list[int | None] = [None] * x.ndim
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(d for d in range(x.ndim) if d not in src)
    perm = [next(rest) if o is None else o for o in order]
    return x.permute(*perm)


def swapaxes(x: Any, axis0: int, axis1: int) -> Any:
    """``x`` with two dims swapped (``transpose``; a view)."""
    return x.transpose(axis0, axis1)


def repeat(x: Any, *sizes: Any) -> Any:
    """``x`` tiled ``sizes[i]`` times along each dim (leading extra sizes add dims), like
    ``Tensor.repeat``: an expand read through a reshape (one lazy copy that fuses)."""
    reps = shape_arg(sizes, "repeat sizes")
    if len(reps) < x.ndim:
        raise ShapeError(f"repeat: got {len(reps)} repeat sizes for a tensor of rank {x.ndim} "
                         "(expected at least one per dim)")
    if any(r < 0 for r in reps):
        raise ShapeError(f"repeat: repeat sizes must be non-negative, got {reps}")
    shape = (1,) * (len(reps) - x.ndim) + tuple(x.shape)
    pairs = [v for s in shape for v in (1, s)]
    big = [v for r, s in zip(reps, shape) for v in (r, s)]
    out_shape = tuple(r * s for r, s in zip(reps, shape))
    return x.reshape(pairs).expand(*big).reshape(out_shape)


def tile(x: Any, *dims: Any) -> Any:
    """``x`` repeated ``dims[i]`` times along each dim; fewer sizes than dims are padded with 1s in front."""
    reps = shape_arg(dims, "tile dims")
    reps = (1,) * (x.ndim - len(reps)) + reps
    return repeat(x, *reps)


def repeat_interleave(x: Any, repeats: Any, dim: int | None = None, output_size: int | None = None) -> Any:
    """Each element repeated ``repeats`` times along ``dim`` (flattened when None). ``repeats`` is an int
    (a view read through a lazy copy) or an integer tensor of one count per element (read back: the
    result's size depends on it; then one gather kernel)."""
    if dim is None:
        x, d = x.reshape(-1), 0
    else:
        d = normalize_dim(dim, x.ndim)
        if x.ndim == 0:
            x = x.reshape(1)
    length = x.shape[d]
    if isinstance(repeats, TensorBase):
        if not repeats.dtype.is_int:
            raise DTypeError(f"repeat_interleave: repeats must be an integer tensor, got {repeats.dtype.name}")
        if repeats.ndim > 1:
            raise ShapeError(f"repeat_interleave: repeats must be 0-D or 1-D, got shape {repeats.shape}")
        counts = repeats.numpy().astype(np.int64).reshape(-1)
        if counts.size == 1 and length != 1:
            counts = np.full(length, counts[0], np.int64)
        if counts.size != length:
            raise ShapeError(f"repeat_interleave: repeats must have the same size as input along dim {d}: "
                             f"got {counts.size} repeats for size {length}")
    else:
        if isinstance(repeats, bool) or not isinstance(repeats, (int, np.integer)):
            raise DTypeError(f"repeat_interleave: repeats must be an int or an integer tensor, got {repeats!r}")
        counts = None
        r = int(repeats)
        if r < 0:
            raise ShapeError(f"repeat_interleave: repeats must be non-negative, got {r}")
    if counts is not None and (counts < 0).any():
        raise ShapeError(f"repeat_interleave: repeats must be non-negative, got {counts.min()}")
    total = int(counts.sum()) if counts is not None else r * length
    if output_size is not None and output_size != total:
        raise ShapeError(f"repeat_interleave: output_size {output_size} does not match the repeats' total {total}")
    if counts is None:
        shape = list(x.shape)
        wide = x.unsqueeze(d + 1).expand(*shape[:d + 1], r, *shape[d + 1:])
        return wide.reshape(*shape[:d], total, *shape[d + 1:])
    return take_along(x, d, np.repeat(np.arange(length), counts))


def repeat_interleave_fn(x: Any, repeats: Any = None, dim: int | None = None, output_size: int | None = None) -> Any:
    """``zyx.repeat_interleave(x, repeats, dim)``; ``zyx.repeat_interleave(repeats)`` alone gives each
    index ``i`` repeated ``repeats[i]`` times (PyTorch's one-argument form)."""
    if repeats is None:
        return _repeat_index(x)
    return repeat_interleave(x, repeats, dim, output_size)


def _repeat_index(repeats: Any) -> Any:
    if not isinstance(repeats, TensorBase) or repeats.ndim != 1 or not repeats.dtype.is_int:
        raise ShapeError("repeat_interleave(repeats): expected a 1-D integer tensor of counts")
    counts = repeats.numpy().astype(np.int64)
    if (counts < 0).any():
        raise ShapeError(f"repeat_interleave: repeats must be non-negative, got {counts.min()}")
    out = np.repeat(np.arange(counts.size, dtype=np.int64), counts)
    return pinned_as(from_host(out, repeats.dtype, repeats.device), repeats)


def _diag_geometry(s1: int, s2: int, offset: int) -> tuple[int, int, int]:
    """(length, first row, first column) of diagonal ``offset`` of an ``s1 x s2`` matrix."""
    r0, c0 = max(-offset, 0), max(offset, 0)
    return max(min(s1 - r0, s2 - c0), 0), r0, c0


def diagonal(x: Any, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Any:
    """The diagonal ``offset`` of the (``dim1``, ``dim2``) planes as a new last dim (a strided view)."""
    if x.ndim < 2:
        # dim1/dim2 out of range for it: an IndexError too, as PyTorch raises
        raise IndexOutOfRange(f"diagonal: expected a tensor of rank >= 2, got rank {x.ndim}")
    a, b = normalize_dim(dim1, x.ndim, "dim1"), normalize_dim(dim2, x.ndim, "dim2")
    if a == b:
        raise ShapeError(f"diagonal: dim1 and dim2 cannot be the same dim ({dim1}, {dim2})")
    v = x._view
    s1, s2 = v.shape[a], v.shape[b]
    length, r0, c0 = _diag_geometry(s1, s2, int(offset))
    keep = [d for d in range(x.ndim) if d not in (a, b)]
    start = v.offset + (r0 * v.strides[a] + c0 * v.strides[b] if length else 0)
    view = View(tuple(v.shape[d] for d in keep) + (length,),
                tuple(v.strides[d] for d in keep) + (v.strides[a] + v.strides[b],), start)
    out = x._with_view(view)
    if x._ag is None:
        return out
    if not needs_grad(x):
        return out
    shape = x.shape
    return record("diagonal", out, [x], lambda g: (_diagonal_backward(g, shape, int(offset), a, b),))


def _embed_diagonal(g: Any, s1: int, s2: int, offset: int) -> Any:
    """``g`` (..., L) placed on diagonal ``offset`` of zero ``s1 x s2`` matrices: (..., s1, s2). The
    diagonal is a stride ``s2 + 1`` line through the flattened matrix, so this is lazy pads (no scatter)."""
    length, r0, c0 = _diag_geometry(s1, s2, offset)
    lead = tuple(g.shape[:-1])
    if length == 0 or s1 * s2 == 0:
        return zeros(*lead, s1, s2, dtype=g.dtype, device=g.device)
    flat = place(g, g.ndim - 1, r0 * s2 + c0, s1 * s2, s2 + 1)
    return flat.reshape(*lead, s1, s2)


def _diagonal_backward(g: Any, shape: tuple[int, ...], offset: int, a: int, b: int) -> Any:
    full = _embed_diagonal(g, shape[a], shape[b], offset)
    keep = [d for d in range(len(shape)) if d not in (a, b)]
    order = keep + [a, b]  # the dims of ``full`` name these input dims
    inverse = [order.index(d) for d in range(len(shape))]
    return full.permute(*inverse)


def diag(x: Any, diagonal: int = 0) -> Any:
    """A 1-D ``x`` as the diagonal ``diagonal`` of a square matrix, or a copy of diagonal ``diagonal``
    of a 2-D ``x``."""
    if x.ndim == 1:
        n = x.shape[0] + abs(int(diagonal))
        return _embed_diagonal(x, n, n, int(diagonal))
    if x.ndim == 2:
        return _diagonal(x, diagonal, 0, 1).clone()
    raise ShapeError(f"diag: expected a 1-D or 2-D tensor, got rank {x.ndim}")


_diagonal = diagonal  # ``diag``'s parameter and the method shadow the name


def meshgrid(*tensors: Any, indexing: str = "ij") -> tuple:
    """Coordinate grids of 1-D (or 0-D) tensors, as broadcast views; ``indexing="xy"`` swaps the first
    two output dims (NumPy's default), ``"ij"`` keeps them (PyTorch's)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing not in ("ij", "xy"):
        raise ShapeError(f"meshgrid: indexing must be 'ij' or 'xy', got {indexing!r}")
    if not tensors:
        raise ShapeError("meshgrid: expected at least one tensor")
    for t in tensors:
        if t.ndim > 1:
            raise ShapeError(f"meshgrid: expected 0-D or 1-D tensors, got shape {t.shape}")
        if t.dtype is not tensors[0].dtype:
            raise DTypeError(f"meshgrid: expected tensors of one dtype, got {tensors[0].dtype.name} and "
                             f"{t.dtype.name}")
    flat = [t.reshape(-1) for t in tensors]
    swap = indexing == "xy" and len(flat) >= 2
    sizes = [t.shape[0] for t in flat]
    if swap:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    out = []
    for i, t in enumerate(flat):
        pos = (1 - i if i < 2 else i) if swap else i
        col = [1] * len(flat)
        col[pos] = t.shape[0]
        out.append(t.reshape(col).expand(*sizes))
    return tuple(out)


def _tri_indices(row: int, col: int, offset: int, dtype: Any, device: Any, lower: bool) -> Any:
    from zyx.backend.device import resolve

    for name, v in (("row", row), ("col", col)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
            raise ShapeError(f"{'tril' if lower else 'triu'}_indices: {name} must be a non-negative int, got {v!r}")
    dt = to_dtype(dtype)
    if not dt.is_int:
        raise DTypeError(f"{'tril' if lower else 'triu'}_indices: dtype must be an integer dtype, got {dt.name}")
    r, c = (np.tril_indices if lower else np.triu_indices)(row, offset, col)
    out = from_host(np.stack([r, c]).astype(np.int64).reshape(2, -1), dt, resolve(device))
    if device is not None:
        out._data.pinned = True
    return out


def tril_indices(row: int, col: int, offset: int = 0, dtype: Any = dtypes.int64, device: Any = None) -> Any:
    """The (2, N) row and column indices of the lower triangle (``j <= i + offset``), row-major."""
    return _tri_indices(row, col, offset, dtype, device, True)


def triu_indices(row: int, col: int, offset: int = 0, dtype: Any = dtypes.int64, device: Any = None) -> Any:
    """The (2, N) row and column indices of the upper triangle (``j >= i + offset``), row-major."""
    return _tri_indices(row, col, offset, dtype, device, False)


def unflatten(x: Any, dim: int, sizes: Any) -> Any:
    """Split dim ``dim`` into ``sizes`` (one ``-1`` allowed), as ``torch.Tensor.unflatten``: a reshape."""
    d = normalize_dim(dim, x.ndim)
    sizes = tuple(shape_arg((sizes,) if isinstance(sizes, int) else tuple(sizes)))
    if not sizes:
        raise ShapeError("unflatten: sizes must be non-empty")
    if sizes.count(-1) > 1:
        raise ShapeError(f"unflatten: only one dimension can be inferred, got sizes {sizes}")
    known = int(np.prod([s for s in sizes if s != -1]))
    n = x.shape[d]
    if -1 in sizes:
        if known == 0 or n % known:
            raise ShapeError(f"unflatten: sizes {sizes} cannot split dim {dim} of size {n}")
        sizes = tuple(n // known if s == -1 else s for s in sizes)
    elif known != n:
        raise ShapeError(f"unflatten: sizes {sizes} multiply to {known}, not dim {dim}'s size {n}")
    return x.reshape(*x.shape[:d], *sizes, *x.shape[d + 1:])


class ShapeOpsMixin(TensorBase):
    """repeat, tile, repeat_interleave, movedim, swapaxes, diagonal, diag, dot, outer, bmm as methods."""

    __slots__ = ()

    def repeat(self, *sizes: Any) -> Any:
        """Tile ``sizes[i]`` times along each dim (``Tensor.repeat``)."""
        return repeat(self, *sizes)

    def tile(self, *dims: Any) -> Any:
        """Like ``repeat``; fewer sizes than dims are padded with 1s in front."""
        return tile(self, *dims)

    def repeat_interleave(self, repeats: Any, dim: int | None = None, output_size: int | None = None) -> Any:
        """Each element repeated ``repeats`` times along ``dim`` (flattened when None)."""
        return repeat_interleave(self, repeats, dim, output_size)

    def movedim(self, source: Any, destination: Any) -> Any:
        """Move dims ``source`` to positions ``destination`` (a view)."""
        return movedim(self, source, destination)

    moveaxis = movedim

    def unflatten(self, dim: int, sizes: Any) -> Any:
        """Split dim ``dim`` into ``sizes`` (one ``-1`` allowed)."""
        return unflatten(self, dim, sizes)

    def swapaxes(self, axis0: int, axis1: int) -> Any:
        """Swap two dims (alias of ``transpose``)."""
        return self.transpose(axis0, axis1)

    swapdims = swapaxes

    def diagonal(self, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Any:
        """Diagonal ``offset`` of the (dim1, dim2) planes as the last dim (a view)."""
        return _diagonal(self, offset, dim1, dim2)

    def diag(self, diagonal: int = 0) -> Any:
        """Vector to diagonal matrix, or a matrix's diagonal (a copy)."""
        return diag(self, diagonal)
