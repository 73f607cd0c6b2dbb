"""zyx.Tape: a capture scope whose realize() runs the outputs' graph through a plan keyed by structure."""
from __future__ import annotations

import gc

import numpy as np
import pytest

import zyx
import zyx.nn.functional as F
from zyx.frontend.tape import plan_stats

pytestmark = pytest.mark.needs_device

RNG = np.random.default_rng(61)


def _t(*shape):
    return zyx.tensor(RNG.standard_normal(shape).astype(np.float32)).realize()


def _body(x, w, s):
    h = (x @ w).relu() * s
    return h.sum(1), F.softmax(h, -1), (h - h.mean()).abs().amax(0)


def test_tape_replays_and_equals_eager():
    x, w = _t(6, 5), _t(5, 4)
    want = [t.numpy() for t in _body(x, w, 0.5)]
    c0, r0 = plan_stats["captures"], plan_stats["replays"]
    for step in range(4):
        with zyx.Tape(x, w) as tape:
            outs = tape.realize(*_body(x, w, 0.5))
        assert tape.replayed == (step > 0)
        for got, ref in zip(outs, want):
            np.testing.assert_allclose(got.numpy(), ref, rtol=1e-5, atol=1e-6)
    assert (plan_stats["captures"] - c0, plan_stats["replays"] - r0) == (1, 3)


def test_new_leaf_values_and_scalar_arguments_are_used_at_replay():
    x, w = _t(6, 5), _t(5, 4)
    with zyx.Tape(x, w) as tape:
        tape.realize(*_body(x, w, 0.5))
    for s in (0.25, 2.0, -1.0):
        x2, w2 = _t(6, 5), _t(5, 4)
        with zyx.Tape(x2, w2) as tape:
            outs = tape.realize(*_body(x2, w2, s))
        assert tape.replayed == 1  # float scalars are kernel arguments: same structure
        for got, ref in zip(outs, _body(x2, w2, s)):
            np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=1e-5, atol=1e-6)


def test_leaves_written_in_place_are_read_fresh():
    x, w = _t(6, 5), _t(5, 4)
    for step in range(3):
        x[step] = float(step + 1)
        with zyx.Tape(x, w) as tape:
            (y,) = [tape.realize((x @ w).sum(0))]
        np.testing.assert_allclose(y.numpy(), (x.numpy() @ w.numpy()).sum(0), rtol=1e-5, atol=1e-5)


def test_a_new_structure_captures_again():
    c0 = plan_stats["captures"]
    for shape in ((3, 4), (3, 4), (5, 4)):
        x = _t(*shape)
        with zyx.Tape(x) as tape:
            y = tape.realize(x.exp().sum(1))
        np.testing.assert_allclose(y.numpy(), np.exp(x.numpy()).sum(1), rtol=1e-5)
    x = _t(3, 4)
    with zyx.Tape(x) as tape:  # same shapes, another op
        y = tape.realize(x.exp().amax(1))
    np.testing.assert_allclose(y.numpy(), np.exp(x.numpy()).max(1), rtol=1e-6)
    assert plan_stats["captures"] - c0 == 3


def test_realized_outputs_and_errors():
    x = _t(3)
    with zyx.Tape(x) as tape:
        assert tape.realize(x) is x  # nothing pending
        with pytest.raises(TypeError, match="takes tensors"):
            tape.realize(3)
    with pytest.raises(TypeError, match="leaves must be tensors"):
        zyx.Tape([1, 2])


def test_memory_stays_flat_over_1000_tape_replays():
    x, w = _t(6, 5), _t(5, 4)
    with zyx.Tape(x, w) as tape:
        tape.realize(*_body(x, w, 0.5))
    gc.collect()
    zyx.synchronize()
    start = zyx.memory_stats()
    for _ in range(1000):
        with zyx.Tape(x, w) as tape:
            outs = tape.realize(*_body(x, w, 0.5))
    del outs
    gc.collect()
    zyx.synchronize()
    assert zyx.memory_stats()["live_buffers"] == start["live_buffers"]


def test_slices_at_another_offset_replay_with_their_offsets():
    """A tape over ``x[t:t+1]`` replays its plan for another ``t`` (the offset is a scalar argument of
    the graph), with that slice's values; so does an output read at an offset of another output."""
    a = RNG.standard_normal((64, 8)).astype(np.float32)
    x = zyx.tensor(a).realize()
    for step, t in enumerate((1, 3, 5, 9)):  # odd rows of 8 floats: one alignment class
        with zyx.Tape(x) as tape:
            y = (x[t:t + 1] * 2.0 + x[t + 1:t + 2]).tanh()
            z = y[:, 1:] + x[t + 2:t + 3, :7]
            y, z = tape.realize(y, z)
        assert tape.replayed == (step > 0)
        want = np.tanh(a[t:t + 1] * 2 + a[t + 1:t + 2])
        np.testing.assert_allclose(y.numpy(), want, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(z.numpy(), want[:, 1:] + a[t + 2:t + 3, :7], rtol=1e-6, atol=1e-6)
