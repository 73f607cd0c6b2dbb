"""Merging a kernel's adjacent axes where every index allows it (an elementwise kernel's output axes,
any kernel's reduce axes).

A kernel is built with the output node's shape, one coordinate per axis, each decomposed from the work
item's id with a division and a remainder. Axes ``i, i+1`` whose coordinates every load reads as
``a * (size_{i+1} * s) + b * s`` (and no condition tells apart) are one axis of their product: a
``(64, 32, 8, 8)`` output with a per-channel operand becomes ``(64, 32, 64)``. Fewer index operations,
and a longer last axis to vectorize (a broadcast bias add runs about twice as fast merged). A per-channel
sum of NCHW loops over (N, H*W) instead of (N, H, W).
"""
from __future__ import annotations

from typing import Any

from zyx.ir import expr
from zyx.ir import symbolic as sym
from zyx.ir.kernel import Kernel, out_var, red_var
from zyx.ir.rewrite import substitute_indices, walk

_PROBE = "zyx_merged"  # the trial variable's name (never an output coordinate's: those are o0, o1, ...)


def merge_axes(k: Kernel) -> Kernel:
    """``k`` with runs of adjacent axes merged into one where every load index and condition reads them
    as one row-major coordinate: its reduce axes (the loop nest gets shorter; an argmax's row-major
    position over them is unchanged), and its output axes when it has no reduce (a reduce kernel's output
    axes carry the matmul / row structure the heuristics read). ``k`` itself when nothing merges. Pairs
    merge one at a time, so each check needs only ``(m // s) * s + m % s == m``. A reduce kernel's
    size-1 output axes are dropped (``keepdim``): the heuristics read its last axis as the one its
    outputs are contiguous along."""
    if k.red_shape and 1 in k.out_shape:
        k = _squeeze_outputs(k)
    for reduce_axes in (True, False):
        shape = k.red_shape if reduce_axes else k.out_shape
        if len(shape) < 2 or not all(type(s) is int and s > 0 for s in shape) or (k.red_shape and not reduce_axes):
            continue
        axis = 0
        while axis + 1 < len(shape):
            merged = _merge_pair(k, axis, reduce_axes)
            if merged is None:
                axis += 1
            else:
                k = merged
                shape = k.red_shape if reduce_axes else k.out_shape
    return k


def _squeeze_outputs(k: Kernel) -> Kernel:
    """``k`` without its size-1 output axes (the same elements in the same row-major order)."""
    keep = [(i, s) for i, s in enumerate(k.out_shape) if s != 1]
    mapping = {}
    for j, (i, s) in enumerate(keep):
        old = out_var(i, s)
        if isinstance(old, sym.Var) and i != j:
            mapping[old] = out_var(j, s)
    body = substitute_indices(k.body, mapping) if mapping else k.body
    return Kernel(tuple(s for _, s in keep), k.red_shape, k.bufs, body, k.params)


def _merge_pair(k: Kernel, axis: int, reduce_axes: bool) -> Kernel | None:
    """``k`` with output (or reduce) axes ``axis`` and ``axis + 1`` as one, or None when some index or
    condition would need a division or remainder of the merged coordinate."""
    shape = k.red_shape if reduce_axes else k.out_shape
    coord = red_var if reduce_axes else out_var
    merged_shape = shape[:axis] + (shape[axis] * shape[axis + 1],) + shape[axis + 2:]
    probe = sym.var(_PROBE, 0, merged_shape[axis] - 1)
    if isinstance(probe, sym.Var):
        trial = _pair_mapping(shape, axis, probe, coord)
        if any(_divides(sym.substitute(n, trial), probe) for n in _index_nodes(k.body)):
            return None
    # rename: the pair -> the merged coordinate, later axes shift down by one
    mapping = _pair_mapping(shape, axis, coord(axis, merged_shape[axis]), coord)
    for a in range(axis + 2, len(shape)):
        old = coord(a, shape[a])
        if isinstance(old, sym.Var):
            mapping[old] = coord(a - 1, shape[a])
    body = substitute_indices(k.body, mapping)
    if reduce_axes:
        return Kernel(k.out_shape, merged_shape, k.bufs, body, k.params)
    return Kernel(merged_shape, (), k.bufs, body, k.params)


def _pair_mapping(shape: tuple[int, ...], axis: int, merged: sym.Node, coord: Any) -> dict[sym.Var, sym.Node]:
    """Coordinates ``axis`` and ``axis + 1`` (``coord``: ``out_var`` or ``red_var``) as functions of the
    ``merged`` coordinate."""
    mapping: dict[sym.Var, sym.Node] = {}
    outer, inner = coord(axis, shape[axis]), coord(axis + 1, shape[axis + 1])
    if isinstance(outer, sym.Var):  # a size-1 axis has no variable
        mapping[outer] = sym.floordiv(merged, shape[axis + 1])
    if isinstance(inner, sym.Var):
        mapping[inner] = sym.mod(merged, shape[axis + 1])
    return mapping


def _index_nodes(body: expr.Expr) -> list[sym.Node]:
    """Every symbolic index and condition of ``body``."""
    out: list[sym.Node] = []
    for e in walk(body):
        if isinstance(e, expr.Load):
            out += [e.index, e.valid]
        elif isinstance(e, expr.Cond):
            out.append(e.valid)
    return out


def _divides(x: sym.Node, v: sym.Var) -> bool:
    """Whether ``x`` holds a division or remainder of an expression mentioning ``v``."""
    if isinstance(x, (sym.Div, sym.Mod)):
        return v in sym.variables(x.a) or _divides(x.a, v)
    if isinstance(x, (sym.Mul, sym.Lt)):
        return _divides(x.a, v)
    if isinstance(x, (sym.Add, sym.And)):
        return any(_divides(t, v) for t in x.terms)
    return False
