"""zyx.backend.pool: size classes, reuse, accounting and zyx.memory_stats()."""
from __future__ import annotations

import dataclasses
import gc
import os
import subprocess
import sys

import numpy as np
import pytest

import zyx
from zyx.backend import pool as pool_module
from zyx.backend.pool import size_class


def _stats(device: zyx.Device) -> dict[str, int]:
    gc.collect()
    return zyx.memory_stats(device)


def test_size_class_bounds() -> None:
    prev = 0
    for n in sorted(set(range(0, 5000)) | {2**k + d for k in range(12, 40) for d in (-1, 0, 1)}):
        c = size_class(n)
        assert c >= n and c >= 256
        assert c >= prev  # monotone
        prev = c
        if n > 2048:
            assert c - n <= n / 8, (n, c)


def test_memory_stats_keys(device: zyx.Device) -> None:
    s = zyx.memory_stats(device)
    for key in ("bytes_in_use", "peak_bytes", "live_buffers", "pooled_bytes"):
        assert isinstance(s[key], int) and s[key] >= 0
    assert s["peak_bytes"] >= s["bytes_in_use"]
    assert zyx.memory_stats(device.id) == zyx.memory_stats(device)


def test_buffer_accounting_and_pooling(device: zyx.Device) -> None:
    before = _stats(device)
    x = zyx.tensor(np.arange(10_000, dtype=np.float32), device=device)
    during = _stats(device)
    assert during["live_buffers"] == before["live_buffers"] + 1
    assert during["bytes_in_use"] - before["bytes_in_use"] >= 40_000
    assert during["peak_bytes"] >= during["bytes_in_use"]
    del x
    after = _stats(device)
    assert after["live_buffers"] == before["live_buffers"]
    assert after["bytes_in_use"] == before["bytes_in_use"]
    # the freed buffer is pooled, and pooled bytes are not in use
    assert after["pooled_bytes"] >= size_class(40_000)


def test_thousands_of_tensors_and_views_leak_nothing(device: zyx.Device) -> None:
    base = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    zyx.tensor(base, device=device).permute(2, 0, 1).contiguous().numpy()  # compile outside the loop
    before = _stats(device)
    keep = []
    for i in range(3000):
        t = zyx.tensor(base[: 1 + i % 3], device=device)
        views = [t[::-1], t.permute(2, 0, 1), t.reshape(-1), t[None, ..., 1], t.expand(2, *t.shape)]
        if i % 100 == 0:
            keep.append(zyx.tensor(base, device=device).permute(2, 0, 1).contiguous().realize())
            keep.append(zyx.zeros(17, device=device).realize())
        del t, views
    assert _stats(device)["live_buffers"] == before["live_buffers"] + len(keep)
    np.testing.assert_array_equal(keep[0].numpy(), base.transpose(2, 0, 1))
    del keep
    after = _stats(device)
    assert after["live_buffers"] == before["live_buffers"]
    assert after["bytes_in_use"] == before["bytes_in_use"]
    assert after["peak_bytes"] >= after["bytes_in_use"]


def test_views_keep_their_buffer_alive(device: zyx.Device) -> None:
    before = _stats(device)
    v = zyx.tensor(np.arange(12.0, dtype=np.float32), device=device).reshape(3, 4)[1:, ::2]
    assert _stats(device)["live_buffers"] == before["live_buffers"] + 1
    np.testing.assert_array_equal(v.numpy(), np.arange(12.0).reshape(3, 4)[1:, ::2])
    del v
    assert _stats(device)["live_buffers"] == before["live_buffers"]


def test_pool_reuses_buffers_in_a_loop(device: zyx.Device) -> None:
    data = np.ones(1000, dtype=np.float32)
    zyx.tensor(data, device=device)
    first = _stats(device)
    for _ in range(200):
        x = zyx.tensor(data, device=device)
        y = x[::2].contiguous()
        assert y.numpy().sum() == 500
        del x, y
    last = _stats(device)
    assert last["allocations"] - first["allocations"] <= 2
    assert last["reuses"] - first["reuses"] >= 399
    assert last["bytes_in_use"] == first["bytes_in_use"]


def test_empty_cache_releases_pooled_memory(device: zyx.Device) -> None:
    x = zyx.tensor(np.zeros(5000, dtype=np.float32), device=device)
    del x
    assert _stats(device)["pooled_bytes"] > 0
    in_use = _stats(device)["bytes_in_use"]
    device.pool.empty_cache()
    after = _stats(device)
    assert after["pooled_bytes"] == 0
    assert after["bytes_in_use"] == in_use


def test_zero_sized_buffers_are_counted_and_released(device: zyx.Device) -> None:
    before = _stats(device)
    x = zyx.zeros(0, 3, device=device).realize()
    assert _stats(device)["live_buffers"] == before["live_buffers"] + 1
    assert _stats(device)["bytes_in_use"] == before["bytes_in_use"]
    assert x.numpy().shape == (0, 3)
    del x
    assert _stats(device)["live_buffers"] == before["live_buffers"]


def test_negative_allocation(device: zyx.Device) -> None:
    with pytest.raises(zyx.AllocationError, match="negative"):
        device.pool.allocate(-1)


def test_capacity_never_exceeds_max_alloc(device: zyx.Device, monkeypatch: pytest.MonkeyPatch) -> None:
    # a request of exactly max_alloc bytes must not be rounded up past the device limit
    limit = 5000  # not a size-class boundary
    assert size_class(limit) > limit
    monkeypatch.setattr(device, "info", dataclasses.replace(device.info, max_alloc_bytes=limit))
    buf = device.pool.allocate(limit)
    assert buf.capacity == limit
    del buf
    with pytest.raises(zyx.AllocationError):
        device.pool.allocate(limit + 1)


