"""zyx.backend.device: discovery, Device attributes, selection strings, ZYX_DEVICE."""
from __future__ import annotations

import dataclasses
import importlib.util
import re
from pathlib import Path

import pytest

import zyx
from zyx.backend import cl_device
from zyx.backend import device as device_module
from zyx.dtype import ALL_DTYPES

pytestmark = pytest.mark.skipif(not zyx.devices(), reason="no OpenCL device available")


def test_devices_are_stable_and_ordered() -> None:
    first, second = zyx.devices(), zyx.devices()
    assert first == second
    assert all(a is b for a, b in zip(first, second))
    keys = [(d.platform_index, d.device_index) for d in first]
    assert keys == sorted(keys)
    assert len(set(keys)) == len(keys)
    first.append(None)  # the returned list is a copy
    assert None not in zyx.devices()


def test_device_attributes(device: zyx.Device) -> None:
    assert isinstance(device, zyx.Device)
    assert isinstance(device.name, str) and device.name
    assert isinstance(device.vendor, str)
    assert isinstance(device.platform, str) and device.platform
    assert device.kind in ("cpu", "gpu", "accelerator")
    assert isinstance(device.global_mem_bytes, int) and device.global_mem_bytes > 0
    assert isinstance(device.max_work_group_size, int) and device.max_work_group_size >= 1
    assert device.id == f"opencl:{device.platform_index}:{device.device_index}"
    assert device.info.max_alloc_bytes <= device.global_mem_bytes
    assert device.info.signature.count("|") == 4


def test_device_str_format(device: zyx.Device) -> None:
    text = str(device)
    m = re.fullmatch(r"opencl:(\d+):(\d+) \((.+), (.+)\)", text)
    assert m, text
    assert (int(m.group(1)), int(m.group(2))) == (device.platform_index, device.device_index)
    assert m.group(3) == device.name
    if "pocl" in device.info.platform_version.lower():
        assert re.fullmatch(r"PoCL \d+\.\d+\S*", m.group(4)), m.group(4)
    assert repr(device) == f"<zyx.Device {text}>"


def test_platform_label_parsing() -> None:
    info = dataclasses.replace(zyx.devices()[0].info, platform="Portable Computing Language",
                               platform_version="OpenCL 3.0 PoCL 3.0 Linux, Release, RELOC")
    assert cl_device._platform_label(info) == "PoCL 3.0"
    info = dataclasses.replace(info, platform="NVIDIA CUDA", platform_version="OpenCL 3.0 CUDA 12.4.89")
    assert cl_device._platform_label(info) == "CUDA 12.4.89"
    info = dataclasses.replace(info, platform="Odd", platform_version="weird")
    assert cl_device._platform_label(info) == "Odd"


def test_supports(device: zyx.Device) -> None:
    for d in ALL_DTYPES:
        expected = device.info.has_fp64 if d is zyx.float64 else True
        assert device.supports(d) is expected
        assert device.supports(d.name) is expected


