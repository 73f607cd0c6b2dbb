"""Host <-> device copies and device -> device copies of whole buffers."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from zyx.backend import journal
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


def write(buf: Buffer, host: np.ndarray, byte_offset: int = 0) -> None:
    """Copy a contiguous host array into ``buf`` at ``byte_offset`` (blocking)."""
    import pyopencl as cl

    if host.nbytes == 0:
        return
    if journal._open is not None:
        journal.note_write(buf)
    try:
        cl.enqueue_copy(buf.device.queue, buf.cl, np.ascontiguousarray(host).view(np.uint8).reshape(-1),
                        dst_offset=byte_offset, is_blocking=True)
    except cl.Error as exc:
        raise ZyxError(f"host to device copy of {host.nbytes} bytes failed on {buf.device}: {exc}") from None


def read(buf: Buffer, nbytes: int | None = None, byte_offset: int = 0) -> np.ndarray:
    """The first ``nbytes`` bytes of ``buf`` from ``byte_offset`` as a uint8 array (blocking)."""
    import pyopencl as cl

    nbytes = buf.nbytes - byte_offset if nbytes is None else nbytes
    out = np.empty(nbytes, dtype=np.uint8)
    if nbytes == 0:
        return out
    if journal._open is not None:
        journal.note_read()
    try:
        cl.enqueue_copy(buf.device.queue, out, buf.cl, src_offset=byte_offset, is_blocking=True)
    except cl.Error as exc:
        raise ZyxError(f"device to host copy of {nbytes} bytes failed on {buf.device}: {exc}") from None
    return out


def copy_buffer(src: Buffer, dst: Buffer, nbytes: int, src_offset: int = 0, dst_offset: int = 0) -> Any:
    """Copy ``nbytes`` between two buffers; across devices this goes through the host."""
    import pyopencl as cl

    if nbytes == 0:
        return None
    if journal._open is not None:
        journal.unreplayable("a buffer-to-buffer copy (not a launch) ran")
    if src.device is dst.device:
        return cl.enqueue_copy(src.device.queue, dst.cl, src.cl, byte_count=nbytes,
                               src_offset=src_offset, dst_offset=dst_offset)
    write(dst, read(src, nbytes, src_offset), dst_offset)
    return None
