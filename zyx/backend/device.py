"""OpenCL device discovery, the ``Device`` handle and default-device selection."""
from __future__ import annotations

import atexit
import os
import threading
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

from zyx import settings
from zyx.backend.icd import register_pip_runtimes
from zyx.backend.pocl_env import pin_pocl_workers
from zyx.backend.probe import Verdict, probe_devices
from zyx.dtype import DType, float64, to_dtype
from zyx.errors import DeviceError, DTypeError

if TYPE_CHECKING:
    import pyopencl as cl

    from zyx.backend.pool import BufferPool

_NO_DEVICE_HINT = (
    "install a CPU OpenCL runtime with `pip install 'zyx[pocl]'` (PoCL), or, where that PoCL "
    "cannot build for your CPU, Intel's CPU runtime with `pip install 'zyx[intel]'` or Debian's "
    "PoCL with `apt-get install pocl-opencl-icd`; or a vendor OpenCL driver for your GPU"
)


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


def fix_for(info: DeviceInfo, problem: str) -> str:
    """What a user can do about a device that failed its probe."""
    known = ("unknown target cpu", "llvm error: cannot select")  # LLVM 14 on AMD Zen 5, resp. Zen 4
    if "pocl" in info.platform_version.lower() and any(k in problem.lower() for k in known):
        return ("this PoCL's LLVM does not know your CPU; use Intel's CPU runtime "
                "(`pip install 'zyx[intel]'`) or a newer PoCL (Debian: `apt-get install pocl-opencl-icd`)")
    return "update or reinstall this device's OpenCL driver, or pick another device (`zyx devices`)"


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
    )


def _platform_label(info: DeviceInfo) -> str:
    """A short platform label: ``PoCL 3.0`` from ``OpenCL 3.0 PoCL 3.0 Linux ...``."""
    words = info.platform_version.replace("(", " ").replace(")", " ").split()
    if len(words) >= 4 and words[0] == "OpenCL":
        return " ".join(words[2:4])
    return info.platform


class Device:
    """One OpenCL device with its own context, in-order profiling queue and buffer pool."""

    def __init__(self, cl_device: Any, platform_index: int, device_index: int) -> None:
        self.cl_device = cl_device
        self.platform_index = platform_index
        self.device_index = device_index
        self.info = _read_info(cl_device)
        self._verdict: Verdict | None = None

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

    @property
    def usable(self) -> bool:
        """Whether the device built and ran a trivial kernel (probed once, cached on disk)."""
        return self.verdict().usable

    @property
    def problem(self) -> str | None:
        """Why the device is not usable (the build log's first error line), or None."""
        verdict = self.verdict()
        return None if verdict.usable else verdict.problem

    @property
    def fix(self) -> str | None:
        """What to do about the problem, or None for a usable device."""
        problem = self.problem
        return None if problem is None else fix_for(self.info, problem)

    def verdict(self, fresh: bool = False) -> Verdict:
        """The probe's verdict on this device; ``fresh=True`` probes again, ignoring the cache."""
        if self._verdict is None or fresh:
            self._verdict = probe_devices([self], fresh=fresh)[self.id]
        return self._verdict

    def check_usable(self) -> None:
        """Raise ``DeviceError`` quoting the probe's problem and the fix, for an unusable device."""
        if not self.usable:
            raise DeviceError(f"{self} cannot run kernels: {self.problem}; fix: {self.fix}")

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

    @cached_property
    def pool(self) -> BufferPool:
        from zyx.backend.pool import BufferPool

        return BufferPool(self)

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


_lock = threading.Lock()
_devices: list[Device] | None = None
_default: Device | None = None


def devices() -> list[Device]:
    """Every OpenCL device found, in a stable (platform, device) order."""
    global _devices
    with _lock:
        if _devices is None:
            _devices = _discover()
        return list(_devices)


