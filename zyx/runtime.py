"""Process-wide runtime controls: synchronization, memory and build statistics, debug level."""
from __future__ import annotations

from typing import Any

from zyx import settings
from zyx.backend import sync_hooks
from zyx.backend.device import Device, devices, resolve
from zyx.backend.program import BuildStats


def synchronize(device: Any = None) -> None:
    """Wait until all queued work has finished (on ``device``, or on every device)."""
    # a device without a queue has nothing queued and no flags armed
    targets = [d for d in devices() if d.in_use] if device is None else [resolve(device)]
    for dev in targets:
        dev.synchronize()
    for dev in targets:
        sync_hooks.run(dev)  # device-side error flags (write_slice_doff)


def memory_stats(device: Device | str | None = None) -> dict[str, int]:
    """Memory accounting of a device: bytes_in_use, peak_bytes, live_buffers, pooled_bytes, ..."""
    return resolve(device).pool.stats()


def build_stats() -> dict[str, int]:
    """Programs this process needed so far: ``source_builds`` (compiled from OpenCL C), ``binary_loads``
    (read from the on-disk cache) and ``memory_hits`` (found in this process's cache)."""
    return {"source_builds": BuildStats.source_builds, "binary_loads": BuildStats.binary_loads,
            "memory_hits": BuildStats.memory_hits}


def debug(level: int) -> None:
    """Set the debug level: 0 silent, 1 print each launch with its time, 2 also new kernels' source."""
    settings.set_debug(level)
