"""Merging a kernel's adjacent axes (``ir.merge_axes``): which axes merge for which
loads and conditions (no device), and results through the API where merging and not merging meet
(broadcasts, transposed reads, padding, size-1 axes)."""
from __future__ import annotations

import numpy as np
import pytest

import zyx
from zyx import dtype as dt
from zyx.ir import expr
from zyx.ir import symbolic as sym
from zyx.ir.kernel import Kernel, out_var, red_var
from zyx.ir.merge_axes import merge_axes
from zyx.ir.rewrite import walk


def _load(buf: int, shape: tuple[int, ...], strides: tuple[int, ...], valid: sym.Node = sym.ONE) -> expr.Load:
    index = sym.add(*(sym.mul(out_var(i, s), st) for i, (s, st) in enumerate(zip(shape, strides))))
    return expr.Load(buf, dt.float32, index, valid)


def _add(shape: tuple[int, ...], *loads: expr.Load) -> Kernel:
    body = loads[0]
    for ld in loads[1:]:
        body = expr.Alu("add", (body, ld), dt.float32)
    return Kernel(shape, (), (dt.float32,) * (len(loads) + 1), body)


def test_contiguous_operands_merge_into_one_axis():
    shape = (4, 6, 5)
    k = merge_axes(_add(shape, _load(1, shape, (30, 5, 1)), _load(2, shape, (30, 5, 1))))
    assert k.out_shape == (120,)
    assert all(ld.index == out_var(0, 120) for ld in walk(k.body) if isinstance(ld, expr.Load))


def test_a_per_channel_operand_keeps_the_channel_axis():
    shape = (8, 32, 8, 8)
    k = merge_axes(_add(shape, _load(1, shape, (2048, 64, 8, 1)), _load(2, shape, (0, 1, 0, 0))))
    assert k.out_shape == (8, 32, 64)


def test_a_transposed_operand_merges_only_what_it_reads_in_order():
    shape = (3, 4, 5)
    k = merge_axes(_add(shape, _load(1, shape, (20, 5, 1)), _load(2, shape, (1, 15, 3))))
    assert k.out_shape == (3, 20)  # (4, 5) read as 15, 3: one axis of stride 3


def test_conditions_merge_only_what_they_state_without_a_division():
    shape = (6, 7, 8)

    def with_condition(cond: sym.Node) -> tuple[int, ...]:
        return merge_axes(_add(shape, _load(1, shape, (56, 8, 1), cond))).out_shape

    assert with_condition(sym.lt(out_var(2, 8), 5)) == (42, 8)  # the inner axis is told apart
    assert with_condition(sym.lt(out_var(1, 7), 5)) == (6, 56)  # o1 < 5 is m < 40 on (7, 8) merged
    assert with_condition(sym.lt(out_var(0, 6), 4)) == (336,)   # o0 < 4 is m < 224


def test_size_one_axes_and_reduce_kernels():
    shape = (1, 5, 1, 3)
    assert merge_axes(_add(shape, _load(1, shape, (0, 3, 0, 1)))).out_shape == (15,)
    red = Kernel((4, 1), (8,), (dt.float32,) * 2,
                 expr.Reduce("sum", expr.Load(1, dt.float32, sym.add(sym.mul(out_var(0, 4), 8), red_var(0, 8))),
                             dt.float32))
    squeezed = merge_axes(red)  # a reduce kernel loses its size-1 output axes (its last one is contiguous)
    assert squeezed.out_shape == (4,) and squeezed.red_shape == (8,) and squeezed.body == red.body
    assert merge_axes(squeezed) is squeezed


@pytest.mark.needs_device
def test_results_where_merged_and_unmerged_axes_meet():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 6, 5, 3)).astype(np.float32)
    b = rng.standard_normal((6, 1, 1)).astype(np.float32)
    za, zb = zyx.tensor(a), zyx.tensor(b)
    np.testing.assert_allclose((za + zb).numpy(), a + b, rtol=1e-6)  # a per-channel bias
    np.testing.assert_allclose((za.permute(0, 2, 1, 3) * 2).numpy(), a.transpose(0, 2, 1, 3) * 2, rtol=1e-6)
    got = (za[:, 1:5, :, ::2].pad((1, 0, 0, 2)) - 1).numpy()
    want = np.pad(a[:, 1:5, :, ::2], ((0, 0), (0, 0), (0, 2), (1, 0))) - 1
    want[:, :, 5:, :] = -1
    want[:, :, :, :1] = -1
    np.testing.assert_allclose(got, want, rtol=1e-6)
    np.testing.assert_allclose((za.reshape(24, 15).T + 1).numpy(), a.reshape(24, 15).T + 1, rtol=1e-6)


def test_reduce_axes_merge_and_empty_ones_stay():
    # a per-channel sum over (N, H, W) of NCHW: (H, W) is one contiguous run, N is apart
    body = expr.Reduce("sum", expr.Load(1, dt.float32, sym.add(
        sym.mul(red_var(0, 64), 2048), sym.mul(out_var(1, 32), 64), sym.mul(red_var(1, 8), 8), red_var(2, 8))),
        dt.float32)
    k = merge_axes(Kernel((1, 32, 1, 1), (64, 8, 8), (dt.float32,) * 2, body))
    assert k.red_shape == (64, 64) and k.out_shape == (32,)  # keepdim's size-1 output axes dropped
    assert k.body == expr.Reduce("sum", expr.Load(1, dt.float32, sym.add(
        sym.mul(red_var(0, 64), 2048), sym.mul(out_var(0, 32), 64), red_var(1, 64))), dt.float32)
    empty = Kernel((3,), (0, 4), (dt.float32,) * 2, expr.Reduce("sum", expr.Load(
        1, dt.float32, sym.add(sym.mul(out_var(0, 3), 4), red_var(1, 4))), dt.float32))
    assert merge_axes(empty) is empty


@pytest.mark.needs_device
def test_reductions_over_merged_axes_match_numpy():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((6, 5, 4, 3)).astype(np.float32)
    za = zyx.tensor(a)
    np.testing.assert_allclose(za.sum((0, 2, 3)).numpy(), a.sum((0, 2, 3)), rtol=1e-5)
    np.testing.assert_allclose(za.amax((2, 3)).numpy(), a.max((2, 3)), rtol=0)
    np.testing.assert_array_equal(za.reshape(30, 12).argmax(1).numpy(), a.reshape(30, 12).argmax(1))
    np.testing.assert_allclose(za.permute(1, 0, 2, 3).sum((1, 2, 3)).numpy(), a.sum((0, 2, 3)), rtol=1e-5)
