"""zyx.runtime and zyx.settings: ZYX_DEBUG output, zyx.debug, kernel_count, synchronize."""
from __future__ import annotations

import re
import uuid

import numpy as np
import pytest

import zyx
from zyx import settings

pytestmark = pytest.mark.skipif(not zyx.devices(), reason="no OpenCL device available")


LAUNCH = re.compile(r"^zyx: \w+ +global=\(\d+,?( \d+,?)*\) local=.* ms on .*$", re.M)


def _child_code(device: zyx.Device) -> str:
    # a view shape no other test uses, so the copy kernel is new in the child for sure
    return (
        "import numpy as np, zyx\n"
        f"dev = zyx.devices()[{zyx.devices().index(device)}]\n"
        "x = zyx.tensor(np.arange(3 * 13, dtype=np.float32).reshape(3, 13), device=dev)\n"
        "print(x.T.contiguous().numpy()[12, 2])\n"
    )


def test_zyx_debug_2_prints_kernel_source(device: zyx.Device, run_python) -> None:
    res = run_python(_child_code(device), env={"ZYX_DEBUG": "2"})
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "38.0"
    err = res.stderr
    names = re.findall(r"^--- zyx: new kernel (\w+) on ", err, flags=re.M)
    assert names, err
    for name in names:
        assert f"__kernel void {name}(" in err
    assert LAUNCH.search(err)  # launches are printed at level 2 too


def test_zyx_debug_1_prints_launches_only(device: zyx.Device, run_python) -> None:
    res = run_python(_child_code(device), env={"ZYX_DEBUG": "1"})
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "38.0"
    launches = [m.group(0) for m in LAUNCH.finditer(res.stderr)]
    assert len(launches) == 1, res.stderr
    assert launches[0].rstrip().endswith(device.id)
    assert "__kernel" not in res.stderr


def test_zyx_debug_0_is_silent(device: zyx.Device, run_python) -> None:
    res = run_python(_child_code(device), env={"ZYX_DEBUG": "0"})
    assert res.returncode == 0 and res.stdout.strip() == "38.0"
    assert "zyx:" not in res.stderr


def test_debug_function(device: zyx.Device, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(settings, "DEBUG", settings.DEBUG)
    n = 17 + uuid.uuid4().int % 1000  # a fresh kernel (shapes are baked into the source)
    zyx.debug(2)
    x = zyx.tensor(np.arange(2 * n, dtype=np.int32).reshape(2, n), device=device).T.contiguous().realize()
    zyx.debug(0)
    err = capsys.readouterr().err
    assert "__kernel void " in err and LAUNCH.search(err)
    x.T.contiguous().realize()
    assert capsys.readouterr().err == ""
    assert x.numpy()[n - 1, 1] == 2 * n - 1


def test_settings_parse_env(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("ZYX_DEBUG", "junk")
    assert settings._int_env("ZYX_DEBUG", 0) == 0
    monkeypatch.setenv("ZYX_DEBUG", " 2 ")
    assert settings._int_env("ZYX_DEBUG", 0) == 2
    monkeypatch.setenv("ZYX_DEVICE", "  ")
    assert settings.device_spec() is None
    monkeypatch.setenv("ZYX_CACHE_DIR", str(tmp_path))
    assert settings.cache_dir() == tmp_path
    monkeypatch.delenv("ZYX_CACHE_DIR")
    assert "zyx" in str(settings.cache_dir())


def test_kernel_count_counts_launches(device: zyx.Device) -> None:
    x = zyx.tensor(np.arange(12, dtype=np.float32).reshape(3, 4), device=device)
    before = zyx.kernel_count()
    x.numpy()  # a dense readback launches nothing
    x.reshape(4, 3)
    assert zyx.kernel_count() == before
    x.T.contiguous().realize()  # contract ops are graph nodes: launched when realized
    assert zyx.kernel_count() == before + 1


def test_synchronize_and_memory_stats_default(device: zyx.Device) -> None:
    zyx.synchronize()
    s = zyx.memory_stats()
    assert s == zyx.default_device().pool.stats()


def test_build_stats_count_compiles_and_a_warm_loop_adds_none(device: zyx.Device) -> None:
    n = int(np.random.default_rng().integers(10_000, 10**6))  # sizes are constants of the source: a new kernel
    x = zyx.arange(n, dtype=zyx.float32, device=device)
    scale = 3.0
    before = zyx.build_stats()
    assert set(before) == {"source_builds", "binary_loads", "memory_hits"}
    (x * scale).numpy()
    after = zyx.build_stats()
    assert after["source_builds"] + after["binary_loads"] > before["source_builds"] + before["binary_loads"]
    for _ in range(3):
        (x * scale).numpy()
    warm = zyx.build_stats()
    assert (warm["source_builds"], warm["binary_loads"]) == (after["source_builds"], after["binary_loads"])
