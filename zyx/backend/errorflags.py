"""Device-side error flags: errors that only a kernel can see, raised on the host at readback.

Some errors depend on values only the device reads: an integer ``//`` or ``%`` by a zero
divisor, an integer power with a negative exponent read from a tensor, a gathered index
outside its table (IR kernels), an offset read from a device tensor (``write_slice_doff``).
Each device has one flag buffer of 16-byte slots, and a kernel that may hit such an error
takes ``reserve(device)``'s buffer and slot as arguments:

- slot 0 is the device's word of error bits: an IR kernel ``atomic_or``s ``DIV_ZERO``,
  ``NEG_POW`` or ``INDEX_OOB`` into its first int instead of returning a silently wrong value
  (its message follows from the bit);
- ``reserve(device, describe)`` gives one launch a slot of its own, where work-item 0 writes
  ``(bad, value)`` as two longs (unconditionally, so slots need no clearing); ``describe``
  frames the message.

``check`` (registered with ``backend.sync_hooks``, which Tensor readback and
``zyx.synchronize`` run) reads the reserved part of the buffer back in one transfer and
raises, so the error surfaces at the latest when values are next read.
"""
from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from zyx.backend import journal, sync_hooks
from zyx.errors import ContractError, DivisionByZeroError, IndexOutOfRange, IntegerArithmeticError, ShapeError

DIV_ZERO = 1
NEG_POW = 2
INDEX_OOB = 4  # a gathered or scattered index outside its axis; the kernel read element 0 or wrote nothing
PROB_INPUT = 8  # binary_cross_entropy's input outside [0, 1] or NaN (Op.CHECK_PROB_INPUT); the value read as NaN
PROB_TARGET = 16  # the same for its target (Op.CHECK_PROB_TARGET)
SLOTS = 256  # launches with a slot of their own that may be pending before a check is forced
_SLOT_LONGS = 2  # (bad, value)


@dataclass
class _DeviceFlags:
    """One device's flag buffer: whether the bits of slot 0 may be set, and the message of
    each pending launch with a slot of its own, by slot."""

    cl_buffer: Any
    armed: bool = False
    pending: list[tuple[int, str, type]] = field(default_factory=list)
    word: Any = None  # a sub-buffer over slot 0 for kernels that only read the bits (``word_buffer``)


# Keyed by the Device object (each has its own context). Outside the buffer pool on
# purpose: a fixed per-device resource like the queue, never counted as a live buffer.
_flags: weakref.WeakKeyDictionary[Any, _DeviceFlags] = weakref.WeakKeyDictionary()
_lock = threading.RLock()


def _state(device: Any) -> _DeviceFlags:
    st = _flags.get(device)
    if st is None:
        import pyopencl as cl

        with _lock:
            st = _flags.get(device)
            if st is None:
                zeros = np.zeros((SLOTS + 1) * _SLOT_LONGS, np.int64)  # slot 0's bits start clear
                st = _DeviceFlags(cl.Buffer(device.context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
                                            hostbuf=zeros))
                _flags[device] = st
    return st


def reserve(device: Any, describe: str | None = None, error: type = ContractError) -> tuple[Any, int]:
    """The (flag buffer, slot) for one launch on ``device``, which ``check`` will then read.

    Without ``describe``: slot 0, the error bits shared by every IR kernel. With it: a slot of
    this launch's own; ``describe`` is the message for a bad launch and may contain
    ``{offset}``, filled with the value the kernel wrote, and is raised as ``error``. When every
    slot is pending, the pending launches are checked first (a sync).
    """
    st = _state(device)
    if describe is None:
        st.armed = True
        return st.cl_buffer, 0
    journal.unreplayable("a launch with an error slot of its own ran (its slot is numbered per launch)")
    with _lock:
        if len(st.pending) >= SLOTS:
            check(device)
        slot = len(st.pending) + 1
        st.pending.append((slot, describe, error))
        return st.cl_buffer, slot


