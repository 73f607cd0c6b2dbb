"""zyx.profiler: every launch, build and copy of a block, its table and its Chrome trace."""
from __future__ import annotations

import json
import uuid
from pathlib import Path

import numpy as np
import pytest

import zyx
from zyx.backend import launch as launch_module
from zyx.profiler import profile

pytestmark = pytest.mark.skipif(not zyx.devices(), reason="no OpenCL device available")


def _kernels(prof: profile) -> list:
    return [e for e in prof.events() if e.kind == "kernel"]


def _fresh_size() -> int:
    """A size no earlier test used, so its kernels are built (not found in this process's caches)."""
    return 1000 + uuid.uuid4().int % 5000


def test_kernel_events_equal_the_launch_count_eager_replayed_and_jitted(device: zyx.Device) -> None:
    a = zyx.tensor(np.arange(12, dtype=np.float32).reshape(3, 4), device=device)

    @zyx.jit
    def f(x: zyx.Tensor) -> zyx.Tensor:
        return (x * 2 + 1).sum(0)

    f(a).numpy()
    f(a).numpy()  # captured: the calls in the block replay
    with profile() as prof:
        before = zyx.kernel_count()
        for _ in range(3):  # the second and third realize replay the recorded schedule
            ((a + 1).exp() * a).sum(1).numpy()
        np.testing.assert_allclose(f(a).numpy(), (np.arange(12).reshape(3, 4) * 2 + 1).sum(0))
        (a @ a.T).relu().numpy()
        launched = zyx.kernel_count() - before
    assert launched >= 5
    assert len(_kernels(prof)) == launched
    assert all(e.device == device.id for e in _kernels(prof))


def test_events_are_timed_on_one_clock(device: zyx.Device) -> None:
    x = zyx.rand(64, 128, device=device)
    with profile() as prof:
        for _ in range(3):
            (x.exp() * 3).sum(1).numpy()
    events = prof.events()
    assert [e.kind for e in events].count("kernel") >= 3
    for e in events:
        assert isinstance(e.name, str) and e.name
        assert 0 <= e.host_start <= e.host_end
        assert e.start <= e.end and e.duration >= 0
    for k in _kernels(prof):
        # the kernel starts after the host call that queued it began (1 ms slack for clock rounding)
        assert k.start >= k.host_start - 1000
    host_order = [e.host_start for e in events]
    assert host_order == sorted(host_order)


def test_bytes_and_fused_ops_of_an_elementwise_kernel(device: zyx.Device) -> None:
    n = _fresh_size()
    a, b = zyx.rand(n, device=device), zyx.rand(n, device=device)
    a.numpy(), b.numpy()
    with profile() as prof:
        ((a + b) * b).numpy()
    (k,) = _kernels(prof)
    assert k.bytes == 3 * 4 * n  # two inputs read, one output written
    assert {"add", "mul"} <= set(k.ops)
    col, row = zyx.rand(n, 1, device=device), zyx.rand(1, 7, device=device)
    col.numpy(), row.numpy()
    with profile() as prof:
        (col - row).numpy()
    (k,) = _kernels(prof)
    assert k.bytes == 4 * (n + 7 + 7 * n)  # a broadcast input is read once, not once per output


def test_builds_and_copies_are_recorded(device: zyx.Device) -> None:
    n = _fresh_size()
    host = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    with profile() as prof:
        x = zyx.tensor(host, device=device)
        got = (x * 7.5 - 2).numpy()
    np.testing.assert_allclose(got, host * 7.5 - 2, rtol=1e-6)
    kinds = {(e.kind, e.name) for e in prof.events()}
    assert ("transfer", "host_to_device") in kinds and ("transfer", "device_to_host") in kinds
    up = next(e for e in prof.events() if e.name == "host_to_device")
    down = next(e for e in prof.events() if e.name == "device_to_host")
    assert up.bytes == down.bytes == 4 * n
    builds = [e for e in prof.events() if e.kind == "build"]
    assert builds and all(b.detail in ("compile", "binary cache", "in memory") for b in builds)