def test_pool_trims_when_over_budget(device: zyx.Device) -> None:
    pool = pool_module.BufferPool(device, max_pooled_fraction=0.0)
    pool.max_pooled_bytes = 10_000
    bufs = [pool.allocate(4096) for _ in range(6)]
    assert pool.stats()["live_buffers"] == 6
    del bufs
    s = pool.stats()
    assert s["live_buffers"] == 0 and s["bytes_in_use"] == 0
    assert s["pooled_bytes"] <= 10_000
    assert s["peak_bytes"] == 6 * size_class(4096)


def _is_pocl_cpu(device: zyx.Device) -> bool:
    return device.kind == "cpu" and "portable computing language" in device.info.platform.lower()


@pytest.mark.parametrize("nbytes", [pool_module.HUGE_PAGE_MIN_BYTES, 5 * (1 << 20) + 12_345])
def test_large_buffers_use_huge_page_host_memory_on_pocl(device: zyx.Device, nbytes: int) -> None:
    """Big buffers on PoCL live in zyx-mapped, 2 MiB-aligned host memory that PoCL uses in place:
    values round-trip through host copies and kernels, and the mapping dies with the buffer."""
    import pyopencl as cl

    n = nbytes // 4
    x = np.random.default_rng(3).standard_normal(n).astype(np.float32)
    t = zyx.tensor(x, device=device)
    cl_buf = t._realized().cl
    if _is_pocl_cpu(device):
        assert cl_buf.get_info(cl.mem_info.FLAGS) & cl.mem_flags.USE_HOST_PTR
        assert cl_buf.get_host_array((nbytes,), np.uint8).ctypes.data % (2 << 20) == 0
    np.testing.assert_array_equal((t * 2 + 1).numpy(), x * 2 + 1)
    np.testing.assert_array_equal(t.flip(0).numpy(), x[::-1])
    before = _stats(device)
    del t, cl_buf
    after = _stats(device)
    assert after["live_buffers"] == before["live_buffers"] - 1


def test_huge_pages_can_be_turned_off_and_fall_back(device: zyx.Device, monkeypatch: pytest.MonkeyPatch) -> None:
    """With HUGE_PAGE_MIN_BYTES None, or when the OS refuses the mapping, buffers come from the
    OpenCL runtime as before, with the same values."""
    import pyopencl as cl

    device.pool.empty_cache()
    x = np.arange(2 << 20, dtype=np.float32)
    for patch in (("HUGE_PAGE_MIN_BYTES", None), ("_huge_page_host_memory", lambda nbytes: None)):
        with monkeypatch.context() as m:
            m.setattr(pool_module, *patch)
            t = zyx.tensor(x, device=device)
            assert not t._realized().cl.get_info(cl.mem_info.FLAGS) & cl.mem_flags.USE_HOST_PTR
            np.testing.assert_array_equal((t + 1).numpy(), x + 1)
            del t
            device.pool.empty_cache()


def _run_script(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


@pytest.mark.skipif(not zyx.devices(), reason="no OpenCL device available")
def test_releasing_pooled_buffers_waits_for_kernels_still_reading_them() -> None:
    """A huge-page buffer's host memory is Python's: releasing it (empty_cache, or the pool trimming
    itself) under queued kernels unmapped it beneath them: a segfault every time (3 of 3) before."""
    run = _run_script(
        "import numpy as np, zyx\n"
        "dev = zyx.default_device(); outs = []\n"
        "for i in range(3):\n"
        "    x = zyx.tensor(np.full(1 << 24, 1.0, np.float32))\n"
        "    outs += [(x * float(i + 1)).sum().realize() for _ in range(20)]\n"
        "    del x\n"
        "    dev.pool.empty_cache()\n"
        "print(sorted({float(o) for o in outs}))\n")
    assert run.returncode == 0, (run.returncode, run.stderr[-2000:])
    assert run.stdout.strip() == "[16777216.0, 33554432.0, 50331648.0]"


@pytest.mark.skipif(not zyx.devices(), reason="no OpenCL device available")
def test_a_script_may_end_with_kernels_still_queued() -> None:
    """``y = x.sum().realize()`` as a script's last line: the interpreter's teardown freed buffers under
    the running kernels (segfault in 2 of 3 runs of 50 queued sums of 64 MiB before the exit drain)."""
    run = _run_script(
        "import numpy as np, zyx\n"
        "x = zyx.tensor(np.ones(1 << 24, np.float32)).realize()\n"
        "ys = [x.sum().realize() for _ in range(50)]\n"
        "print('queued')\n")
    assert run.returncode == 0, (run.returncode, run.stderr[-2000:])
    assert run.stdout.strip() == "queued"


@pytest.mark.skipif(not zyx.devices() or not hasattr(os, "fork"), reason="needs a device and os.fork")
def test_a_forked_child_exits_without_waiting_for_the_parents_queue() -> None:
    """The exit drain is the parent's: a child forked with kernels queued has no driver threads, and waiting
    on its copy of the queue at exit hung forever."""
    run = _run_script(
        "import os, sys, numpy as np, zyx\n"
        "x = zyx.tensor(np.ones(1 << 24, np.float32)).realize()\n"
        "float(x.sum())\n"
        "ys = [x.sum().realize() for _ in range(50)]\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    sys.exit(0)\n"
        "_, status = os.waitpid(pid, 0)\n"
        "print(status, float(ys[-1]))\n")
    assert run.returncode == 0, (run.returncode, run.stderr[-2000:])
    assert run.stdout.split() == ["0", "16777216.0"]
