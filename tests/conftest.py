"""Shared fixtures: every OpenCL device, a private binary cache, bit-level comparisons.

Tests run on every device ``zyx.devices()`` finds (the ``device`` fixture; simulators
excepted, they have their own tier in ``tests/sanitizer``), against NumPy/ml_dtypes always
and against PyTorch when it is importable (the ``torch`` fixture skips cleanly otherwise).
A device that failed its probe is listed and skipped with the probe's problem.
``pytest --devices=SEL`` narrows the devices: ``all`` (default), ``default`` (the default
device only), ``others`` (every device but the default), or comma-separated selection
strings (``opencl:P:D``, an exact device or platform name, else a substring of them).
Whenever the selection leaves the default device out (``others``, or names of other devices) only
the device-parametrized tests run: the rest would run on the default device, which that selection
leaves out (CI's other-device steps rely on it).
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

# Each pytest-xdist worker gets its own PoCL kernel cache (read when the platform loads, below): two
# processes unpacking the same program binary into one PoCL cache at the same moment aborted one of
# them once in CI (in clBuildProgram of a binary from zyx's cache). zyx's own binary cache is shared.
_worker = os.environ.get("PYTEST_XDIST_WORKER")
if _worker:
    _pocl_base = os.environ.get("POCL_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "pocl", "kcache")
    os.environ["POCL_CACHE_DIR"] = f"{_pocl_base}-{_worker}"

import zyx  # noqa: E402 - after the PoCL cache choice
from zyx.backend import device as device_module  # noqa: E402
from zyx.backend import pool as buffer_pool  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
# Real devices (simulators have their own tier), usable or not: an unusable one is skipped
# with its problem, so a report shows which device was left out and why.
ALL_DEVICES = [d for d in zyx.devices() if not d.simulator]
DEVICES = ALL_DEVICES  # narrowed by --devices in pytest_configure

_UINT_OF_SIZE = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def as_bits(a: Any) -> np.ndarray:
    """The raw bits of an array's elements as unsigned integers of the same width."""
    a = np.asarray(a)
    return a.view(_UINT_OF_SIZE[a.dtype.itemsize])


def _is_float(a: np.ndarray) -> bool:
    """True for NumPy floats and the ml_dtypes floats (bfloat16, float8_*)."""
    return a.dtype.kind == "f" or "float" in a.dtype.name


def check_bits_equal(actual: Any, expected: Any) -> None:
    """Same dtype, same shape and the same bits in every element (NaN payloads included)."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    bad = np.flatnonzero(as_bits(actual) != as_bits(expected))
    assert bad.size == 0, (
        f"{bad.size} of {actual.size} elements differ, first at flat index {bad[0]}: "
        f"got bits {as_bits(actual).reshape(-1)[bad[0]]:#x}, expected {as_bits(expected).reshape(-1)[bad[0]]:#x}"
    )


def check_values_equal(actual: Any, expected: Any, mask: np.ndarray | None = None) -> None:
    """Same dtype and shape; floats: NaN where expected is NaN, identical bits elsewhere.

    ``mask`` (optional, boolean) restricts the comparison to the selected elements.
    """
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    keep = np.ones(actual.shape, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    if _is_float(expected):
        with np.errstate(invalid="ignore"):
            a_nan = np.isnan(actual.astype(np.float64))
            e_nan = np.isnan(expected.astype(np.float64))
        wrong_nan = (a_nan != e_nan) & keep
        assert not wrong_nan.any(), (
            f"NaN mismatch at {np.flatnonzero(wrong_nan)[:8]}: got {actual[wrong_nan][:8]}, "
            f"expected {expected[wrong_nan][:8]}"
        )
        keep = keep & ~e_nan
    diff = (as_bits(actual) != as_bits(expected)) & keep
    idx = np.flatnonzero(diff)
    assert idx.size == 0, (
        f"{idx.size} of {int(keep.sum())} compared elements differ, e.g. at {idx[:8]}: got "
        f"{actual.reshape(-1)[idx[:8]]}, expected {expected.reshape(-1)[idx[:8]]}"
    )


@pytest.fixture(scope="session", autouse=True)
def zyx_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A private binary/tuning cache for the session, unless ZYX_CACHE_DIR is already set."""
    preset = os.environ.get("ZYX_CACHE_DIR", "").strip()
    if preset:
        yield Path(preset)
        return
    path = tmp_path_factory.mktemp("zyx-cache")
    os.environ["ZYX_CACHE_DIR"] = str(path)
    yield path
    os.environ.pop("ZYX_CACHE_DIR", None)


