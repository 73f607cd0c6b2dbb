"""Tensors on several devices in one process (API.md "Several devices"): moving tensors with
``to(device)`` (every dtype, views, empty tensors), ops whose operands live on two devices, in-place
writes from another device, gradients through mixed devices and each device's memory accounting.

Run on the default device and another usable one (``device_pair``: PoCL and Intel's CPU runtime in
CI; Oclgrind is left out, it simulates far too slowly), and on two PoCL devices of one platform in a
subprocess (``POCL_DEVICES="pthread pthread"``). Values are compared with NumPy and PyTorch.
"""
from __future__ import annotations

import gc
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import zyx

pytestmark = pytest.mark.needs_device

DTYPES = ["float32", "float16", "bfloat16", "float64", "int8", "uint8", "int16", "uint16", "int32", "uint32",
          "int64", "uint64", "bool"]


def _values(name: str, rng: np.random.Generator) -> np.ndarray:
    if name == "bool":
        return rng.random(11) > 0.5
    if name == "bfloat16":
        return np.array([1.5, -0.0, np.nan, np.inf, -3.25, 1e30, *rng.standard_normal(5)], ml_dtypes.bfloat16)
    dt = np.dtype(name)
    if dt.kind == "f":
        return np.array([1.5, -0.0, np.nan, np.inf, -3.25, 6e4, *rng.standard_normal(5)], dt)
    info = np.iinfo(dt)
    return np.array([info.min, info.max, 0, 1, *rng.integers(info.min // 2, info.max // 2, 7)], dt)


def test_to_round_trips_every_dtype(device_pair, bits_equal) -> None:
    a, b = device_pair
    rng = np.random.default_rng(0)
    for name in DTYPES:
        if not (a.supports(getattr(zyx, name)) and b.supports(getattr(zyx, name))):
            continue  # float64 without cl_khr_fp64
        host = _values(name, rng)
        x = zyx.tensor(host, device=a)
        y = x.to(b)
        assert y.device is b and y.pinned and y.dtype is x.dtype
        back = y.to(a)
        assert back.device is a
        bits_equal(y.numpy(), host)
        bits_equal(back.numpy(), host)
        bits_equal((y == y).numpy(), host == host)  # computed on b


def test_to_moves_views_and_empty_tensors(device_pair) -> None:
    a, b = device_pair
    rng = np.random.default_rng(1)
    host = rng.standard_normal((6, 10)).astype(np.float32)
    x = zyx.tensor(host, device=a)
    for view, expect in [(x.T, host.T), (x[1:5, ::3], host[1:5, ::3]), (x[2], host[2]),
                         (x[:, 4:5].expand(6, 7), np.broadcast_to(host[:, 4:5], (6, 7))),
                         (x.flip(0)[::2], host[::-1][::2]), ((x * 2 + 1)[3:4], host[3:4] * 2 + 1)]:
        moved = view.to(b)
        assert moved.device is b and moved.shape == expect.shape
        np.testing.assert_allclose(moved.numpy(), expect, rtol=1e-6)
        np.testing.assert_allclose((moved + 1).numpy(), expect + 1, rtol=1e-6)
    for shape in [(0,), (3, 0), (0, 4, 2)]:
        e = zyx.zeros(*shape, device=a)
        moved = e.to(b)
        assert moved.device is b and moved.shape == shape and moved.numpy().shape == shape
        assert (moved + zyx.ones(*shape, device=a)).numpy().shape == shape
    assert x.to(a) is x and x.to(a.id) is x


def test_mixed_ops_run_where_most_bytes_are(device_pair) -> None:
    a, b = device_pair
    rng = np.random.default_rng(2)
    p = rng.standard_normal((4, 6)).astype(np.float32)
    q = rng.standard_normal((4, 6)).astype(np.float32)
    big = rng.standard_normal((8, 4, 6)).astype(np.float32)
    x, y, z = zyx.tensor(p, device=a), zyx.tensor(q, device=b), zyx.tensor(big, device=b)
    s = x + y  # equal bytes: the first operand's device
    assert s.device is a and (y + x).device is b
    np.testing.assert_allclose(s.numpy(), p + q, rtol=1e-6)
    m = x * z  # most bytes on b, though x comes first
    assert m.device is b
    np.testing.assert_allclose(m.numpy(), p * big, rtol=1e-6)
    mm = x @ y.T
    np.testing.assert_allclose(mm.numpy(), p @ q.T, rtol=1e-5, atol=1e-5)
    w = zyx.where(x > 0, z, y)
    assert w.device is b
    np.testing.assert_allclose(w.numpy(), np.where(p > 0, big, q))
    np.testing.assert_allclose(zyx.cat([x, y], 1).numpy(), np.concatenate([p, q], 1))
    idx = np.array([3, 0, 3, 1])
    np.testing.assert_allclose(x[zyx.tensor(idx, device=b)].numpy(), p[idx])
    cols = np.array([[5], [0], [2], [1]])
    np.testing.assert_allclose(x.gather(1, zyx.tensor(cols, device=b)).numpy(), np.take_along_axis(p, cols, 1))
    red = (x.exp() + 1).sum(0) * y.max(0)  # pending reduces on both devices
    np.testing.assert_allclose(red.numpy(), (np.exp(p) + 1).sum(0) * q.max(0), rtol=1e-5)


def test_set_default_device_places_new_tensors(device_pair, restore_default_device) -> None:
    a, b = device_pair
    zyx.set_default_device(b)
    t = zyx.zeros(3) + zyx.tensor([1.0, 2.0, 3.0])
    assert t.device is b and not t.pinned
    zyx.set_default_device(a)
    u = zyx.ones(3)
    assert u.device is a
    np.testing.assert_array_equal((u + t).numpy(), [2.0, 3.0, 4.0])


def test_in_place_writes_from_another_device(device_pair) -> None:
    a, b = device_pair
    rng = np.random.default_rng(3)
    p = rng.standard_normal((4, 6)).astype(np.float32)
    q = rng.standard_normal((4, 6)).astype(np.float32)
    x, y = zyx.tensor(p, device=a), zyx.tensor(q, device=b)
    reader = x * 3  # pending on a: sees the old values
    moved, row = x.to(b), (x[2:3] + 1).to(b)  # pending transfers of the old values too
    x[1:3] = y[::2]
    expect = p.copy()
    expect[1:3] = q[::2]
    x[:, 0] = zyx.tensor(q[:, 5], device=b)
    expect[:, 0] = q[:, 5]
    x[0, 0] = zyx.tensor(7.0, device=b)
    expect[0, 0] = 7.0
    assert x.device is a
    np.testing.assert_array_equal(x.numpy(), expect)
    np.testing.assert_allclose(reader.numpy(), p * 3, rtol=1e-6)
    np.testing.assert_array_equal(moved.numpy(), p)
    np.testing.assert_allclose(row.numpy(), p[2:3] + 1, rtol=1e-6)
    x.add_(y)
    np.testing.assert_allclose(x.numpy(), expect + q, rtol=1e-6)
    x.copy_(y.T.T)
    np.testing.assert_array_equal(x.numpy(), q)
    assert x.device is a


def test_backward_through_mixed_devices(device_pair, torch) -> None:
    a, b = device_pair
    rng = np.random.default_rng(4)
    xs = rng.standard_normal((5, 7)).astype(np.float32)
    ws = rng.standard_normal((7, 3)).astype(np.float32)
    cs = rng.standard_normal(3).astype(np.float32)
    x = zyx.tensor(xs, device=a, requires_grad=True)
    w = zyx.tensor(ws, device=b, requires_grad=True)
    c = zyx.tensor(cs, device=a, requires_grad=True)
    loss = (((x @ w).tanh() + c) ** 2).mean() + (w.to(a) * 0.5).sum()
    loss.backward()
    tx, tw, tc = (torch.tensor(v, requires_grad=True) for v in (xs, ws, cs))
    (((tx @ tw).tanh() + tc) ** 2).mean().add((tw * 0.5).sum()).backward()
    np.testing.assert_allclose(loss.item(), ((np.tanh(xs @ ws) + cs) ** 2).mean() + ws.sum() * 0.5, rtol=1e-5)
    for t, ref in [(x, tx), (w, tw), (c, tc)]:
        assert t.grad.device is t.device  # each gradient lives with its tensor
        np.testing.assert_allclose(t.grad.numpy(), ref.grad.numpy(), rtol=1e-4, atol=1e-6)


def test_memory_returns_to_start_on_each_device(device_pair) -> None:
    a, b = device_pair
    gc.collect()
    start = {d: (zyx.memory_stats(d)["live_buffers"], zyx.memory_stats(d)["bytes_in_use"]) for d in (a, b)}
    rng = np.random.default_rng(5)
    kept = []
    for _ in range(20):
        x = zyx.tensor(rng.standard_normal((16, 8)).astype(np.float32), device=a, requires_grad=True)
        y = x.to(b).exp() + zyx.ones(16, 8, device=b)
        loss = (y * x).sum()  # y moves back to a
        loss.backward()
        kept.append(float(loss.item()))
        with zyx.no_grad():
            x[0] = y[1]
    assert zyx.memory_stats(b)["peak_bytes"] > 0 and len(kept) == 20
    del x, y, loss
    gc.collect()
    assert {d: (zyx.memory_stats(d)["live_buffers"], zyx.memory_stats(d)["bytes_in_use"]) for d in (a, b)} == start


DEBIAN_POCL_ICD = Path("/etc/OpenCL/vendors/pocl.icd")
TWO_POCL = """
import numpy as np, zyx
pocl = [d for d in zyx.devices() if d.usable and "Portable Computing Language" in d.platform]
groups = {}
for d in pocl:
    groups.setdefault(d.platform_index, []).append(d)
pair = next((g for g in groups.values() if len(g) >= 2), None)
if pair is None:
    print("SKIP PoCL listed", [str(d) for d in pocl])
    raise SystemExit(0)
a, b = pair[:2]
rng = np.random.default_rng(0)
xs, ws = rng.standard_normal((6, 5)).astype(np.float32), rng.standard_normal((5, 4)).astype(np.float32)
x = zyx.tensor(xs, device=a, requires_grad=True)
w = zyx.tensor(ws, device=b, requires_grad=True)
y = (x @ w).relu()
y.sum().backward()
np.testing.assert_allclose(y.numpy(), np.maximum(xs @ ws, 0), rtol=1e-5, atol=1e-6)
mask = (xs @ ws > 0).astype(np.float32)
np.testing.assert_allclose(w.grad.numpy(), xs.T @ mask, rtol=1e-5, atol=1e-5)
assert x.grad.device is a and w.grad.device is b and a is not b
np.testing.assert_array_equal(x.to(b).to(a).numpy(), xs)
print("OK", a.id, b.id)
"""


def test_two_pocl_devices_of_one_platform(device_pair, run_python) -> None:
    """PoCL lists one device per entry of ``POCL_DEVICES`` (space separated; PoCL reads it when its
    platform loads, hence the subprocess): two CPU devices of one platform, each with zyx's own
    context, queue and pool."""
    env = {"POCL_DEVICES": "pthread pthread"}
    if DEBIAN_POCL_ICD.is_file():  # only this PoCL's platform: listing and probing the others takes seconds
        env["OCL_ICD_VENDORS"] = str(DEBIAN_POCL_ICD)
    got = run_python(TWO_POCL, env=env, timeout=240)
    assert got.returncode == 0, got.stdout + got.stderr
    if got.stdout.startswith("SKIP"):
        pytest.skip(f"PoCL did not list two devices with POCL_DEVICES='pthread pthread': {got.stdout.strip()}")
    assert got.stdout.startswith("OK"), got.stdout
