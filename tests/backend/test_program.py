"""zyx.backend.program / launch: build caches (memory, on-disk binaries), CompileError."""
from __future__ import annotations

import dataclasses
import json
import uuid

import numpy as np
import pytest

import zyx
from zyx.backend import launch as launch_module
from zyx.backend import program, timing
from zyx.backend.program import BuildStats, binary_cache_key, build_program
from zyx.backend.transfer import read

pytestmark = pytest.mark.skipif(not zyx.devices(), reason="no OpenCL device available")


def _unique_source(value: int = 42) -> str:
    """A tiny kernel whose source no other test (or earlier run) has built."""
    return f"/* {uuid.uuid4().hex} */\n__kernel void zyx_test_k(__global int *x) {{ x[0] = {value}; }}\n"


def _run(device: zyx.Device, source: str) -> int:
    kernel = launch_module.compile_kernel(device, source, "zyx_test_k")
    buf = device.pool.allocate(4)
    launch_module.launch(kernel, (1,), (1,), [buf.cl])
    return int(read(buf).view(np.int32)[0])


def test_memory_cache(device: zyx.Device) -> None:
    src = _unique_source()
    builds, hits = BuildStats.source_builds, BuildStats.memory_hits
    prg = build_program(device, src, name="zyx_test_k")
    assert BuildStats.source_builds == builds + 1
    assert build_program(device, src, name="zyx_test_k") is prg
    assert BuildStats.memory_hits == hits + 1
    assert BuildStats.source_builds == builds + 1


def test_binary_cache_round_trip(device: zyx.Device, zyx_cache_dir) -> None:
    src = _unique_source(7)
    build_program(device, src, name="zyx_test_k")
    key = binary_cache_key(device, src, "")
    path = program._binary_path(key)
    assert path.is_file()
    assert str(path).startswith(str(zyx_cache_dir))
    assert program._unwrap(path.read_bytes())  # stored intact, with its checksum
    # a fresh in-process cache loads the binary instead of compiling
    for mem_key in [k for k in program._programs if src in k]:
        del program._programs[mem_key]
    builds, loads = BuildStats.source_builds, BuildStats.binary_loads
    build_program(device, src, name="zyx_test_k")
    assert (BuildStats.source_builds, BuildStats.binary_loads) == (builds, loads + 1)
    assert _run(device, src) == 7


def test_binary_cache_key_parts(device: zyx.Device, monkeypatch: pytest.MonkeyPatch) -> None:
    src = _unique_source()
    key = binary_cache_key(device, src, "")
    assert key == binary_cache_key(device, src, "")
    assert key != binary_cache_key(device, src + " ", "")
    assert key != binary_cache_key(device, src, "-cl-fast-relaxed-math")
    monkeypatch.setattr(program, "ZYX_VERSION", "9.9.9")
    assert key != binary_cache_key(device, src, "")
    monkeypatch.undo()
    monkeypatch.setattr(device, "info", dataclasses.replace(device.info, driver_version="other-driver"))
    assert key != binary_cache_key(device, src, "")


CORRUPT_CHILD = r"""
import json, os, sys
import numpy as np
import zyx
from zyx.backend import launch, program
from zyx.backend.program import BuildStats, binary_cache_key
from zyx.backend.transfer import read

dev = zyx.devices()[int(sys.argv[1])]
out = {}
for i, mode in enumerate(["garbage", "truncated", "empty", "header_only", "flipped"]):
    src = "/* %s %s */\n__kernel void zyx_test_k(__global int *x) { x[0] = %d; }\n" % (sys.argv[2], mode, 100 + i)
    program.build_program(dev, src, name="zyx_test_k")
    path = program._binary_path(binary_cache_key(dev, src, ""))
    data = path.read_bytes()
    bad = {"garbage": os.urandom(len(data)), "truncated": data[: len(data) // 2], "empty": b"",
           "header_only": data[:40], "flipped": data[:60] + bytes(b ^ 0x5A for b in data[60:200]) + data[200:]}[mode]
    path.write_bytes(bad)
    program._programs.clear()
    launch._kernels.clear()
    before = BuildStats.source_builds
    kernel = launch.compile_kernel(dev, src, "zyx_test_k")
    buf = dev.pool.allocate(4)
    launch.launch(kernel, (1,), (1,), [buf.cl])
    out[mode] = {"rebuilt": BuildStats.source_builds - before, "value": int(read(buf).view(np.int32)[0]),
                 # a valid entry again (not byte-equal: Intel's binaries differ from build to build)
                 "rewritten": program._unwrap(path.read_bytes()) is not None and path.read_bytes() != bad}
print(json.dumps(out))
"""