# Driver bugs that kill the process (a test cannot catch a segfault): each is probed once per device, in a
# child process, the first time a kernel matching its pattern is built there; on a device that failed the
# probe, that build skips its test with the reason instead. Mesa's rusticl 22.3 (llvmpipe, CI's rusticl
# step) crashes running a signed-char select of a converted float, which is how zyx casts floats to int8.
CRASH_GAPS = [(
    re.compile(r"\?\s*\(char\)0\s*:\s*convert_char_sat_rtz\("),
    "__kernel void k(__global char *out, __global const float *in) { const float v = in[get_global_id(0)];"
    " out[get_global_id(0)] = isnan(v) ? (char)0 : convert_char_sat_rtz(v); }",
    "the driver crashes running a float -> int8 cast's select (isnan(v) ? (char)0 : convert_char_sat_rtz(v))",
)]
_PROBE = """
import sys, numpy as np, pyopencl as cl
dev = next(d for p in cl.get_platforms() if p.name.strip() == sys.argv[1]
           for d in p.get_devices() if d.name.strip() == sys.argv[2])
ctx = cl.Context([dev]); q = cl.CommandQueue(ctx)
prg = cl.Program(ctx, sys.argv[3]).build()
mf = cl.mem_flags
a = np.array([1.5, -300.0, np.nan, 7.0], np.float32)
src = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a)
dst = cl.Buffer(ctx, mf.WRITE_ONLY, a.size * 8)
prg.k(q, (a.size,), None, dst, src)
out = np.empty(a.size * 8, np.uint8)
cl.enqueue_copy(q, out, dst)
"""
_gap_verdicts: dict[tuple[str, int], bool] = {}


def _has_gap(dev: zyx.Device, gap: int) -> bool:
    """Whether ``dev`` fails ``CRASH_GAPS[gap]``'s probe (run once per device, in a child process)."""
    key = (dev.id, gap)
    if key not in _gap_verdicts:
        args = [sys.executable, "-c", _PROBE, dev.platform, dev.name, CRASH_GAPS[gap][1]]
        try:
            _gap_verdicts[key] = subprocess.run(args, capture_output=True, timeout=120).returncode != 0
        except subprocess.TimeoutExpired:
            _gap_verdicts[key] = True
    return _gap_verdicts[key]


@pytest.fixture(scope="session", autouse=True)
def crash_gaps() -> Any:
    """Skip, rather than crash on, a kernel that matches a driver bug its device has (``CRASH_GAPS``); the
    check sits in ``program.binary_cache_key``, which every build that misses the in-memory cache calls."""
    from zyx.backend import program

    make_key = program.binary_cache_key

    def checked_key(dev: zyx.Device, source: str, options: str) -> str:
        for i, (pattern, _probe, reason) in enumerate(CRASH_GAPS):
            if pattern.search(source) and _has_gap(dev, i):
                pytest.skip(f"{dev}: {reason}")
        return make_key(dev, source, options)

    program.binary_cache_key = checked_key
    yield
    program.binary_cache_key = make_key


@pytest.fixture(scope="session", autouse=True)
def poisoned_buffers() -> Any:
    """Every device buffer zyx hands out starts filled with 0xA5 bytes (``pool.POISON_BYTE``), so an output
    element a kernel skips reads as that pattern, never as a stale value that happens to be right."""
    buffer_pool.POISON_BYTE = 0xA5
    yield
    buffer_pool.POISON_BYTE = None


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--devices", default="all",
                     help="devices for device-parametrized tests: all | default | others | "
                          "comma-separated opencl:P:D or name substrings")


def select_devices(selection: str, candidates: list[zyx.Device]) -> list[zyx.Device]:
    """The devices a ``--devices`` selection names, in ``candidates`` order."""
    text = selection.strip().lower()
    if text == "all":
        return list(candidates)
    usable = [d for d in candidates if d.usable]
    default = zyx.default_device() if usable else None
    if text == "default":
        return [default] if default is not None else []
    if text == "others":
        return [d for d in candidates if d is not default]
    chosen = []
    for part in (p.strip() for p in text.split(",") if p.strip()):
        exact = [d for d in candidates if part in (d.id, d.name.lower(), d.platform.lower())]
        chosen += exact or [d for d in candidates if part in f"{d.platform} {d.name}".lower()]
    return [d for d in candidates if d in chosen]