def test_supports_without_fp64(device: zyx.Device, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(device, "info", dataclasses.replace(device.info, extensions=frozenset()))
    assert device.supports(zyx.float64) is False
    assert device.supports(zyx.float32) is True
    with pytest.raises(zyx.DTypeError, match="cl_khr_fp64"):
        device.check_dtype(zyx.float64)


def test_set_default_device_by_id(device: zyx.Device, restore_default_device: None) -> None:
    assert zyx.set_default_device(device.id) is device
    assert zyx.default_device() is device
    assert zyx.set_default_device(device) is device
    assert zyx.tensor([1, 2]).device is device


def test_set_default_device_by_name_substring(device: zyx.Device, restore_default_device: None) -> None:
    # the first device whose name contains the text (case-insensitive)
    part = device.name[: max(3, len(device.name) // 2)].swapcase()
    expected = next(d for d in zyx.devices() if part.lower() in d.name.lower() and d.usable)
    assert zyx.set_default_device(part) is expected
    assert zyx.default_device() is expected


def test_default_device_prefers_gpu_then_accelerator(restore_default_device: None) -> None:
    device_module._default = None
    chosen = zyx.default_device()
    rank = {"gpu": 0, "accelerator": 1, "cpu": 2}
    assert not chosen.simulator and chosen.usable
    assert rank[chosen.kind] == min(rank[d.kind] for d in zyx.devices() if d.usable and not d.simulator)


@pytest.mark.parametrize("spec", ["opencl:9:9", "opencl:x:y", "opencl:0", "no-such-device-xyz"])
def test_unknown_device_string(spec: str, restore_default_device: None) -> None:
    with pytest.raises(zyx.DeviceError) as info:
        zyx.set_default_device(spec)
    msg = str(info.value)
    assert spec in msg
    assert "available" in msg
    for d in zyx.devices():
        assert d.id in msg


def test_bad_device_argument_type() -> None:
    with pytest.raises(zyx.DeviceError, match="expected a zyx.Device"):
        zyx.set_default_device(3)


def test_unknown_device_in_creation() -> None:
    with pytest.raises(zyx.DeviceError, match="no-such-device-xyz"):
        zyx.zeros(3, device="no-such-device-xyz")


def test_no_device_at_all(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(device_module, "_discover", lambda: [])
    monkeypatch.setattr(device_module, "_devices", None)
    monkeypatch.setattr(device_module, "_default", None)
    monkeypatch.delenv("ZYX_DEVICE", raising=False)
    assert zyx.devices() == []
    for call in (zyx.default_device, lambda: zyx.tensor([1.0]), lambda: zyx.set_default_device("opencl:0:0"),
                 lambda: zyx.zeros(2), lambda: zyx.memory_stats()):
        with pytest.raises(zyx.DeviceError) as info:
            call()
        assert "pip install 'zyx[pocl]'" in str(info.value)
        assert "no OpenCL device" in str(info.value)


def test_discovery_without_pyopencl_platforms(monkeypatch: pytest.MonkeyPatch) -> None:
    import pyopencl as cl

    def broken():
        raise cl.LogicError("clGetPlatformIDs", cl.status_code.PLATFORM_NOT_FOUND_KHR, "no platforms")

    monkeypatch.setattr(cl, "get_platforms", broken)
    assert device_module._discover() == []


def test_zyx_device_env_selects_default(device: zyx.Device, run_python) -> None:
    code = "import zyx; d = zyx.default_device(); print(d.id); print(zyx.tensor([1]).device.id)"
    res = run_python(code, env={"ZYX_DEVICE": device.id})
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == [device.id, device.id]
    res = run_python(code, env={"ZYX_DEVICE": device.name.upper()})
    assert res.returncode == 0, res.stderr
    expected = next(d for d in zyx.devices() if device.name.lower() in d.name.lower() and d.usable)
    assert res.stdout.split()[0] == expected.id


def test_zyx_device_env_unknown(run_python) -> None:
    code = ("import zyx\ntry:\n    zyx.default_device()\nexcept zyx.DeviceError as e:\n    print('ERR', e)\n")
    res = run_python(code, env={"ZYX_DEVICE": "no-such-device-xyz"})
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("ERR ZYX_DEVICE='no-such-device-xyz'")
    assert "available" in res.stdout


def test_synchronize(device: zyx.Device) -> None:
    x = zyx.arange(100, device=device).reshape(10, 10).T.contiguous()
    device.synchronize()
    zyx.synchronize()
    zyx.synchronize(device)
    assert x.numpy()[3, 2] == 23


def test_device_selection_option(restore_default_device: None) -> None:
    # The root conftest by path: ``import conftest`` finds whichever conftest was loaded last.
    spec = importlib.util.spec_from_file_location("zyx_root_conftest", Path(__file__).parents[1] / "conftest.py")
    root_conftest = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(root_conftest)
    select_devices = root_conftest.select_devices

    found = [d for d in zyx.devices() if not d.simulator]
    assert select_devices("all", found) == found
    default = zyx.default_device()
    assert select_devices("default", found) == [default]
    assert select_devices("others", found) == [d for d in found if d is not default]
    assert select_devices(default.id, found) == [default]
    assert select_devices(f"{default.name.upper()}", found) == [d for d in found if d.name == default.name]
    assert select_devices("no-such-device-xyz", found) == []