def test_corrupt_binary_is_dropped_and_rebuilt(device: zyx.Device, run_python) -> None:
    res = run_python(CORRUPT_CHILD.replace("sys.argv[1]", str(zyx.devices().index(device)))
                     .replace("sys.argv[2]", repr(uuid.uuid4().hex)))
    assert res.returncode == 0, f"child died (rc={res.returncode}): {res.stderr[-2000:]}"
    out = json.loads(res.stdout)
    for i, mode in enumerate(["garbage", "truncated", "empty", "header_only", "flipped"]):
        assert out[mode] == {"rebuilt": 1, "value": 100 + i, "rewritten": True}, (mode, out[mode])


SECOND_PROCESS_CHILD = r"""
import json
import numpy as np
import zyx
from zyx.backend.program import BuildStats

dev = zyx.devices()[%d]
a = zyx.tensor(np.arange(24, dtype=np.float32).reshape(2, 3, 4), device=dev)
vals = a.permute(2, 0, 1)[::-1].contiguous().numpy().tolist()
vals2 = a.cast(zyx.bfloat16).cast(zyx.int16).numpy().tolist()
zyx.manual_seed(3)
r = zyx.rand(5, device=dev).numpy().tolist()
f = zyx.full((3,), 2.5, device=dev).numpy().tolist()
print(json.dumps({"builds": BuildStats.source_builds, "loads": BuildStats.binary_loads,
                  "values": [vals, vals2, r, f]}))
"""


def test_second_process_builds_nothing(device: zyx.Device, run_python, tmp_path) -> None:
    env = {"ZYX_CACHE_DIR": str(tmp_path / "shared-cache")}
    code = SECOND_PROCESS_CHILD % zyx.devices().index(device)
    first = run_python(code, env=env)
    assert first.returncode == 0, first.stderr
    second = run_python(code, env=env)
    assert second.returncode == 0, second.stderr
    one, two = json.loads(first.stdout), json.loads(second.stdout)
    assert one["builds"] > 0
    assert two["builds"] == 0
    assert two["loads"] >= one["builds"]
    assert one["values"] == two["values"]
    assert list((tmp_path / "shared-cache" / "binaries").rglob("*.bin"))


def test_unwritable_cache_dir_is_not_fatal(device: zyx.Device, monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cache directory should be")
    monkeypatch.setenv("ZYX_CACHE_DIR", str(blocker))
    src = _unique_source(5)
    assert _run(device, src) == 5


def test_compile_error_carries_source_and_log(device: zyx.Device) -> None:
    src = _unique_source().replace("x[0] = 42;", "x[0] = zyx_undefined_name + ;")
    with pytest.raises(zyx.CompileError) as info:
        launch_module.compile_kernel(device, src, "zyx_test_k")
    err = info.value
    assert isinstance(err, zyx.ZyxError)
    assert err.source == src
    assert err.build_log.strip()
    assert "zyx_undefined_name" in err.build_log or "error" in err.build_log.lower()
    assert "zyx_test_k" in str(err) and str(device) in str(err)
    assert "--- build log ---" in str(err)
    # failures are not cached: the same source fails again the same way
    with pytest.raises(zyx.CompileError):
        launch_module.compile_kernel(device, src, "zyx_test_k")


def test_compiled_kernel_info(device: zyx.Device) -> None:
    src = _unique_source()
    kernel = launch_module.compile_kernel(device, src, "zyx_test_k")
    assert launch_module.compile_kernel(device, src, "zyx_test_k") is kernel
    assert 1 <= kernel.work_group_size <= device.max_work_group_size
    assert kernel.source == src and kernel.device is device


def test_kernel_count_and_event_seconds(device: zyx.Device) -> None:
    src = _unique_source(9)
    kernel = launch_module.compile_kernel(device, src, "zyx_test_k")
    buf = device.pool.allocate(4)
    before = zyx.kernel_count()
    event = launch_module.launch(kernel, (1,), (1,), [buf.cl])
    assert zyx.kernel_count() == before + 1
    assert timing.event_seconds(event) >= 0.0
    assert int(read(buf).view(np.int32)[0]) == 9


def test_bad_launch_raises_zyx_error(device: zyx.Device) -> None:
    kernel = launch_module.compile_kernel(device, _unique_source(), "zyx_test_k")
    buf = device.pool.allocate(4)
    too_big = device.max_work_group_size * 2
    with pytest.raises(zyx.ZyxError, match="zyx_test_k"):
        launch_module.launch(kernel, (too_big,), (too_big,), [buf.cl])
