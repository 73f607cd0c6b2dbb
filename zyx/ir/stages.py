"""Two-stage reduces: a kernel whose few outputs each reduce many elements, as two kernels.

A kernel with fewer outputs than the device has cores to keep busy runs the chunks of its reduce on
different work-groups: stage 1 (``partial_kernel``) is the kernel's reduce alone with one more,
leading, output axis ``g`` over ``groups`` equal chunks of the outermost reduce axis; it writes
``partials[g, *out]`` (in the reduce's accumulator dtype, so nothing is rounded in between) and has
``groups`` times the outputs to spread over the device. Stage 2 (``final_kernel``) is the kernel itself
with that reduce replaced by one over the partials in chunk order: the elementwise work after the
reduce (a mean's division, ``rsqrt(var + eps)``) runs there, once per output. A one-axis reduce whose
length ``groups`` does not divide leaves its last ``length % groups`` elements to stage 2, which folds
them in after the partials (their loads guarded by the stage-2 coordinate), so stage 1 stays a plain,
vectorizable loop. Chunks and their order depend only on the shapes and ``groups``, so every run gives
the same bits; summing in chunks is at least as accurate as one running sum.

Which kernels split and into how many chunks is the heuristics' choice (``opt.heuristics.reduce_groups``).
"""
from __future__ import annotations

from zyx.ir import expr
from zyx.ir import symbolic as sym
from zyx.ir.kernel import Kernel, out_var, red_var
from zyx.ir.rewrite import rewrite, substitute_indices, walk
from zyx.ir.view import contiguous_strides
from zyx.op import Op

# reduces whose chunks combine with the same op (an argmax's partials would need their positions)
SPLITTABLE = frozenset({Op.SUM, Op.PROD, Op.MAX, Op.MIN})


def the_reduce(k: Kernel) -> expr.Reduce | None:
    """The one reduce of ``k`` when it can run in two stages: a single (possibly repeated) reduce of
    ``SPLITTABLE``; None otherwise."""
    found = {e for e in walk(k.body) if isinstance(e, expr.Reduce)}
    if len(found) != 1:
        return None
    r = found.pop()
    return r if r.op in SPLITTABLE else None


def chunk(k: Kernel, groups: int) -> tuple[int, int] | None:
    """(elements per chunk, elements left to stage 2) when the outermost reduce axis is split into
    ``groups`` chunks; None when it cannot be: a multi-axis reduce splits only where ``groups`` divides
    that axis."""
    if not k.red_shape or groups < 2:
        return None
    c, rest = divmod(k.red_shape[0], groups)
    return None if c < 1 or (rest and len(k.red_shape) > 1) else (c, rest)


def partial_kernel(k: Kernel, groups: int) -> Kernel:
    """Stage 1: output ``(groups, *k.out_shape)``, chunk ``g`` of the outermost reduce axis per ``g``."""
    r, (c, _) = _checked(k, groups)
    g = out_var(0, groups)
    mapping: dict = {}
    for i, size in enumerate(k.out_shape):
        old = out_var(i, size)
        if isinstance(old, sym.Var):
            mapping[old] = out_var(i + 1, size)
    old_r = red_var(0, k.red_shape[0])
    if isinstance(old_r, sym.Var):
        mapping[old_r] = sym.add(sym.mul(g, c), red_var(0, c))
    body = substitute_indices(r, mapping)
    return Kernel((groups, *k.out_shape), (c, *k.red_shape[1:]), (r.dtype, *k.bufs[1:]), body, k.params)


def final_kernel(k: Kernel, groups: int) -> Kernel:
    """Stage 2: ``k`` with its reduce over the ``groups`` partials (the last buffer), then over the
    elements the chunks left (a one-axis reduce ``groups`` does not divide)."""
    r, (c, rest) = _checked(k, groups)
    total = groups + rest
    j = red_var(0, total)
    strides = contiguous_strides(k.out_shape)
    at = sym.add(sym.mul(j, k.numel), *(sym.mul(out_var(i, s), st) for i, (s, st) in enumerate(zip(k.out_shape,
                                                                                                    strides))))
    part = len(k.bufs)
    if not rest:
        src: expr.Expr = expr.Load(part, r.dtype, at)
    else:  # positions groups.. read the source's last elements, guarded so neither side reads past its end
        first = sym.lt(j, groups)
        load = expr.Load(part, r.dtype, at, first)
        old_r = red_var(0, k.red_shape[0])
        tail = substitute_indices(r.src, {old_r: sym.add(j, groups * c - groups)})
        later = sym.ge(j, groups)
        tail = rewrite(tail, lambda e: expr.Load(e.buf, e.dtype, e.index, sym.land(e.valid, later), e.other, e.gather)
                       if isinstance(e, expr.Load) else None)
        src = expr.Alu(Op.WHERE, (expr.Cond(first), load, tail), r.dtype)
    new = expr.Reduce(r.op, src, r.dtype)
    body = rewrite(k.body, lambda e: new if isinstance(e, expr.Reduce) and e == r else None)
    return Kernel(k.out_shape, (total,), (*k.bufs, r.dtype), body, k.params)


def _checked(k: Kernel, groups: int) -> tuple[expr.Reduce, tuple[int, int]]:
    r, sizes = the_reduce(k), chunk(k, groups)
    if r is None or sizes is None:
        raise ValueError(f"{k.name()}: no two-stage split into {groups} chunks of reduce {k.red_shape}")
    return r, sizes