def pytest_configure(config: pytest.Config) -> None:
    global DEVICES
    DEVICES = select_devices(config.getoption("--devices"), ALL_DEVICES)


def _leaves_out_default(selection: str) -> bool:
    """Whether ``--devices`` names devices and the (usable) default device is not among them."""
    if selection.strip().lower() in ("all", "default") or not any(d.usable for d in ALL_DEVICES):
        return False
    return zyx.default_device() not in DEVICES


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Without any usable device, tests marked ``needs_device`` skip (the device-free tier); a
    selection without the default device deselects the tests that do not take the ``device`` fixture."""
    if _leaves_out_default(config.getoption("--devices")):
        dropped = [item for item in items if "device" not in getattr(item, "fixturenames", ())]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = [item for item in items if "device" in getattr(item, "fixturenames", ())]
    if any(d.usable for d in ALL_DEVICES):
        return
    skip = pytest.mark.skip(reason="needs an OpenCL device; none is usable here")
    for item in items:
        if item.get_closest_marker("needs_device"):
            item.add_marker(skip)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Any:
    """A test that fails only because its device lacks a dtype (``Device.supports``: float64 without
    cl_khr_fp64, e.g. rusticl) is reported as skipped, with zyx's error as the reason."""
    outcome = yield
    rep = outcome.get_result()
    dev = getattr(item, "callspec", None) and item.callspec.params.get("device")
    if (rep.failed and call.excinfo is not None and isinstance(dev, zyx.Device) and not dev.supports(zyx.float64)
            and call.excinfo.errisinstance(zyx.DTypeError) and "cl_khr_fp64" in str(call.excinfo.value)):
        rep.outcome = "skipped"
        rep.longrepr = (str(item.path), item.location[1] or 0, f"Skipped: {call.excinfo.value}")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    own = {name.strip() for mark in metafunc.definition.iter_markers("parametrize")
           for name in (mark.args[0].split(",") if isinstance(mark.args[0], str) else mark.args[0])}
    if "device" in metafunc.fixturenames and "device" not in own:
        metafunc.parametrize("device", DEVICES or [None], ids=[d.id for d in DEVICES] or ["no-device"],
                             indirect=True)


@pytest.fixture
def device(request: pytest.FixtureRequest) -> zyx.Device:
    """Each selected OpenCL device in turn; one that failed its probe is skipped with the reason."""
    if request.param is None:
        pytest.skip("no OpenCL device selected or available")
    dev = request.param
    if not dev.usable:
        pytest.skip(f"{dev} is not usable: {dev.problem} (fix: {dev.fix})")
    return dev


@pytest.fixture(scope="session")
def torch() -> Any:
    """The torch module, or a clean skip when PyTorch is not installed."""
    return pytest.importorskip("torch")


@pytest.fixture(scope="session")
def device_pair() -> tuple[zyx.Device, zyx.Device]:
    """The default device and another usable one (simulators excepted: Oclgrind runs kernels far too
    slowly) for the tests of one process holding tensors on several devices; a clean skip saying what
    was found when there is no such pair. Not narrowed by ``--devices``: these tests need both."""
    usable = [d for d in ALL_DEVICES if d.usable]
    default = zyx.default_device() if usable else None
    others = [d for d in usable if d is not default]
    if default not in usable or not others:
        pytest.skip(f"needs two usable OpenCL devices besides simulators, found {[str(d) for d in usable]}")
    return default, others[0]


@pytest.fixture
def restore_default_device(monkeypatch: pytest.MonkeyPatch) -> None:
    """Undo any change a test makes to the default device."""
    monkeypatch.setattr(device_module, "_default", device_module._default)


@pytest.fixture
def run_python() -> Callable[..., subprocess.CompletedProcess]:
    """Run a snippet in a fresh interpreter rooted at the checkout; returns the result."""

    def run(code: str, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
        full_env = {**os.environ, **(env or {})}
        full_env["PYTHONPATH"] = str(ROOT) + os.pathsep + full_env.get("PYTHONPATH", "")
        return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=full_env, capture_output=True,
                              text=True, timeout=timeout)

    return run


@pytest.fixture(scope="session")
def bits_equal() -> Callable[[Any, Any], None]:
    """``bits_equal(actual, expected)``: assert same dtype, shape and bits (see check_bits_equal)."""
    return check_bits_equal


@pytest.fixture(scope="session")
def values_equal() -> Callable[..., None]:
    """``values_equal(actual, expected, mask=None)``: bits equal, NaN compared as NaN."""
    return check_values_equal
