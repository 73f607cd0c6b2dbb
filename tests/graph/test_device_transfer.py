"""Graphs over two devices: an operand living on another device is read through a transfer node
(``graph.build.on_device``), realized as a step of its own (the source's kernels on its device, then
the copy), so each kernel reads one device's buffers, a mixed graph's schedules are cached on both
devices, and a Tape over mixed leaves replays its plan. Run on the default device and another usable
one (``device_pair``, Oclgrind excepted); values against NumPy.
"""
from __future__ import annotations

import numpy as np
import pytest

import zyx
from zyx.graph import build, schedule_stats
from zyx.op import Op

pytestmark = pytest.mark.needs_device


def _transfers(node):
    """The transfer nodes ``node`` reads directly."""
    return [s.base for s in node.srcs if s.base is not None and s.base.op is Op.EXTERN
            and s.base.arg.name == build.TRANSFER]


def test_an_operand_of_another_device_is_a_transfer_step(device_pair) -> None:
    a, b = device_pair
    rng = np.random.default_rng(0)
    p = rng.standard_normal((3, 8)).astype(np.float32)
    q = rng.standard_normal((2, 3, 8)).astype(np.float32)
    x, y = zyx.tensor(p, device=a), zyx.tensor(q, device=b)
    u = (x * 2 + 1).exp()  # pending on a
    v = y * u  # most bytes on b: u moves there
    assert v.device is b
    (moved,) = _transfers(v._data)
    assert moved.device is b and moved.srcs[0].base is u._data and u._data.device is a
    with zyx.profiler.profile() as prof:
        got = v.numpy()
    np.testing.assert_allclose(got, q * np.exp(p * 2 + 1), rtol=1e-5)
    steps = [(e.kind, e.name, e.device) for e in prof.events() if e.kind != "build"]
    kernels = [(name, dev) for kind, name, dev in steps if kind == "kernel"]
    assert [dev for _, dev in kernels] == [a.id, b.id]  # a's chain fused into one kernel, then b's
    first_on_b = steps.index(("kernel", kernels[1][0], b.id))
    assert ("transfer", "device_to_host", a.id) in steps[:first_on_b]  # the copy runs before b's kernel
    assert ("transfer", "host_to_device", b.id) in steps[:first_on_b]
    assert u._data.buffer is None or u._data.buffer.device is a


def test_a_mixed_graph_replays_its_schedules(device_pair) -> None:
    a, b = device_pair
    rng = np.random.default_rng(1)
    for i in range(3):
        p = rng.standard_normal((4, 6)).astype(np.float32)
        q = rng.standard_normal((4, 6)).astype(np.float32)
        before = dict(schedule_stats)
        x, y = zyx.tensor(p, device=a), zyx.tensor(q, device=b)
        z = ((x * 2).sum(1, keepdim=True) + y.exp()).relu()
        np.testing.assert_allclose(z.numpy(), np.maximum((p * 2).sum(1, keepdims=True) + np.exp(q), 0), rtol=1e-5)
        if i:  # the kernel on a and the one on b both replay
            assert schedule_stats["builds"] == before["builds"] and schedule_stats["hits"] >= before["hits"] + 2


def test_only_the_part_a_view_reads_moves(device_pair) -> None:
    a, b = device_pair
    rng = np.random.default_rng(2)
    p = rng.standard_normal((64, 16)).astype(np.float32)
    q = rng.standard_normal((4, 16)).astype(np.float32)
    r = rng.standard_normal((2, 64, 16)).astype(np.float32)
    x, y, w = zyx.tensor(p, device=a), zyx.tensor(q, device=b), zyx.tensor(r, device=b)
    for z, expect, moved_bytes in [(y + x[5:6], q + p[5:6], 16 * 4),  # one row of 64, broadcast over y's rows
                                   (y + x[::2][:4], q + p[::2][:4], 4 * 16 * 4),  # 4 strided rows, made dense
                                   (w + x.T.T, r + p, p.nbytes)]:  # all of it: the base moves, its view kept
        assert z.device is b
        with zyx.profiler.profile() as prof:
            got = z.numpy()
        np.testing.assert_allclose(got, expect, rtol=1e-6)
        uploads = [e.bytes for e in prof.events() if e.kind == "transfer" and e.name == "host_to_device"]
        assert uploads == [moved_bytes]


def test_a_tape_over_mixed_leaves_replays(device_pair) -> None:
    a, b = device_pair
    rng = np.random.default_rng(3)
    w = zyx.tensor(rng.standard_normal((5, 4)).astype(np.float32), device=b)
    replayed = 0
    for _ in range(3):
        xs = rng.standard_normal((3, 5)).astype(np.float32)
        x = zyx.tensor(xs, device=a)
        with zyx.Tape(x, w) as tape:
            y = tape.realize(((x @ w) + 1).tanh())
        replayed += tape.replayed
        np.testing.assert_allclose(y.numpy(), np.tanh(xs @ w.numpy() + 1), rtol=1e-5, atol=1e-6)
    assert replayed == 2


def test_a_jitted_function_over_mixed_devices(device_pair) -> None:
    """A capture holding a transfer reads values back to the host, so the call runs eagerly: the
    values must still be right on every call."""
    a, b = device_pair
    rng = np.random.default_rng(4)

    @zyx.jit
    def f(x, y):
        return (x * 2 + y).sum(0)

    for _ in range(3):
        p = rng.standard_normal((3, 4)).astype(np.float32)
        q = rng.standard_normal((3, 4)).astype(np.float32)
        got = f(zyx.tensor(p, device=a), zyx.tensor(q, device=b))
        np.testing.assert_allclose(got.numpy(), (p * 2 + q).sum(0), rtol=1e-5)
