"""zyx.backend.transfer: host -> device writes, small ones queued without waiting (their host data copied first),
large ones written before returning; either way in queue order with the kernels around them."""
from __future__ import annotations

import uuid

import numpy as np
import pytest

import zyx
from zyx.backend import launch as launch_module
from zyx.backend import transfer

pytestmark = pytest.mark.skipif(not zyx.devices(), reason="no OpenCL device available")


def _set_first(device: zyx.Device, value: int) -> launch_module.CompiledKernel:
    src = f"/* {uuid.uuid4().hex} */\n__kernel void zyx_test_set(__global int *x) {{ x[0] = {value}; }}\n"
    return launch_module.compile_kernel(device, src, "zyx_test_set")


@pytest.mark.parametrize("n", [1, 1000, transfer.ASYNC_WRITE_MAX // 4 + 1])  # the last one: a blocking write
def test_write_keeps_queue_order_and_copies_the_host_data(device: zyx.Device, n: int) -> None:
    buf = device.pool.allocate(4 * n)
    host = np.arange(n, dtype=np.int32) + 10
    launch_module.launch(_set_first(device, 5), (1,), (1,), [buf.cl])  # queued before the write: overwritten
    transfer.write(buf, host)
    host[:] = -1  # the caller may reuse its array at once
    got = transfer.read(buf).view(np.int32)
    np.testing.assert_array_equal(got, np.arange(n, dtype=np.int32) + 10)
    transfer.write(buf, np.full(n, 3, np.int32))
    launch_module.launch(_set_first(device, 9), (1,), (1,), [buf.cl])  # queued after the write: wins
    got = transfer.read(buf).view(np.int32)
    assert got[0] == 9 and (got[1:] == 3).all()


def test_many_small_writes_in_flight(device: zyx.Device) -> None:
    """More small writes than are held in flight at once: each lands, the oldest are waited for as needed."""
    def data(i: int) -> np.ndarray:
        return np.random.default_rng(i).standard_normal(17).astype(np.float32)

    arrays = [data(i) for i in range(3 * transfer.MAX_IN_FLIGHT)]
    tensors = [zyx.tensor(a) for a in arrays]
    for a in arrays:
        a[:] = 0.0
    for i, t in enumerate(tensors):
        np.testing.assert_array_equal(t.numpy(), data(i))


def test_zero_d_and_bool_uploads(device: zyx.Device) -> None:
    assert zyx.tensor(np.float32(2.5)).item() == 2.5
    np.testing.assert_array_equal(zyx.tensor(np.array([True, False, True])).numpy(), [True, False, True])
