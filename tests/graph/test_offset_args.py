"""graph.offset_args: which offsets become kernel arguments, their alignment and bounds."""
from __future__ import annotations

import pytest

from zyx import dtype as dtypes
from zyx.graph.node import LazyNode, Src
from zyx.graph.offset_args import alignment, offset_arg, offset_bounds, offset_key
from zyx.ir.view import View
from zyx.op import Op


def _read(numel: int, view: View) -> Src:
    base = LazyNode(Op.BUFFER, None, (), dtypes.float32, (numel,), None)
    return Src(base, view, dtypes.float32)


@pytest.mark.parametrize(("offset", "align"), [(1, 1), (6, 2), (12, 4), (40, 8), (48, 16), (4096, 16), (17, 1)])
def test_alignment_is_the_largest_power_of_two_up_to_16(offset, align):
    assert alignment(offset) == align


def test_bounds_keep_every_element_inside_the_buffer():
    assert offset_bounds(View((10,), (1,), 5), 100) == (0, 90)
    assert offset_bounds(View((10,), (-1,), 20), 100) == (9, 99)  # a flip reads below its offset
    assert offset_bounds(View((3, 4), (10, 2), 7), 50) == (0, 50 - 1 - 20 - 6)


def test_argument_of_a_read():
    got = offset_arg(_read(100, View((10,), (1,), 24)))
    assert got is not None
    arg, align, lo, hi = got
    assert (align, lo, hi) == (8, 0, 11) and arg.value == 3 and arg.param and arg.dtype is dtypes.int32
    assert offset_key(got) == ("arg", 8, 0, 11)
    s = _read(100, View((10,), (1,), 24))
    assert offset_arg(s) is offset_arg(s)  # one constant per read: key and kernel name the same one


def test_literal_offsets():
    assert offset_arg(_read(100, View((10,), (1,), 0))) is None  # 0 stays a literal
    assert offset_arg(_read(100, View((0,), (1,), 5))) is None  # an empty view reads nothing
    assert offset_arg(_read(10, View((10,), (-1,), 9))) is None  # the only offset the size allows (a flip)


def test_a_huge_buffer_takes_a_64_bit_argument():
    arg = offset_arg(_read(2**33, View((10,), (1,), 2**32 + 16)))[0]
    assert arg.dtype is dtypes.int64 and arg.value == (2**32 + 16) // 16
