"""Offsets of reads from realized buffers as scalar kernel arguments.

A kernel reading a realized buffer through a view with a nonzero offset (``x[i]``, ``xs[t:t+1]``)
takes the offset as a scalar argument instead of a literal, so the same layout read at another
offset reuses the compiled program and the schedule cache: ``graph.schedule`` keys such a read by
(alignment, argument range) instead of the offset, and lists the argument among the graph's
constants, which a replay (a schedule's or a tape's plan) passes anew.

The argument is ``offset // align``, ``align`` the largest power of two dividing the offset up to
``MAX_ALIGN``; the kernel indexes ``align * arg + ...``, so what the literal said about alignment
(whole vectors apart) is kept, at the price of one program per alignment class. The argument's
symbolic bounds are every offset that keeps the view inside the buffer, so range analysis (the
index type, bounds proofs) sees the same element range the buffer has. Offset 0 stays a literal, as
does an offset the view and buffer size leave no choice about (the key then fixes it).
"""
from __future__ import annotations

import math

from zyx import dtype as dtypes
from zyx.graph.node import Src
from zyx.ir.view import View

MAX_ALIGN = 16  # the widest vector (16 lanes) of the vectorizer

OffsetArg = tuple[Src, int, int, int]  # (argument constant, align, lowest argument, highest argument)


def alignment(offset: int) -> int:
    """The largest power of two dividing ``offset`` (> 0), at most ``MAX_ALIGN``."""
    return min(offset & -offset, MAX_ALIGN)


def offset_bounds(view: View, numel: int) -> tuple[int, int]:
    """(lowest, highest) offset that keeps every element of a non-empty ``view`` inside ``numel`` elements."""
    lo, hi = view.span()
    return view.offset - lo, numel - 1 - (hi - view.offset)


def offset_arg(s: Src) -> OffsetArg | None:
    """The scalar argument standing for the offset of ``s`` (a read of a realized buffer), or None when the
    offset stays a literal. Made once per ``Src``: the schedule key, the kernel build and a tape's plan must
    name the same constant object. Every choice here follows from what the key holds (the view's shape and
    strides, the buffer's size, whether the offset is 0 and its alignment), so reads of one key agree."""
    got = s.offset_arg
    if got is not None:
        return got
    v = s.view
    if v.offset == 0 or 0 in v.shape:  # an empty view reads nothing
        return None
    align = alignment(v.offset)
    lo, hi = offset_bounds(v, math.prod(s.base.shape))
    lo, hi = -(-lo // align), hi // align
    if lo >= hi:  # one possible offset: the key fixes it
        return None
    # int while ``align * arg`` fits one: the index expression multiplies in the argument's type
    arg_dtype = dtypes.int32 if hi * align < 2**31 else dtypes.int64
    got = s.offset_arg = (Src(None, None, arg_dtype, v.offset // align, param=True), align, lo, hi)
    return got


def offset_key(got: OffsetArg) -> tuple[str, int, int, int]:
    """What a schedule key holds in place of an offset passed as ``got``."""
    return ("arg", got[1], got[2], got[3])
