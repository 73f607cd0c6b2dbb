"""Device buffers, a per-device pool that reuses freed ones by size class, and the
accounting behind ``zyx.memory_stats()``.

A ``Buffer`` returns its OpenCL memory to the pool the moment its last Python reference
dies. That is safe while kernels that use it are still queued: each device has one
in-order queue, so any later user of the recycled memory runs after them, and OpenCL
itself keeps the memory object alive for commands already enqueued.
"""
from __future__ import annotations

import mmap
import threading
from collections import defaultdict
from typing import TYPE_CHECKING, Any

from zyx.backend import journal
from zyx.errors import AllocationError

if TYPE_CHECKING:
    from zyx.backend.cl_device import ClDevice

_MIN_CLASS = 256

#: On PoCL's CPU devices, buffers of at least this many bytes live in host memory that zyx
#: maps itself and advises for transparent huge pages (2 MiB), which PoCL then uses in place
#: (``CL_MEM_USE_HOST_PTR``, no copy). PoCL's own buffers use 4 KiB pages: a kernel that
#: walks hundreds of rows at once (a transpose) then misses the TLB on most of them.
#: ``None`` turns it off (only for buffers allocated afterwards).
HUGE_PAGE_MIN_BYTES: int | None = 4 << 20
_HUGE_PAGE = 2 << 20

#: Tests set a byte here: every buffer handed out afterwards (new or reused) is first filled with it on
#: the device's queue, so an element a kernel fails to write shows up as that pattern instead of whatever
#: the memory held before. Never on a simulator, whose uninitialized-value check must see fresh memory.
POISON_BYTE: int | None = None


