"""A per-device flag that generated kernels raise on integer arithmetic with no result.

Integer ``//`` and ``%`` by a zero divisor and integer powers with a negative exponent
read from a tensor can only be detected on the device. A kernel that may hit them takes
the device's flag buffer (one int) as its last argument and ``atomic_or``s a bit into it
(``DIV_ZERO``, ``NEG_POW``) instead of returning a silently wrong value. Launching such a
kernel arms the flag; ``check`` (registered with ``backend.sync_hooks``, which Tensor
readback and ``zyx.synchronize`` run) reads an armed flag back, clears it and raises, so
the error surfaces at the latest when values are next read.
"""
from __future__ import annotations

import threading
import weakref
from typing import Any

import numpy as np

from zyx.backend import sync_hooks
from zyx.errors import DivisionByZeroError, IndexOutOfRange, IntegerArithmeticError

DIV_ZERO = 1
NEG_POW = 2
INDEX_OOB = 4  # a gathered index (embedding) outside its table; the kernel read row 0 instead

# Keyed by the Device object (each has its own context). Outside the buffer pool on
# purpose: a fixed per-device resource like the queue, never counted as a live buffer.
_flags: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
_armed: weakref.WeakSet[Any] = weakref.WeakSet()
_lock = threading.Lock()


def buffer(device: Any) -> Any:
    """The device's flag buffer (created zeroed on first use)."""
    buf = _flags.get(device)
    if buf is None:
        import pyopencl as cl

        with _lock:
            buf = _flags.get(device)
            if buf is None:
                buf = cl.Buffer(device.context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
                                hostbuf=np.zeros(1, np.int32))
                _flags[device] = buf
    return buf


def arm(device: Any) -> None:
    """Note that a kernel using the flag of ``device`` was launched (so ``check`` reads it)."""
    _armed.add(device)


def check(device: Any | None = None) -> None:
    """Read the armed flags of ``device`` (None: every device), clear them, raise for a set one."""
    import pyopencl as cl

    targets = [d for d in list(_armed) if device is None or d is device]
    for dev in targets:
        _armed.discard(dev)
        host = np.zeros(1, np.int32)
        cl.enqueue_copy(dev.queue, host, _flags[dev], is_blocking=True)
        if host[0]:
            cl.enqueue_copy(dev.queue, _flags[dev], np.zeros(1, np.int32), is_blocking=True)
            if host[0] & INDEX_OOB:
                raise IndexOutOfRange(f"IndexError: index out of range in a gather (embedding) kernel on {dev} "
                                      "(expected indices in [0, rows of the table))")
            if host[0] & DIV_ZERO:
                raise DivisionByZeroError("ZeroDivisionError: integer division or modulo by zero in a kernel "
                                          f"on {dev} (expected non-zero integer divisors)")
            raise IntegerArithmeticError("Integers to negative integer powers are not allowed (a negative "
                                         f"exponent was read by a kernel on {dev})")


sync_hooks.register(check)
