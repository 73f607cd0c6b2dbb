"""Strided views: shape, strides (in elements, may be negative or 0) and an offset.

Every movement op of the tensor API that can be expressed as index arithmetic is a
function here returning a new ``View``; none of them touches memory.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from zyx.errors import IndexOutOfRange, ShapeError

_STRIDES_CACHE: dict[tuple[int, ...], tuple[int, ...]] = {}
_CONTIGUOUS_CACHE: dict[tuple[int, ...], View] = {}
_EXPAND_CACHE: dict[tuple, View] = {}  # (shape, strides, offset, target shape) -> expanded view
_CACHE_LIMIT = 4096


def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Row-major strides of a dense tensor of ``shape``."""
    try:
        got = _STRIDES_CACHE.get(shape)
    except TypeError:  # an unhashable shape (a list)
        return _contiguous_strides(shape)
    if got is None:
        got = _contiguous_strides(shape)
        if type(shape) is tuple and all(type(d) is int for d in shape):
            if len(_STRIDES_CACHE) >= _CACHE_LIMIT:
                _STRIDES_CACHE.clear()
            _STRIDES_CACHE[shape] = got
    return got


def _contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, acc = [], 1
    for dim in reversed(shape):
        strides.append(acc if dim != 1 else 0)
        acc *= max(dim, 1)
    return tuple(reversed(strides))


def normalize_dim(dim: int, ndim: int, what: str = "dim") -> int:
    """``dim`` in ``[-ndim, ndim)`` mapped to ``[0, ndim)``; IndexError-compatible otherwise."""
    if type(dim) is int and -ndim <= dim < ndim:  # the common case (ndim > 0), without the checks below
        return dim % ndim
    if not isinstance(dim, int) or isinstance(dim, bool):
        raise ShapeError(f"{what} must be an int, got {dim!r}")
    lo, hi = -max(ndim, 1), max(ndim, 1) - 1
    if not lo <= dim <= hi:
        raise IndexOutOfRange(f"{what} {dim} is out of range for a tensor of rank {ndim} "
                              f"(expected a value in [{lo}, {hi}])")
    return dim % max(ndim, 1)


