"""Gradients through views written in place: where a view's elements lie in its base, the rule of a view
regenerated after its base was written (PyTorch's AsStridedBackward), and the base's rule after a write
through one of its views (PyTorch's CopySlices). The engine records them (``engine.record``)."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from zyx.errors import AutogradError
from zyx.frontend.creation import from_numpy, zeros
from zyx.ir.view import View


def _positions(base: Any, x: Any, what: str) -> Any:
    """Where each element of ``x``, a view of ``base``, lies in ``base`` flattened (a NumPy int64 array of
    ``x``'s shape); a base laid out other than contiguously is refused (an error, not a wrong gradient)."""
    return _positions_in(base._view, x._view, what)


def _positions_in(layout: Any, region: Any, what: str) -> Any:
    """``_positions`` from the two views: ``layout``, the base's, and ``region``, the view's."""
    if not all(type(d) is int for d in (*layout.shape, *layout.strides, layout.offset, *region.shape,
                                         *region.strides, region.offset)) \
            or layout.strides != View.contiguous(layout.shape).strides:
        raise AutogradError(f"{what} of a tensor whose storage is not contiguous is not supported for "
                            "autograd; write into a clone")
    flat = np.full(region.shape, region.offset - layout.offset, dtype=np.int64)
    for axis, (size, stride) in enumerate(zip(region.shape, region.strides)):
        step = np.arange(size, dtype=np.int64) * stride
        flat += step.reshape((1,) * axis + (size,) + (1,) * (len(region.shape) - axis - 1))
    return flat


def view_of_base(layout: Any, device: Any, x: Any) -> Any:
    """The gradient rule of ``x`` as a view of a base laid out as ``layout`` on ``device``, for the base's
    current values (PyTorch's AsStridedBackward, made when the base was written in place after ``x`` was
    taken): ``x``'s gradient added at its positions of a zero gradient of the base (added: an expanded view
    reads one position several times). Only the base's view is needed: the base may be gone by now."""
    flat = _positions_in(layout, x._view, "a view used after an in-place write")
    shape = tuple(layout.shape)
    n = math.prod(shape)

    def fn(g: Any) -> tuple:
        out = zeros(n, dtype=g.dtype, device=g.device)
        if flat.size:
            out = out.scatter_add(0, from_numpy(flat.reshape(-1), device), g.reshape(-1))
        return (out.reshape(*shape),)

    return fn


def rebase_rule(base: Any, x: Any) -> Any:
    """The rule of ``base`` after ``x``, a view of it, was just written in place (its new history recorded),
    as PyTorch's CopySlices: the gradient of ``base`` where ``x`` lies goes to ``x``'s new history (which
    routes it to the written values and ``x``'s old ones), the rest to ``base``'s old history. A base laid
    out other than contiguously is refused (an error, not a wrong gradient)."""
    flat = _positions(base, x, "an in-place write through a view")
    keep = np.ones(base.numel(), dtype=bool)
    keep[flat.reshape(-1)] = False
    shape, device = base.shape, base.device

    def fn(g: Any) -> tuple:
        g_flat = g.reshape(-1)
        gb = g_flat.where(from_numpy(keep, device), 0.0).reshape(*shape)
        return gb, g_flat[from_numpy(flat, device)]

    return fn