def _discover() -> list[Device]:
    try:
        import pyopencl as cl
    except ImportError:
        return []
    register_pip_runtimes()
    pin_pocl_workers()
    found: list[Device] = []
    try:
        platforms = cl.get_platforms()
    except Exception:  # noqa: BLE001 - no ICD loader / no platform is "no devices"
        return []
    for p_idx, plat in enumerate(platforms):
        try:
            cl_devices = plat.get_devices()
        except Exception:  # noqa: BLE001 - a broken platform must not hide the others
            continue
        for d_idx, cl_dev in enumerate(cl_devices):
            try:
                found.append(Device(cl_dev, p_idx, d_idx))
            except Exception:  # noqa: BLE001 - a device whose queries fail is not listed
                continue
    return found


_KIND_RANK = {"gpu": 0, "accelerator": 1, "cpu": 2}


def _no_usable_device(found: list[Device]) -> DeviceError:
    if not found:
        return DeviceError(f"no OpenCL device found; {_NO_DEVICE_HINT}")
    lines = [f"  {d}: {d.problem or 'a simulator (name it to use it)'}" for d in found]
    return DeviceError("no usable OpenCL device; found:\n" + "\n".join(lines) + f"\nfix: {_NO_DEVICE_HINT}")


def find_device(spec: Device | str) -> Device:
    """Resolve ``opencl:P:D`` or a case-insensitive name substring to a usable device.

    A device that failed its probe raises ``DeviceError`` quoting the problem and the fix.
    """
    if isinstance(spec, Device):
        spec.check_usable()
        return spec
    if not isinstance(spec, str):
        raise DeviceError(f"expected a zyx.Device or a device string, got {type(spec).__name__}")
    found = devices()
    if not found:
        raise DeviceError(f"no OpenCL device found; {_NO_DEVICE_HINT}")
    text = spec.strip()
    if text.lower().startswith("opencl:"):
        parts = text.split(":")
        if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
            for dev in found:
                if (dev.platform_index, dev.device_index) == (int(parts[1]), int(parts[2])):
                    dev.check_usable()
                    return dev
        raise DeviceError(f"no device {text!r}; available: {', '.join(str(d) for d in found)}")
    matches = [d for d in found if text.lower() in d.name.lower()]
    if not matches:
        raise DeviceError(
            f"no device name contains {text!r}; available: {', '.join(str(d) for d in found)}"
        )
    for dev in matches:  # two platforms may list the same CPU: take the first that works
        if dev.usable:
            return dev
    matches[0].check_usable()
    return matches[0]


def default_candidates(found: list[Device]) -> list[Device]:
    """Devices that may become the default, best first, simulators never.

    GPU > accelerator > CPU; among CPUs PoCL first (the runtime zyx's CPU heuristics are
    measured on), then platform order.
    """
    def rank(d: Device) -> tuple[int, int, int, int]:
        other_runtime = int("pocl" not in d.info.platform_version.lower())
        return (_KIND_RANK.get(d.kind, 3), other_runtime, d.platform_index, d.device_index)

    return sorted((d for d in found if not d.simulator), key=rank)


def default_device() -> Device:
    """The default device: ``set_default_device``, else ``ZYX_DEVICE``, else the best usable one."""
    global _default
    if _default is not None:
        return _default
    spec = settings.device_spec()
    if spec is not None:
        try:
            _default = find_device(spec)
        except DeviceError as exc:
            raise DeviceError(f"ZYX_DEVICE={spec!r}: {exc}") from None
        return _default
    found = devices()
    for dev in default_candidates(found):
        if dev.usable:
            _default = dev
            return dev
    raise _no_usable_device(found)


def usable_devices() -> list[Device]:
    """The devices that passed their probe, simulators included, in ``devices()`` order."""
    found = devices()
    verdicts = probe_devices([d for d in found if d._verdict is None])
    for dev in found:
        if dev._verdict is None:
            dev._verdict = verdicts[dev.id]
    return [d for d in found if d.usable]


def set_default_device(dev: Device | str) -> Device:
    """Make ``dev`` (a Device, ``opencl:P:D`` or a name substring) the default device."""
    global _default
    _default = find_device(dev)
    return _default


def resolve(dev: Device | str | None) -> Device:
    """A device argument of the public API resolved to a Device (None: the default)."""
    return default_device() if dev is None else find_device(dev)