def _huge_page_host_memory(nbytes: int) -> Any:
    """``nbytes`` of zeroed, 2 MiB-aligned private anonymous memory advised for huge pages
    (a NumPy view keeping its mapping alive); None where the OS refuses."""
    import numpy as np

    try:
        m = mmap.mmap(-1, nbytes + _HUGE_PAGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    except (OSError, ValueError):
        return None
    raw = np.frombuffer(m, dtype=np.uint8)
    start = -raw.ctypes.data % _HUGE_PAGE
    view = raw[start:start + nbytes]
    try:
        m.madvise(mmap.MADV_HUGEPAGE, start, nbytes)
    except OSError:
        pass  # THP off: still correct memory, with small pages
    return view


def size_class(nbytes: int) -> int:
    """Round a request up to its size class: at most 1/8 wasted above 2 KiB."""
    if nbytes <= _MIN_CLASS:
        return _MIN_CLASS
    step = 1 << max(nbytes.bit_length() - 4, 0)
    return -(-nbytes // step) * step


class Buffer:
    """A block of device memory of at least ``nbytes`` bytes (``cl`` is None when empty)."""

    __slots__ = ("cl", "nbytes", "capacity", "pool", "__weakref__")

    def __init__(self, cl_buffer: Any, nbytes: int, capacity: int, pool: BufferPool) -> None:
        self.cl = cl_buffer
        self.nbytes = nbytes
        self.capacity = capacity
        self.pool = pool

    @property
    def device(self) -> ClDevice:
        return self.pool.device

    def __del__(self) -> None:
        pool = self.pool
        if pool is not None:
            self.pool = None  # type: ignore[assignment]
            pool.release(self.cl, self.capacity)

    def __repr__(self) -> str:
        return f"<zyx Buffer {self.nbytes} B on {self.pool.device.id if self.pool else '?'}>"


class BufferPool:
    """Allocates device buffers for one device and keeps freed ones for reuse."""

    def __init__(self, device: ClDevice, max_pooled_fraction: float = 0.25) -> None:
        self.device = device
        self._free: dict[int, list[Any]] = defaultdict(list)
        self._lock = threading.RLock()
        self.bytes_in_use = 0
        self.peak_bytes = 0
        self.live_buffers = 0
        self.pooled_bytes = 0
        self.allocations = 0
        self.reuses = 0
        self.max_pooled_bytes = int(device.info.global_mem_bytes * max_pooled_fraction)
        info = device.info
        self._huge = (hasattr(mmap, "MADV_HUGEPAGE") and info.kind == "cpu"
                      and "portable computing language" in info.platform.lower())
        # A simulator (Oclgrind) gets buffers of exactly the requested size, never reused: its
        # out-of-bounds and uninitialized-value checks then see each tensor's own bounds and fresh memory.
        # Nor are they freed while the context lives: Oclgrind 21.10's uninitialized-value plugin gives a
        # new buffer that lands where a smaller freed one was the old one's shadow size, so every byte past
        # it reads as uninitialized (reproduced with plain pyopencl: write 45 bytes, free, write 480, read).
        self._exact = bool(getattr(device, "simulator", False))
        self._retired: list[Any] = []

    def allocate(self, nbytes: int) -> Buffer:
        """A buffer of at least ``nbytes`` bytes, reused from the pool when possible."""
        if nbytes < 0:
            raise AllocationError(f"cannot allocate a negative size ({nbytes} bytes)")
        if nbytes == 0:
            with self._lock:
                self.live_buffers += 1
            return Buffer(None, 0, 0, self)
        info = self.device.info
        if nbytes > info.max_alloc_bytes:
            raise AllocationError(
                f"cannot allocate {nbytes} bytes on {self.device}: requested {nbytes} bytes, "
                f"{max(info.global_mem_bytes - self.bytes_in_use, 0)} bytes free of {info.global_mem_bytes}, "
                f"and one buffer may hold at most {info.max_alloc_bytes} bytes (CL_DEVICE_MAX_MEM_ALLOC_SIZE)"
            )
        cap = nbytes if self._exact else min(size_class(nbytes), info.max_alloc_bytes)  # never past the limit
        with self._lock:
            buf = None if self._exact else self._reuse(cap, nbytes)
            if buf is not None:
                return buf
            if self.bytes_in_use + cap > info.global_mem_bytes:
                self._trim(0)
                if self.bytes_in_use + cap > info.global_mem_bytes:
                    raise AllocationError(
                        f"out of device memory on {self.device}: requested {nbytes} bytes, "
                        f"{max(info.global_mem_bytes - self.bytes_in_use, 0)} bytes free "
                        f"of {info.global_mem_bytes}"
                    )
            cl_buf = self._create(cap, nbytes)
            self.allocations += 1
            self._account(cap)
        buf = Buffer(cl_buf, nbytes, cap, self)
        if journal.is_recording():  # a capture names this buffer's uses (backend.journal)
            journal.note_alloc(buf)
        if POISON_BYTE is not None and not self._exact:
            self._poison(cl_buf, nbytes)
        return buf

    def _poison(self, cl_buf: Any, nbytes: int) -> None:
        import numpy as np
        import pyopencl as cl

        cl.enqueue_fill_buffer(self.device.queue, cl_buf, np.uint8(POISON_BYTE), 0, nbytes)

    def capacity_of(self, nbytes: int) -> int:
        """The capacity ``allocate(nbytes)`` gives a buffer (0 where it never reuses one: a simulator)."""
        if self._exact or nbytes <= 0 or nbytes > self.device.info.max_alloc_bytes:
            return 0
        return min(size_class(nbytes), self.device.info.max_alloc_bytes)

    def allocate_pooled(self, nbytes: int, cap: int) -> Buffer:
        """``allocate(nbytes)`` for a replayed plan's buffer, ``cap`` from ``capacity_of``: a pooled buffer of
        that capacity without the checks ``allocate`` makes (a capture's sizes passed them), else ``allocate``."""
        if cap:
            with self._lock:
                buf = self._reuse(cap, nbytes)
            if buf is not None:
                return buf
        return self.allocate(nbytes)

    def _reuse(self, cap: int, nbytes: int) -> Buffer | None:
        """A pooled buffer of capacity ``cap`` holding ``nbytes``, accounted; None when none is free
        (the caller holds the lock)."""
        bucket = self._free.get(cap)
        if not bucket:
            return None
        cl_buf = bucket.pop()
        self.pooled_bytes -= cap
        self.reuses += 1
        self._account(cap)
        buf = Buffer(cl_buf, nbytes, cap, self)
        if journal.is_recording():
            journal.note_alloc(buf)
        if POISON_BYTE is not None:
            self._poison(cl_buf, nbytes)
        return buf

    def _create(self, cap: int, nbytes: int) -> Any:
        import pyopencl as cl

        if self._huge and HUGE_PAGE_MIN_BYTES is not None and cap >= HUGE_PAGE_MIN_BYTES:
            host = _huge_page_host_memory(cap)
            if host is not None:
                try:  # the buffer holds ``host`` (and so the mapping) until it is released
                    return cl.Buffer(self.device.context, cl.mem_flags.READ_WRITE | cl.mem_flags.USE_HOST_PTR,
                                     hostbuf=host)
                except (cl.MemoryError, cl.Error):
                    pass
        try:
            return cl.Buffer(self.device.context, cl.mem_flags.READ_WRITE, cap)
        except (cl.MemoryError, cl.Error):
            self._trim(0)
            try:
                return cl.Buffer(self.device.context, cl.mem_flags.READ_WRITE, cap)
            except (cl.MemoryError, cl.Error) as exc:
                raise AllocationError(
                    f"out of device memory on {self.device}: requested {nbytes} bytes, about "
                    f"{max(self.device.info.global_mem_bytes - self.bytes_in_use, 0)} bytes free "
                    f"({exc})"
                ) from None

    def _account(self, cap: int) -> None:
        self.bytes_in_use += cap
        self.live_buffers += 1
        self.peak_bytes = max(self.peak_bytes, self.bytes_in_use)

    def release(self, cl_buf: Any, cap: int) -> None:
        """Return a dead buffer's memory to the pool (called by ``Buffer.__del__``)."""
        with self._lock:
            self.live_buffers -= 1
            if cl_buf is None:
                return
            self.bytes_in_use -= cap
            if self._exact:
                self._retired.append(cl_buf)
                return
            self._free[cap].append(cl_buf)
            self.pooled_bytes += cap
            if self.pooled_bytes > self.max_pooled_bytes:
                self._trim(self.max_pooled_bytes // 2)

    def _trim(self, keep_bytes: int) -> None:
        """Release pooled buffers (largest first) until at most ``keep_bytes`` stay pooled.

        OpenCL keeps a released buffer's memory alive for the commands still queued on it, but not
        the host memory of a ``USE_HOST_PTR`` buffer (the huge-page ones): that is Python's, unmapped
        once pyopencl drops it, under a kernel that may still be reading it (a segfault). So the queue
        is drained before the first of those goes."""
        drained = False
        for cap in sorted(self._free, reverse=True):
            bucket = self._free[cap]
            while bucket and self.pooled_bytes > keep_bytes:
                cl_buf = bucket.pop()
                if not drained and getattr(cl_buf, "hostbuf", None) is not None:
                    self.device.synchronize()
                    drained = True
                cl_buf.release()
                self.pooled_bytes -= cap
        for cap in [c for c, b in self._free.items() if not b]:
            del self._free[cap]

    def empty_cache(self) -> None:
        """Release every pooled buffer back to the driver."""
        with self._lock:
            self._trim(0)

    def stats(self) -> dict[str, int]:
        """The memory accounting of this device (see ``zyx.memory_stats``)."""
        with self._lock:
            return {
                "bytes_in_use": self.bytes_in_use,
                "peak_bytes": self.peak_bytes,
                "live_buffers": self.live_buffers,
                "pooled_bytes": self.pooled_bytes,
                "allocations": self.allocations,
                "reuses": self.reuses,
            }
