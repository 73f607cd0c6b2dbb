"""OpenCL device discovery, the ``Device`` handle (``cl_device.ClDevice`` with its buffer pool and probe
verdict) and default-device selection."""
from __future__ import annotations

import threading
from functools import cached_property
from typing import Any

from zyx import settings
from zyx.backend.cl_device import ClDevice, DeviceInfo
from zyx.backend.icd import register_pip_runtimes
from zyx.backend.pocl_env import pin_pocl_workers, share_cores_among_local_ranks
from zyx.backend.pool import BufferPool
from zyx.backend.probe import Verdict, probe_devices
from zyx.errors import DeviceError

_NO_DEVICE_HINT = (
    "install a CPU OpenCL runtime with `pip install 'zyx[pocl]'` (PoCL), or, where that PoCL "
    "cannot build for your CPU, Intel's CPU runtime with `pip install 'zyx[intel]'` or Debian's "
    "PoCL with `apt-get install pocl-opencl-icd`; or a vendor OpenCL driver for your GPU"
)


def fix_for(info: DeviceInfo, problem: str) -> str:
    """What a user can do about a device that failed its probe."""
    known = ("unknown target cpu", "llvm error: cannot select")  # LLVM 14 on AMD Zen 5, resp. Zen 4
    if "pocl" in info.platform_version.lower() and any(k in problem.lower() for k in known):
        return ("this PoCL's LLVM does not know your CPU; use Intel's CPU runtime "
                "(`pip install 'zyx[intel]'`) or a newer PoCL (Debian: `apt-get install pocl-opencl-icd`)")
    return "update or reinstall this device's OpenCL driver, or pick another device (`zyx devices`)"


class Device(ClDevice):
    """One OpenCL device with its own context, in-order profiling queue and buffer pool."""

    def __init__(self, cl_device: Any, platform_index: int, device_index: int) -> None:
        super().__init__(cl_device, platform_index, device_index)
        self._verdict: Verdict | None = None

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

    @cached_property
    def pool(self) -> BufferPool:
        return BufferPool(self)


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
    share_cores_among_local_ranks()  # before pinning: a rank's share rules pinning out
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