@dataclass(frozen=True)
class View:
    """A strided window onto a flat buffer; sizes, strides and offset count elements."""

    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int = 0

    @staticmethod
    def contiguous(shape: tuple[int, ...]) -> View:
        # views are immutable: one shared instance per (int) shape
        v = _CONTIGUOUS_CACHE.get(shape) if type(shape) is tuple else None
        if v is not None:
            return v
        shape = tuple(shape)
        v = View(shape, contiguous_strides(shape), 0)
        if all(type(d) is int for d in shape):
            if len(_CONTIGUOUS_CACHE) >= _CACHE_LIMIT:
                _CONTIGUOUS_CACHE.clear()
            _CONTIGUOUS_CACHE[shape] = v
        return v

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def is_contiguous(self) -> bool:
        """Dense row-major from offset 0 (size-1 dims may carry any stride)."""
        if self.numel == 0:
            return True
        return self.offset == 0 and all(
            s == c for s, c, d in zip(self.strides, contiguous_strides(self.shape), self.shape) if d != 1
        )

    @property
    def is_dense(self) -> bool:
        """Row-major dense, possibly starting at a non-zero offset."""
        return View(self.shape, self.strides, 0).is_contiguous

    @property
    def has_broadcast(self) -> bool:
        return any(s == 0 and d > 1 for s, d in zip(self.strides, self.shape))

    @property
    def has_negative_strides(self) -> bool:
        return any(s < 0 for s in self.strides)

    def span(self) -> tuple[int, int]:
        """The lowest and highest element index this view touches (for empty views: (offset, offset-1))."""
        if self.numel == 0:
            return self.offset, self.offset - 1
        lo = self.offset + sum((d - 1) * s for d, s in zip(self.shape, self.strides) if s < 0)
        hi = self.offset + sum((d - 1) * s for d, s in zip(self.shape, self.strides) if s > 0)
        return lo, hi

    # -- movement ops ----------------------------------------------------------
    def permute(self, dims: tuple[int, ...]) -> View:
        if len(dims) != self.ndim:
            raise ShapeError(f"permute: expected {self.ndim} dims for a rank-{self.ndim} tensor, got {len(dims)}")
        norm = tuple(normalize_dim(d, self.ndim) for d in dims)
        if sorted(norm) != list(range(self.ndim)):
            raise ShapeError(f"permute: dims {tuple(dims)} are not a permutation of {tuple(range(self.ndim))}")
        return View(tuple(self.shape[d] for d in norm), tuple(self.strides[d] for d in norm), self.offset)

    def expand(self, shape: tuple[int, ...]) -> View:
        key = (self.shape, self.strides, self.offset, shape)
        try:
            got = _EXPAND_CACHE.get(key)
        except TypeError:  # a list shape
            return self._expand(shape)
        if got is None:
            got = self._expand(shape)
            if len(_EXPAND_CACHE) >= _CACHE_LIMIT:
                _EXPAND_CACHE.clear()
            _EXPAND_CACHE[key] = got
        return got

    def _expand(self, shape: tuple[int, ...]) -> View:
        if len(shape) < self.ndim:
            raise ShapeError(f"expand: target shape {shape} has fewer dims than the tensor's shape {self.shape}")
        lead = len(shape) - self.ndim
        new_shape, new_strides = list(shape[:lead]), [0] * lead
        if any(d < 0 for d in shape[:lead]):
            raise ShapeError(f"expand: -1 is not allowed in the new leading dims of {shape}")
        for size, stride, want in zip(self.shape, self.strides, shape[lead:]):
            if want == -1:
                want = size
            if want == size:
                new_shape.append(size)
                new_strides.append(stride)
            elif size == 1 and want >= 0:
                new_shape.append(want)
                new_strides.append(0)
            else:
                raise ShapeError(f"expand: cannot expand shape {self.shape} to {shape}: "
                                 f"a dim of size {size} can only expand from size 1")
        return View(tuple(new_shape), tuple(new_strides), self.offset)

    def reshape(self, shape: tuple[int, ...]) -> View | None:
        """This view reshaped without copying, or None when the strides do not allow it."""
        if math.prod(shape) != self.numel:
            raise ShapeError(f"reshape: cannot reshape {self.shape} ({self.numel} elements) to {shape}")
        if self.numel == 0 or self.is_contiguous:
            return View(shape, contiguous_strides(shape), self.offset if self.numel else 0)
        # Group old dims into chunks that are each contiguous among themselves, then
        # split every chunk over the new dims that cover exactly its element count.
        old = [(d, s) for d, s in zip(self.shape, self.strides) if d != 1]
        new_strides: list[int] = []
        oi = 0
        ni = 0
        while ni < len(shape):
            if shape[ni] == 1:
                new_strides.append(0)
                ni += 1
                continue
            if oi >= len(old):
                return None
            chunk_size, chunk_stride = old[oi]
            oi += 1
            while oi < len(old) and old[oi - 1][1] == old[oi][0] * old[oi][1]:
                chunk_size *= old[oi][0]
                chunk_stride = old[oi][1]
                oi += 1
            # distribute new dims over this chunk (row-major within the chunk)
            group, prod = [], 1
            while ni < len(shape) and prod < chunk_size:
                group.append(shape[ni])
                prod *= shape[ni]
                ni += 1
            if prod != chunk_size:
                return None
            acc = chunk_stride
            strides_rev = []
            for d in reversed(group):
                strides_rev.append(acc)
                acc *= d
            new_strides.extend(reversed(strides_rev))
            while ni < len(shape) and shape[ni] == 1 and oi >= len(old):
                new_strides.append(0)
                ni += 1
        if oi != len(old):
            return None
        return View(tuple(shape), tuple(new_strides), self.offset)

    def slice(self, dim: int, start: int, stop: int, step: int) -> View:
        """Python-style ``[start:stop:step]`` on ``dim`` (indices already normalized by ``slice.indices``)."""
        length = len(range(start, stop, step))
        offset = self.offset + (start * self.strides[dim] if length else 0)
        shape = self.shape[:dim] + (length,) + self.shape[dim + 1:]
        strides = self.strides[:dim] + (self.strides[dim] * step,) + self.strides[dim + 1:]
        return View(shape, strides, offset)

    def select(self, dim: int, index: int) -> View:
        """Drop ``dim`` by taking element ``index`` (already normalized)."""
        return View(self.shape[:dim] + self.shape[dim + 1:], self.strides[:dim] + self.strides[dim + 1:],
                    self.offset + index * self.strides[dim])

    def unsqueeze(self, dim: int) -> View:
        return View(self.shape[:dim] + (1,) + self.shape[dim:], self.strides[:dim] + (0,) + self.strides[dim:],
                    self.offset)

    def squeeze(self, dims: tuple[int, ...]) -> View:
        keep = [i for i in range(self.ndim) if not (i in dims and self.shape[i] == 1)]
        return View(tuple(self.shape[i] for i in keep), tuple(self.strides[i] for i in keep), self.offset)

    # -- lowering helpers --------------------------------------------------------
    def merged(self) -> View:
        """Equivalent view with adjacent dims merged where the strides allow (fewer index ops)."""
        dims = [(d, s) for d, s in zip(self.shape, self.strides) if d != 1]
        if not dims:
            return View((), (), self.offset) if self.numel else View((0,), (0,), self.offset)
        out = [dims[0]]
        for d, s in dims[1:]:
            pd, ps = out[-1]
            if ps == d * s:
                out[-1] = (pd * d, s)
            else:
                out.append((d, s))
        return View(tuple(d for d, _ in out), tuple(s for _, s in out), self.offset)
