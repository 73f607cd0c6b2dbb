"""zyx.backend.probe and the device selection built on it: broken devices are listed, never
the default, named only with a DeviceError quoting the problem and the fix."""
from __future__ import annotations

import argparse
import dataclasses
import subprocess
import sys

import pytest

import zyx
from zyx.backend import device as device_module
from zyx.backend import probe
from zyx.backend.probe import Verdict
from zyx.cli import devices as cli

pytestmark = pytest.mark.skipif(not zyx.devices(), reason="no OpenCL device available")

ZEN5_PROBLEM = "error: unknown target CPU 'generic'"
# what the pip PoCL 3.0 (LLVM 14) printed on an AMD Zen 4 before aborting in the vector probe
ZEN4_CRASH = ("1 warning generated.\nLLVM ERROR: Cannot select: 0x7f7e41298af0: v8f32,ch = X86ISD::FILD<(load (s64) "
              "from %stack.16)>\n  0x7f7e41298338: i64 = FrameIndex<16>\nIn function: _pocl_kernel_zyx_probe_vector\n")


@pytest.fixture
def private_cache(tmp_path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("ZYX_CACHE_DIR", str(tmp_path))
    return tmp_path


@pytest.fixture
def fresh_selection(monkeypatch: pytest.MonkeyPatch) -> None:
    """No default chosen yet, no ZYX_DEVICE; undone after the test."""
    monkeypatch.setattr(device_module, "_default", None)
    monkeypatch.delenv("ZYX_DEVICE", raising=False)


def break_device(monkeypatch: pytest.MonkeyPatch, dev: zyx.Device, problem: str = ZEN5_PROBLEM) -> None:
    monkeypatch.setattr(dev, "_verdict", Verdict(False, f"cannot build a kernel: {problem}"))


def test_probe_runs_a_kernel_in_process(device: zyx.Device) -> None:
    assert probe.run_probe(device.platform_index, device.device_index) == Verdict(True)


def test_failed_build_gives_the_logs_error_line(device: zyx.Device, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(probe, "_SOURCE", "__kernel void zyx_probe(__global float *o) { o[0] = nope; }")
    verdict = probe.run_probe(device.platform_index, device.device_index)
    assert not verdict.usable
    assert verdict.problem.startswith("cannot build a kernel: ")
    assert "error" in verdict.problem.lower() and "\n" not in verdict.problem


def test_first_error_line() -> None:
    log = "warning: something harmless\nfoo.cl:1: error: unknown target CPU 'generic'\nnote: more"
    assert probe._first_error_line(log) == "foo.cl:1: error: unknown target CPU 'generic'"
    assert probe._first_error_line("\n  only line  \n") == "only line"
    assert probe._first_error_line("") == "unknown failure"


def test_crash_line_is_the_last_thing_said() -> None:
    err = ("<frozen runpy>:128: RuntimeWarning: noise\nloading\n"
           "Kernel library file /x/kernel-avx512.bc doesn't exist.\n")
    assert probe._crash_line(err) == "Kernel library file /x/kernel-avx512.bc doesn't exist."


def test_verdict_is_cached_on_disk(device: zyx.Device, private_cache, monkeypatch: pytest.MonkeyPatch) -> None:
    assert probe.probe_devices([device], fresh=True)[device.id].usable
    assert list((private_cache / "probes").glob("*.json"))

    def no_child(dev):
        raise AssertionError("a cached verdict must not start a probe process")

    monkeypatch.setattr(probe, "_start_child", no_child)
    assert probe.probe_devices([device])[device.id] == Verdict(True)


def test_corrupt_cache_entry_is_probed_again(device: zyx.Device, private_cache) -> None:
    path = probe._cache_path(device)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{not json")
    assert probe.probe_devices([device])[device.id] == Verdict(True)
    assert '"usable": true' in path.read_text()


def test_crashing_probe_process_is_a_verdict_not_a_crash() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    verdict = probe._collect(child)
    assert not verdict.usable
    assert "killed by signal" in verdict.problem
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.exit('driver exploded')"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    verdict = probe._collect(child)
    assert "exited with status 1" in verdict.problem and "driver exploded" in verdict.problem


def test_probe_child_process(device: zyx.Device) -> None:
    child = probe._start_child(device)
    assert probe._collect(child) == Verdict(True)
    assert child.stderr is not None
    code = ("import sys; from zyx.backend.device import devices; from zyx.backend.probe import main; "
            "sys.exit(main(sys.argv[1:], devices))")
    res = subprocess.run([sys.executable, "-c", code, "0", "0", "no|such|device"],
                         capture_output=True, text=True, timeout=300)
    assert '"usable": false' in res.stdout and "does not see this device" in res.stdout


def test_broken_device_is_never_the_default(device: zyx.Device, fresh_selection,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    break_device(monkeypatch, device)
    others = [d for d in device_module.default_candidates(zyx.devices()) if d is not device and d.usable]
    if others:
        assert zyx.default_device() is others[0]
    else:
        with pytest.raises(zyx.DeviceError) as info:
            zyx.default_device()
        assert "no usable OpenCL device" in str(info.value)
        assert ZEN5_PROBLEM in str(info.value) and device.id in str(info.value)


def test_naming_a_broken_device_quotes_problem_and_fix(device: zyx.Device, fresh_selection,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    break_device(monkeypatch, device)
    for spec in (device.id, device):
        with pytest.raises(zyx.DeviceError) as info:
            zyx.set_default_device(spec)
        msg = str(info.value)
        assert str(device) in msg and ZEN5_PROBLEM in msg and "fix:" in msg
    with pytest.raises(zyx.DeviceError, match="unknown target CPU"):
        zyx.zeros(3, device=device.id)
    monkeypatch.setenv("ZYX_DEVICE", device.id)
    with pytest.raises(zyx.DeviceError, match=f"ZYX_DEVICE='{device.id}'.*unknown target CPU"):
        zyx.default_device()


def test_name_substring_prefers_a_working_device(device: zyx.Device, fresh_selection,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    twin = device_module.Device(device.cl_device, 97, 0)  # the same CPU listed by a broken platform
    break_device(monkeypatch, twin)
    monkeypatch.setattr(device_module, "_devices", [twin, *zyx.devices()])
    assert zyx.set_default_device(device.name) is not twin


def test_fix_texts() -> None:
    info = dataclasses.replace(zyx.devices()[0].info, platform_version="OpenCL 3.0 PoCL 3.0-rc2 Linux")
    fix = device_module.fix_for(info, ZEN5_PROBLEM)
    assert "zyx[intel]" in fix and "pocl-opencl-icd" in fix
    other = device_module.fix_for(info, "cannot create a context: out of resources")
    assert "driver" in other
    zen4 = device_module.fix_for(info, f"the probe process was killed by signal 6 ({ZEN4_CRASH.splitlines()[1]})")
    assert "zyx[intel]" in zen4 and "pocl-opencl-icd" in zen4


def test_crash_line_is_the_llvm_error() -> None:
    """A compiler that aborts prints its reason, then more lines: the verdict quotes the reason."""
    assert probe._crash_line(ZEN4_CRASH).startswith("LLVM ERROR: Cannot select")
    assert probe._crash_line("warning: x\nSegmentation fault") == "Segmentation fault"


def test_simulators_are_never_the_default(fresh_selection) -> None:
    chosen = zyx.default_device()
    assert not chosen.simulator
    for d in zyx.devices():
        is_oclgrind = "oclgrind" in (d.platform + d.name).lower()
        assert d.simulator is is_oclgrind
    assert all(not d.simulator for d in device_module.default_candidates(zyx.devices()))


def test_devices_command_shows_broken_devices(device: zyx.Device, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str], fresh_selection) -> None:
    break_device(monkeypatch, device)
    rc = cli.cmd_devices(argparse.Namespace())
    out = capsys.readouterr().out
    assert "BROKEN" in out and ZEN5_PROBLEM in out and "fix:" in out
    assert rc == (0 if any(d.usable and not d.simulator for d in zyx.devices()) else 1)


def _fake_probe(broken: set[str]):
    """Probing that reports the ``broken`` devices as Zen 5 PoCL does, and the truth for the rest."""
    real = probe.probe_devices

    def probe_devices(devs, fresh=False):
        verdicts = real([d for d in devs if d.id not in broken])
        zen5 = Verdict(False, f"cannot build a kernel: {ZEN5_PROBLEM}")
        verdicts.update({d.id: zen5 for d in devs if d.id in broken})
        return verdicts
    return probe_devices


def test_doctor_warns_for_a_broken_extra_platform(monkeypatch: pytest.MonkeyPatch, fresh_selection,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    candidates = [d for d in device_module.default_candidates(zyx.devices()) if d.usable]
    broken = {candidates[-1].id} if len(candidates) > 1 else set()
    for d in zyx.devices():
        monkeypatch.setattr(d, "_verdict", None)
    monkeypatch.setattr(device_module, "probe_devices", _fake_probe(broken))
    rc = cli.cmd_doctor(argparse.Namespace())
    out = capsys.readouterr().out
    assert rc == 0, out
    for dev in (candidates[-1:] if broken else []):
        assert f"WARN  device {dev}" in out and ZEN5_PROBLEM in out and f"fix: {dev.fix}" in out


def test_doctor_fails_when_nothing_is_usable(monkeypatch: pytest.MonkeyPatch, fresh_selection,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    for d in zyx.devices():
        monkeypatch.setattr(d, "_verdict", None)
    monkeypatch.setattr(device_module, "probe_devices", _fake_probe({d.id for d in zyx.devices()}))
    rc = cli.cmd_doctor(argparse.Namespace())
    out = capsys.readouterr().out
    assert rc == 1
    assert "FAIL  no usable default device" in out and "zyx[intel]" in out
