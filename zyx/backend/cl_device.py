"""One OpenCL device as the driver reports it: ``DeviceInfo`` (read once) and ``ClDevice`` (its context
and queue). ``backend.device`` builds ``Device`` on it (the buffer pool, the probe's verdict) and
finds the devices; the modules it builds on (program, launch, pool, probe) need only this one."""
from __future__ import annotations

import atexit
import os
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

from zyx.dtype import DType, float64, to_dtype
from zyx.errors import DTypeError

if TYPE_CHECKING:
    import pyopencl as cl


@dataclass(frozen=True)
class DeviceInfo:
    """What codegen and tuning need to know about a device, read once."""

    name: str
    vendor: str
    platform: str
    platform_version: str
    driver_version: str
    device_version: str
    kind: str
    compute_units: int
    max_work_group_size: int
    max_work_item_sizes: tuple[int, ...]
    local_mem_bytes: int
    global_mem_bytes: int
    max_alloc_bytes: int
    preferred_vector_width: dict[str, int]
    extensions: frozenset[str]
    global_mem_cache_bytes: int = 0  # the device's global memory cache (0: not reported)
    max_parameter_bytes: int = 1024  # CL_DEVICE_MAX_PARAMETER_SIZE: a kernel's arguments in all (1024: the minimum)

    @property
    def has_fp16(self) -> bool:
        return "cl_khr_fp16" in self.extensions

    @property
    def has_fp64(self) -> bool:
        return "cl_khr_fp64" in self.extensions

    @property
    def signature(self) -> str:
        """Identifies device + driver for caches (binaries, tuning results)."""
        return f"{self.platform}|{self.platform_version}|{self.name}|{self.vendor}|{self.driver_version}"


def _kind_of(cl_device: Any) -> str:
    import pyopencl as cl

    t = cl_device.type
    if t & cl.device_type.GPU:
        return "gpu"
    if t & cl.device_type.ACCELERATOR:
        return "accelerator"
    return "cpu"


def _read_info(cl_device: Any) -> DeviceInfo:
    vec = {}
    for key in ("char", "short", "int", "long", "float", "double", "half"):
        try:
            vec[key] = int(getattr(cl_device, f"preferred_vector_width_{key}"))
        except Exception:  # noqa: BLE001 - an absent query just means "no preference"
            vec[key] = 1
    plat = cl_device.platform
    return DeviceInfo(
        name=cl_device.name.strip(),
        vendor=cl_device.vendor.strip(),
        platform=plat.name.strip(),
        platform_version=plat.version.strip(),
        driver_version=cl_device.driver_version.strip(),
        device_version=cl_device.version.strip(),
        kind=_kind_of(cl_device),
        compute_units=int(cl_device.max_compute_units),
        max_work_group_size=int(cl_device.max_work_group_size),
        max_work_item_sizes=tuple(int(s) for s in cl_device.max_work_item_sizes),
        local_mem_bytes=int(cl_device.local_mem_size),
        global_mem_bytes=int(cl_device.global_mem_size),
        max_alloc_bytes=int(cl_device.max_mem_alloc_size),
        preferred_vector_width=vec,
        extensions=frozenset(cl_device.extensions.split()),
        global_mem_cache_bytes=int(cl_device.global_mem_cache_size),
        max_parameter_bytes=int(cl_device.max_parameter_size),
    )


def _platform_label(info: DeviceInfo) -> str:
    """A short platform label: ``PoCL 3.0`` from ``OpenCL 3.0 PoCL 3.0 Linux ...``."""
    words = info.platform_version.replace("(", " ").replace(")", " ").split()
    if len(words) >= 4 and words[0] == "OpenCL":
        return " ".join(words[2:4])
    return info.platform


class ClDevice:
    """One OpenCL device: what it is (``info``), its context and its in-order profiling queue.

    ``backend.device.Device`` adds the buffer pool and the probe's verdict; the modules below it
    (programs, launches, the pool) take a ``ClDevice``."""

    def __init__(self, cl_device: Any, platform_index: int, device_index: int) -> None:
        self.cl_device = cl_device
        self.platform_index = platform_index
        self.device_index = device_index
        self.info = _read_info(cl_device)

    # -- identity -------------------------------------------------------------
    @property
    def id(self) -> str:
        return f"opencl:{self.platform_index}:{self.device_index}"

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def vendor(self) -> str:
        return self.info.vendor

    @property
    def platform(self) -> str:
        return self.info.platform

    @property
    def kind(self) -> str:
        return self.info.kind

    @property
    def global_mem_bytes(self) -> int:
        return self.info.global_mem_bytes

    @property
    def max_work_group_size(self) -> int:
        return self.info.max_work_group_size

    @property
    def simulator(self) -> bool:
        """True for a simulator such as Oclgrind: usable when named, never the default."""
        return "oclgrind" in f"{self.info.platform} {self.info.name}".lower()

    def supports(self, dtype: DType | str) -> bool:
        """Whether tensors of ``dtype`` can live and compute on this device."""
        dtype = to_dtype(dtype)
        if dtype is float64:
            return self.info.has_fp64
        return True

    def check_dtype(self, dtype: DType) -> None:
        """Raise ``DTypeError`` when this device cannot hold ``dtype``."""
        if not self.supports(dtype):
            raise DTypeError(
                f"{dtype.name} is not supported on {self}: the device lacks cl_khr_fp64; "
                "use float32 or pick another device with zyx.set_default_device"
            )

    def __str__(self) -> str:
        return f"{self.id} ({self.name}, {_platform_label(self.info)})"

    def __repr__(self) -> str:
        return f"<zyx.Device {self}>"

    # -- OpenCL objects, created on first use ---------------------------------
    @cached_property
    def context(self) -> cl.Context:
        import pyopencl as cl

        return cl.Context([self.cl_device])

    @cached_property
    def queue(self) -> cl.CommandQueue:
        import pyopencl as cl

        queue = cl.CommandQueue(self.context, properties=cl.command_queue_properties.PROFILING_ENABLE)
        atexit.register(_drain_at_exit, queue, os.getpid())  # after pyopencl's import: runs before its handlers
        return queue

    @property
    def in_use(self) -> bool:
        """Whether this device has a queue yet (something ran or was copied to it)."""
        return "queue" in self.__dict__

    def synchronize(self) -> None:
        """Wait until every command queued on this device has finished."""
        if "queue" in self.__dict__:
            self.queue.finish()


def _drain_at_exit(queue: cl.CommandQueue, pid: int) -> None:
    """Wait for ``queue``'s commands before the interpreter tears down: a script that ends with
    kernels still queued (``y = x.sum().realize()`` as its last line) would otherwise free buffers'
    host memory (the huge-page ones, Python's) under running kernels, and crash on exit. Not in a
    forked child (``pid`` is the process that made the queue): the driver's threads are not there, and
    waiting on them could hang."""
    if os.getpid() != pid:
        return
    try:
        queue.finish()
    except Exception:  # noqa: BLE001 - a lost device at exit has nothing left to wait for
        pass