def unread(device: Any) -> bool:
    """Whether a launch on ``device`` that can flag an error ran with the bits not read since (``check``
    would read them)."""
    st = _flags.get(device)
    return st is not None and (st.armed or bool(st.pending))


def word_buffer(device: Any) -> Any:
    """Slot 0 of ``device``'s flag buffer as a buffer of its own (a sub-buffer), for a kernel that only reads
    the error bits (a guarded in-place update that writes nothing when they are set). Unlike ``reserve`` it arms
    no check, and a plan that launches such a kernel (``graph.plan``) does not arm one at replay either."""
    st = _state(device)
    if st.word is None:
        with _lock:
            if st.word is None:
                st.word = st.cl_buffer.get_sub_region(0, 16)
    return st.word


def word_of(device: Any) -> Any | None:
    """The ``word_buffer`` of ``device`` if one was made (to recognize it among launch arguments)."""
    st = _flags.get(device)
    return None if st is None else st.word


def buffer_of(device: Any) -> Any | None:
    """The flag buffer of ``device`` if one was made (to recognize it among launch arguments)."""
    st = _flags.get(device)
    return None if st is None else st.cl_buffer


def pending(device: Any | None = None) -> int:
    """How many launches with a slot of their own on ``device`` (None: all devices) have not
    been checked yet."""
    with _lock:
        return sum(len(st.pending) for dev, st in list(_flags.items()) if device is None or dev is device)


def check(device: Any | None = None) -> None:
    """Wait for the flagged launches on ``device`` (None: every device), clear what they set and
    raise for the first error: the bits of slot 0 first, then the first bad slot."""
    if device is not None:  # every readback runs this: the common nothing-to-check case in a few steps
        st = _flags.get(device)
        if st is None or not (st.armed or st.pending):
            return
    import pyopencl as cl

    for dev, st in list(_flags.items()):
        if device is not None and dev is not device:
            continue
        with _lock:
            if not st.armed and not st.pending:
                continue
            st.armed = False  # before the read: a kernel launched meanwhile arms it again
            host = np.empty((1 + len(st.pending)) * _SLOT_LONGS, np.int64)
            cl.enqueue_copy(dev.queue, host, st.cl_buffer, is_blocking=True)
            bits = int(host[:1].view(np.int32)[0])  # slot 0's first int
            if bits:  # a slot's launches stay pending: the next check reads them
                cl.enqueue_copy(dev.queue, st.cl_buffer, np.zeros(1, np.int32), is_blocking=True)
                _raise_bits(bits, dev)
            entries, st.pending = st.pending, []
        bad = [(describe, error, int(host[_SLOT_LONGS * slot + 1])) for slot, describe, error in entries
               if host[_SLOT_LONGS * slot]]
        if bad:
            describe, error, offset = bad[0]
            more = f" ({len(bad) - 1} more launch(es) failed the same check)" if len(bad) > 1 else ""
            raise error(describe.format(offset=offset) + more)


def _raise_bits(bits: int, device: Any) -> None:
    for bit, what in ((PROB_INPUT, "input"), (PROB_TARGET, "target")):  # input first, as PyTorch checks it first
        if bits & bit:
            raise ShapeError(f"binary_cross_entropy: all elements of {what} should be between 0 and 1 (a value "
                             f"outside [0, 1] or NaN was read by a kernel on {device}; the loss computed from it "
                             "holds NaN there)")
    if bits & INDEX_OOB:
        raise IndexOutOfRange(f"IndexError: index out of range in a gather or scatter kernel (x[idx], "
                              f"gather, scatter, embedding) on {device} (expected indices in [-size, size) for x[idx], "
                              "[0, size) otherwise)")
    if bits & DIV_ZERO:
        raise DivisionByZeroError("ZeroDivisionError: integer division or modulo by zero in a kernel "
                                  f"on {device} (expected non-zero integer divisors)")
    raise IntegerArithmeticError("Integers to negative integer powers are not allowed (a negative "
                                 f"exponent was read by a kernel on {device})")


sync_hooks.register(check)
