"""Device-side error flags for kernels that validate a value only they can read.

``write_slice_doff`` reads its offset from a device tensor, so the host cannot check it
before launch. Each launch gets a slot in a small per-device flag buffer; work-item 0
writes ``(bad, offset)`` there (unconditionally, so slots need no clearing) and the kernel
writes nothing when ``bad``. ``check`` reads the used slots back in one transfer and raises
``ContractError`` for the first bad launch. It is registered with
``backend.sync_hooks``, which Tensor readback and ``zyx.synchronize`` run, so the error
surfaces at the latest when values are next read.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from zyx.backend import sync_hooks
from zyx.backend.device import Device
from zyx.errors import ContractError

SLOTS = 256  # launches that may be pending before a check is forced
_SLOT_BYTES = 16  # (long bad, long offset)


@dataclass
class _DeviceFlags:
    """One device's flag buffer and the messages of its pending launches, by slot."""

    cl_buffer: Any
    pending: list[tuple[int, str]] = field(default_factory=list)  # (slot, what was launched)


_flags: dict[str, _DeviceFlags] = {}
_lock = threading.RLock()


def _state(device: Device) -> _DeviceFlags:
    import pyopencl as cl

    st = _flags.get(device.id)
    if st is None:
        # Outside the buffer pool on purpose: a fixed per-device resource like the queue,
        # not a tensor's buffer, so it never shows in memory_stats()["live_buffers"].
        st = _DeviceFlags(cl.Buffer(device.context, cl.mem_flags.READ_WRITE, SLOTS * _SLOT_BYTES))
        _flags[device.id] = st
    return st


def reserve(device: Device, describe: str) -> tuple[Any, int]:
    """A (flag buffer, slot) for one launch; ``describe`` frames the error message.

    ``describe`` may contain ``{offset}``, filled with the value the kernel read.
    When every slot is pending, the pending launches are checked first (a sync).
    """
    with _lock:
        st = _state(device)
        if len(st.pending) >= SLOTS:
            check(device)
        slot = len(st.pending)
        st.pending.append((slot, describe))
        return st.cl_buffer, slot


def pending(device: Device | None = None) -> int:
    """How many launches on ``device`` (None: all devices) have not been checked yet."""
    with _lock:
        return sum(len(st.pending) for dev_id, st in _flags.items() if device is None or dev_id == device.id)


def check(device: Device | None = None) -> None:
    """Wait for the flagged launches on ``device`` (None: all) and raise for the first bad one."""
    import pyopencl as cl

    from zyx.backend.device import devices

    targets = [device] if device is not None else [d for d in devices() if d.id in _flags]
    for dev in targets:
        with _lock:
            st = _flags.get(dev.id)
            if st is None or not st.pending:
                continue
            entries, st.pending = st.pending, []
            host = np.empty(2 * len(entries), dtype=np.int64)
            cl.enqueue_copy(dev.queue, host, st.cl_buffer, is_blocking=True)
        bad = [(describe, int(host[2 * slot + 1])) for slot, describe in entries if host[2 * slot]]
        if bad:
            describe, offset = bad[0]
            more = f" ({len(bad) - 1} more launch(es) failed the same check)" if len(bad) > 1 else ""
            raise ContractError(describe.format(offset=offset) + more)


sync_hooks.register(check)