def test_replayed_launches_are_seen_and_nothing_after_the_block(device: zyx.Device) -> None:
    x = zyx.rand(33, device=device)
    (x + 5).numpy()
    with profile() as prof:
        (x + 5).numpy()  # a schedule-cache replay: launched through the prepared path
    assert len(_kernels(prof)) == 1
    (x + 5).numpy()
    assert len(_kernels(prof)) == 1


def test_profiles_nest_and_an_exception_still_closes_the_block(device: zyx.Device) -> None:
    x = zyx.rand(40, device=device)
    x.numpy()
    with profile() as outer:
        (x * 3).numpy()
        with pytest.raises(ValueError, match="inside"):
            with profile() as inner:
                (x - 3).numpy()
                raise ValueError("inside")
    assert len(_kernels(inner)) == 1 and len(_kernels(outer)) == 2
    (x - 4).numpy()
    assert len(_kernels(outer)) == 2


def test_table_like_pytorchs(device: zyx.Device) -> None:
    x = zyx.rand(128, 64, device=device)
    with profile() as prof:
        for _ in range(4):
            (x.exp() + 1).sum(0).numpy()
        (x * 2).numpy()
    averages = prof.key_averages()
    row = next(a for a in averages if a.kind == "kernel" and "exp" in a.name)
    assert row.calls == 4 and row.device_time_total > 0
    assert row.device_time_avg == pytest.approx(row.device_time_total / 4)
    table = averages.table(sort_by="device_time_total", row_limit=2)
    lines = table.splitlines()
    assert "Name" in lines[1] and "Calls" in lines[1] and "Device total" in lines[1] and "GB/s" in lines[1]
    assert len(lines) == 2 + 1 + 2 + 2  # rules and header, two rows, a rule and the totals
    assert "kernel launches" in lines[-1]
    totals = [a.device_time_total for a in averages]
    first = lines[3].split()[0]
    assert first == max(averages, key=lambda a: a.device_time_total).name[:60]
    assert max(totals) > 0
    assert len(averages.table(row_limit=-1).splitlines()) == 2 + 1 + len(averages) + 2
    with pytest.raises(ValueError, match="sort_by must be one of"):
        averages.table(sort_by="cuda_time")


def test_chrome_trace(device: zyx.Device, tmp_path: Path) -> None:
    x = zyx.rand(50, device=device)
    with profile() as prof:
        before = zyx.kernel_count()
        (x.sin() + x).sum().numpy()
        (x * x).numpy()
        launched = zyx.kernel_count() - before
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(path)
    trace = json.loads(path.read_text())
    events = trace["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert names[0] == "host" and any(n.startswith("queue ") for t, n in names.items() if t)
    complete = [e for e in events if e["ph"] == "X"]
    assert all({"ts", "dur", "pid", "tid", "name"} <= set(e) and e["dur"] >= 0 for e in complete)
    on_device = [e for e in complete if e["tid"] != 0 and e["cat"] == "kernel"]
    assert len(on_device) == launched
    assert not list(tmp_path.glob(".trace.json.*"))  # the temporary file was renamed, not left behind


def test_misuse_is_reported() -> None:
    prof = profile()
    with pytest.raises(RuntimeError, match="still open"):
        prof.events()
    with prof:
        with pytest.raises(RuntimeError, match="still open"):
            prof.key_averages()
    with pytest.raises(RuntimeError, match="entered once"):
        with prof:
            pass


def test_split_launch_is_one_event(device: zyx.Device) -> None:
    src = f"/* {uuid.uuid4().hex} */\n__kernel void zyx_test_fill(__global int *x) {{ x[get_global_id(0)] = 3; }}\n"
    kernel = launch_module.compile_kernel(device, src, "zyx_test_fill")
    buf = device.pool.allocate(4 * 10)
    with profile() as prof:
        launch_module.launch(kernel, (8,), (4,), [buf.cl])
        launch_module.launch(kernel, (2,), (2,), [buf.cl], offset=(8,), counts=False)
    (k,) = _kernels(prof)
    assert k.name == "zyx_test_fill" and k.bytes >= 40
