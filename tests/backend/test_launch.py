"""zyx.backend.launch: recording launches (nesting, suspension, restore on exceptions)."""
from __future__ import annotations

import uuid

import numpy as np
import pytest

import zyx
from zyx.backend import launch as launch_module
from zyx.backend.transfer import read, write

pytestmark = pytest.mark.skipif(not zyx.devices(), reason="no OpenCL device available")


def _kernel(device: zyx.Device, value: int) -> launch_module.CompiledKernel:
    src = f"/* {uuid.uuid4().hex} */\n__kernel void zyx_test_k(__global int *x) {{ x[0] = {value}; }}\n"
    return launch_module.compile_kernel(device, src, "zyx_test_k")


def test_recording_collects_launches_with_their_arguments(device: zyx.Device) -> None:
    kernel, buf = _kernel(device, 5), device.pool.allocate(4)
    assert not launch_module.is_recording()
    with launch_module.recording() as launches:
        assert launch_module.is_recording()
        launch_module.launch(kernel, (1,), (1,), [buf.cl])
        launch_module.launch(kernel, [1], None, [buf.cl], offset=(0,), counts=False)
    assert not launch_module.is_recording()
    assert launches == [(kernel, (1,), (1,), (buf.cl,), None, True), (kernel, (1,), None, (buf.cl,), (0,), False)]
    launch_module.launch(kernel, (1,), (1,), [buf.cl])  # after the block: not collected
    assert len(launches) == 2
    assert int(read(buf).view(np.int32)[0]) == 5


def test_recordings_nest_and_not_recording_suspends_all(device: zyx.Device) -> None:
    kernel, buf = _kernel(device, 6), device.pool.allocate(4)
    with launch_module.recording() as outer:
        launch_module.launch(kernel, (1,), (1,), [buf.cl])
        with launch_module.recording() as inner:
            launch_module.launch(kernel, (1,), (1,), [buf.cl])
            with launch_module.not_recording():
                assert not launch_module.is_recording()
                launch_module.launch(kernel, (1,), (1,), [buf.cl])  # a tuner's trial: in neither
            assert launch_module.is_recording()
            launch_module.launch(kernel, (1,), (1,), [buf.cl])
        launch_module.launch(kernel, (1,), (1,), [buf.cl])
    assert len(inner) == 2 and len(outer) == 4


def test_recording_state_is_restored_when_the_block_raises(device: zyx.Device) -> None:
    kernel, buf = _kernel(device, 7), device.pool.allocate(4)
    with launch_module.recording() as outer:
        with pytest.raises(RuntimeError), launch_module.not_recording():
            raise RuntimeError("boom")
        assert launch_module.is_recording()
        with pytest.raises(RuntimeError), launch_module.recording():
            raise RuntimeError("boom")
        launch_module.launch(kernel, (1,), (1,), [buf.cl])
    assert len(outer) == 1 and not launch_module.is_recording()


def test_interleaved_launches_each_run_with_their_own_arguments(device: zyx.Device) -> None:
    """``launch`` and ``launch_prepared`` interleaved on one kernel object: each launch runs with its own
    arguments (a kernel object's arguments are state shared by every launch of it)."""
    src = (f"/* {uuid.uuid4().hex} */\n"
           "__kernel void zyx_test_add(__global int *x, int v) { x[get_global_id(0)] += v; }\n")
    kernel = launch_module.compile_kernel(device, src, "zyx_test_add")
    a, b = device.pool.allocate(4), device.pool.allocate(4)
    for buf in (a, b):
        write(buf, np.zeros(1, np.int32).view(np.uint8))
    one, ten = np.int32(1), np.int32(10)
    with launch_module.runtime_lock:
        launch_module.launch(kernel, (1,), None, [a.cl, one])
        launch_module.launch_prepared(kernel, (1,), None, [a.cl, one], None, True)
        launch_module.launch_prepared(kernel, (1,), None, [b.cl, ten], None, True)
        launch_module.launch(kernel, (1,), None, [a.cl, one])
        launch_module.launch_prepared(kernel, (1,), None, [b.cl, ten], None, True)
        launch_module.launch_prepared(kernel, (1,), None, [a.cl, one], None, True)
    assert int(read(a).view(np.int32)[0]) == 4
    assert int(read(b).view(np.int32)[0]) == 20
