"""``IndexingMixin``: advanced indexing, gather and scatter as tensor methods (API.md "Advanced indexing,
gather and scatter"); basic indexing keeps its view path (``MovementMixin.__getitem__``)."""
from __future__ import annotations

from typing import Any

from zyx.frontend.advanced_index import getitem, index_put, index_put_, is_advanced, setitem
from zyx.frontend.base import TensorBase
from zyx.frontend.gather_scatter import (
    gather,
    index_select,
    masked_select,
    nonzero,
    scatter,
    scatter_add,
    scatter_inplace,
    scatter_reduce,
    take_along_dim,
)


class IndexingMixin(TensorBase):
    """Advanced indexing and the gather/scatter family as methods (``__getitem__``/``__setitem__``
    hand basic indices to the view path)."""

    __slots__ = ()

    def __getitem__(self, index: Any) -> Any:
        if is_advanced(index):
            return getitem(self, index)
        return super().__getitem__(index)

    def __setitem__(self, index: Any, value: Any) -> None:
        if is_advanced(index):
            setitem(self, index, value)
            return
        super().__setitem__(index, value)

    def gather(self, dim: int, index: Any) -> Any:
        return gather(self, dim, index)

    def index_select(self, dim: int, index: Any) -> Any:
        return index_select(self, dim, index)

    def take_along_dim(self, indices: Any, dim: int | None = None) -> Any:
        return take_along_dim(self, indices, dim)

    def masked_select(self, mask: Any) -> Any:
        return masked_select(self, mask)

    def nonzero(self, as_tuple: bool = False) -> Any:
        return nonzero(self, as_tuple)

    def scatter(self, dim: int, index: Any, src: Any = None, value: Any = None, reduce: str | None = None) -> Any:
        return scatter(self, dim, index, src, value, reduce)

    def scatter_add(self, dim: int, index: Any, src: Any) -> Any:
        return scatter_add(self, dim, index, src)

    def scatter_(self, dim: int, index: Any, src: Any = None, value: Any = None) -> Any:
        """``scatter`` in place; returns ``self``."""
        return scatter_inplace(self, dim, index, value if src is None else src, "assign", "scatter_")

    def scatter_add_(self, dim: int, index: Any, src: Any) -> Any:
        """``scatter_add`` in place; returns ``self``."""
        return scatter_inplace(self, dim, index, src, "add", "scatter_add_")

    def scatter_reduce(self, dim: int, index: Any, src: Any, reduce: str, include_self: bool = True) -> Any:
        return scatter_reduce(self, dim, index, src, reduce, include_self)

    def index_put_(self, indices: Any, values: Any, accumulate: bool = False) -> Any:
        return index_put_(self, tuple(indices) if isinstance(indices, list) else indices, values, accumulate)

    def index_put(self, indices: Any, values: Any, accumulate: bool = False) -> Any:
        return index_put(self, tuple(indices) if isinstance(indices, list) else indices, values, accumulate)
