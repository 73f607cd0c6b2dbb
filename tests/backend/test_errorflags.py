"""zyx.backend.errorflags: one flag buffer per device; slot 0's error bits (IR kernels) and
slots of their own (write_slice_doff) raise at the next check, then are clear."""
from __future__ import annotations

import re
import uuid

import numpy as np
import pytest

import zyx
from zyx.backend import errorflags, sync_hooks
from zyx.backend import launch as launch_module
from zyx.errors import ContractError, DivisionByZeroError, IndexOutOfRange, IntegerArithmeticError

pytestmark = pytest.mark.skipif(not zyx.devices(), reason="no OpenCL device available")


def _set_bits(device: zyx.Device, bits: int) -> None:
    """Launch a kernel that ors ``bits`` into the device's error bits, as IR kernels do."""
    src = (f"/* {uuid.uuid4().hex} */\n__kernel void zyx_test_bits(__global int *zyx_err) "
           f"{{ atomic_or(zyx_err, {bits}); }}\n")
    kernel = launch_module.compile_kernel(device, src, "zyx_test_bits")
    launch_module.launch(kernel, (1,), (1,), [errorflags.reserve(device)[0]])


def _write_slot(device: zyx.Device, bad: int, value: int, describe: str) -> None:
    """Launch a kernel that writes (bad, value) to a slot of its own, as write_slice_doff does."""
    src = (f"/* {uuid.uuid4().hex} */\n__kernel void zyx_test_slot(__global long *zyx_flags, const int zyx_slot) "
           f"{{ zyx_flags[2 * zyx_slot] = {bad}; zyx_flags[2 * zyx_slot + 1] = {value}; }}\n")
    kernel = launch_module.compile_kernel(device, src, "zyx_test_slot")
    buf, slot = errorflags.reserve(device, describe)
    assert slot >= 1  # slot 0 holds the error bits
    launch_module.launch(kernel, (1,), (1,), [buf, np.int32(slot)])


@pytest.mark.parametrize(("bits", "error", "message"), [
    (errorflags.DIV_ZERO, DivisionByZeroError, "integer division or modulo by zero"),
    (errorflags.NEG_POW, IntegerArithmeticError, "negative integer powers"),
    (errorflags.INDEX_OOB | errorflags.DIV_ZERO, IndexOutOfRange, "index out of range in a gather"),
])
def test_error_bits_raise_once_at_the_check(device: zyx.Device, bits: int, error: type, message: str) -> None:
    errorflags.check(device)
    _set_bits(device, bits)
    with pytest.raises(error, match=message) as info:
        sync_hooks.run(device)  # what readback and zyx.synchronize run
    assert str(device) in str(info.value)
    errorflags.check(device)  # cleared: nothing more to raise
    _set_bits(device, 0)
    errorflags.check(device)


def test_slots_raise_the_first_bad_launch_with_its_value(device: zyx.Device) -> None:
    errorflags.check(device)
    _write_slot(device, 0, 3, "fine {offset}")
    _write_slot(device, 1, 42, "first: offset {offset} out of range")
    _write_slot(device, 1, 43, "second: offset {offset} out of range")
    assert errorflags.pending(device) == 3
    with pytest.raises(ContractError, match=r"^first: offset 42 out of range \(1 more launch\(es\) failed"):
        errorflags.check(device)
    assert errorflags.pending(device) == 0
    _write_slot(device, 0, 7, "fine {offset}")
    errorflags.check(device)


def test_error_bits_come_first_and_slots_stay_pending(device: zyx.Device) -> None:
    errorflags.check(device)
    _write_slot(device, 1, 5, "slot: offset {offset}")
    _set_bits(device, errorflags.DIV_ZERO)
    with pytest.raises(DivisionByZeroError):
        errorflags.check(device)
    assert errorflags.pending(device) == 1
    with pytest.raises(ContractError, match="^slot: offset 5$"):
        errorflags.check(device)
    errorflags.check(device)


def test_a_full_slot_table_is_checked_before_the_next_reserve(device: zyx.Device,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    errorflags.check(device)
    monkeypatch.setattr(errorflags, "SLOTS", 2)
    _write_slot(device, 0, 1, "fine")
    _write_slot(device, 1, 9, "bad {offset}")
    with pytest.raises(ContractError, match="^bad 9$"):  # the third reserve checks the two pending
        _write_slot(device, 0, 1, "fine")
    assert errorflags.pending(device) == 0


def test_flags_are_per_device() -> None:
    usable = [d for d in zyx.devices() if d.usable]
    if len(usable) < 2:
        pytest.skip("needs two usable OpenCL devices")
    a, b = usable[:2]
    errorflags.check()
    assert errorflags.reserve(a)[0] is not errorflags.reserve(b)[0]
    _set_bits(a, errorflags.DIV_ZERO)
    errorflags.check(b)  # b's flags are clear
    with pytest.raises(DivisionByZeroError, match=re.escape(str(a))):
        errorflags.check()
    errorflags.check()
