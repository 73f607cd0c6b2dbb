"""Host <-> device copies and device -> device copies of whole buffers."""
from __future__ import annotations

import atexit
import threading
from collections import deque
from typing import TYPE_CHECKING, Any

import numpy as np

from zyx.backend import journal, profiling
from zyx.backend.pool import Buffer
from zyx.errors import ZyxError

if TYPE_CHECKING:
    from zyx.backend.device import Device


def upload(device: Device, host: np.ndarray) -> Buffer:
    """A new device buffer holding the bytes of ``host`` (copied before returning)."""
    host = np.ascontiguousarray(host)
    buf = device.pool.allocate(host.nbytes)
    if host.nbytes:
        write(buf, host)
    return buf


# An upload up to this size is copied on the host and enqueued without waiting: a blocking write waits for
# every kernel queued before it, a sync in the middle of an eager step (a mask's arange, a small index)
ASYNC_WRITE_MAX = 1 << 16
MAX_IN_FLIGHT = 64
_in_flight: deque = deque()  # pyopencl's events of async writes: freeing one waits for it, so they are kept
_in_flight_lock = threading.Lock()
_drain_registered = False


def _keep_until_done(event: Any) -> None:
    """Hold an async write's event (it holds the host copy) until the write is done; drops finished ones."""
    import pyopencl as cl

    global _drain_registered
    done = cl.command_execution_status.COMPLETE
    with _in_flight_lock:
        if not _drain_registered:  # registered after pyopencl's import, so it runs before pyopencl's own handlers
            atexit.register(_drain_in_flight)
            _drain_registered = True
        _in_flight.append(event)
        while _in_flight and (len(_in_flight) > MAX_IN_FLIGHT
                              or _in_flight[0].command_execution_status == done):
            _in_flight.popleft().wait()


def _drain_in_flight() -> None:
    """Wait for the async writes still held (at exit: before pyopencl tears its objects down)."""
    with _in_flight_lock:
        while _in_flight:
            _in_flight.popleft().wait()


def write(buf: Buffer, host: np.ndarray, byte_offset: int = 0) -> None:
    """Copy a contiguous host array into ``buf`` at ``byte_offset``: ``host`` may change once this returns
    (a small array is copied and the write queued; a large one is written before returning)."""
    import pyopencl as cl

    if host.nbytes == 0:
        return
    if journal.is_recording():
        journal.note_write(buf)
    start = profiling.now_ns() if profiling._sinks else 0
    small = host.nbytes <= ASYNC_WRITE_MAX
    try:
        data = np.ascontiguousarray(host)
        data = (data.copy() if small else data).view(np.uint8)
        event = cl.enqueue_copy(buf.device.queue, buf.cl, data.reshape(-1), dst_offset=byte_offset,
                                is_blocking=not small)
        if small:
            _keep_until_done(event)
    except cl.Error as exc:
        raise ZyxError(f"host to device copy of {host.nbytes} bytes failed on {buf.device}: {exc}") from None
    if profiling._sinks:
        _note_copy("host_to_device", buf.device, start, host.nbytes)


def _note_copy(name: str, device: Any, start: int, nbytes: int) -> None:
    """A copy for the open profiles (host time: a blocking copy waits for the work queued before it too)."""
    profiling.note(profiling.RawEvent("transfer", name, device, start, profiling.now_ns(), nbytes=nbytes))


def read(buf: Buffer, nbytes: int | None = None, byte_offset: int = 0) -> np.ndarray:
    """The first ``nbytes`` bytes of ``buf`` from ``byte_offset`` as a uint8 array (blocking)."""
    nbytes = buf.nbytes - byte_offset if nbytes is None else nbytes
    out = np.empty(nbytes, dtype=np.uint8)
    if nbytes:
        read_into(buf, out, byte_offset)
    return out


_read_buffer: Any = None  # pyopencl's clEnqueueReadBuffer binding, found on the first read


def _public_read(queue: Any, mem: Any, host: np.ndarray, offset: int, wait_for: Any, blocking: bool) -> Any:
    import pyopencl as cl

    return cl.enqueue_copy(queue, host, mem, src_offset=offset, is_blocking=blocking)


def read_into(buf: Buffer, out: np.ndarray, byte_offset: int = 0) -> None:
    """Fill the contiguous, non-empty host array ``out`` from ``buf`` at ``byte_offset`` (blocking)."""
    global _read_buffer
    import pyopencl as cl

    if _read_buffer is None:
        # the binding enqueue_copy dispatches to, called directly: enqueue_copy's argument sorting is a
        # large share of a small result's read (public enqueue_copy as a fallback)
        _read_buffer = getattr(getattr(cl, "_cl", None), "_enqueue_read_buffer", None) or _public_read
    if journal.is_recording():
        journal.note_read()
    start = profiling.now_ns() if profiling._sinks else 0
    try:
        try:
            _read_buffer(buf.device.queue, buf.cl, out, byte_offset, None, True)
        except TypeError:  # a pyopencl whose private binding takes other arguments: the public call
            if _read_buffer is _public_read:
                raise
            _read_buffer = _public_read
            _public_read(buf.device.queue, buf.cl, out, byte_offset, None, True)
    except cl.Error as exc:
        raise ZyxError(f"device to host copy of {out.nbytes} bytes failed on {buf.device}: {exc}") from None
    if profiling._sinks:
        _note_copy("device_to_host", buf.device, start, out.nbytes)


def to_device(src: Buffer, device: Device) -> Buffer:
    """A new buffer on ``device`` holding the bytes of ``src`` (another device's). Devices of different
    platforms share no context, so the bytes go through the host: read once the work queued before on
    ``src``'s queue has run, then written into ``device``'s queue (a profile shows both halves)."""
    return upload(device, read(src))


def copy_buffer(src: Buffer, dst: Buffer, nbytes: int, src_offset: int = 0, dst_offset: int = 0) -> Any:
    """Copy ``nbytes`` between two buffers; across devices this goes through the host."""
    import pyopencl as cl

    if nbytes == 0:
        return None
    if journal.is_recording():
        journal.unreplayable("a buffer-to-buffer copy (not a launch) ran")
    if src.device is dst.device:
        start = profiling.now_ns() if profiling._sinks else 0
        event = cl.enqueue_copy(src.device.queue, dst.cl, src.cl, byte_count=nbytes,
                                src_offset=src_offset, dst_offset=dst_offset)
        if profiling._sinks:
            profiling.note(profiling.RawEvent("transfer", "device_to_device", src.device, start, profiling.now_ns(),
                                              [event], 2 * nbytes))
        return event
    write(dst, read(src, nbytes, src_offset), dst_offset)
    return None
