"""Building OpenCL programs: an in-memory cache by (device, source, options) and an
on-disk binary cache keyed by source + options + device/driver signature + zyx version.

On PoCL, loading our stored binary is an order of magnitude faster than a rebuild that hits
PoCL's own kernel cache, so the binary layer pays for itself there too, and it is what makes
a second process build nothing on drivers that do not cache. pyopencl's own cache is disabled to keep one layer.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import sys
import tempfile
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zyx import settings
from zyx.backend import profiling
from zyx.backend.driver_cache import build_lock
from zyx.errors import CompileError
from zyx.version import __version__

if TYPE_CHECKING:
    from zyx.backend.cl_device import ClDevice

ZYX_VERSION = __version__  # part of every cache key: a new zyx never loads an old binary


class BuildStats:
    """Counters of program builds, for tests and ``zyx doctor``."""

    source_builds = 0  # programs compiled from OpenCL C source
    binary_loads = 0  # programs loaded from the on-disk binary cache
    memory_hits = 0  # programs found in this process's cache

    @classmethod
    def programs(cls) -> int:
        """Programs a launch needed so far, however they were obtained (tests count new kernels by it)."""
        return cls.source_builds + cls.binary_loads + cls.memory_hits


_programs: dict[tuple[str, str, str], Any] = {}
_lock = threading.Lock()


def binary_cache_key(device: ClDevice, source: str, options: str) -> str:
    """The one place the binary cache key is made: source, options, device, driver, zyx."""
    h = hashlib.sha256()
    for part in (source, options, device.info.signature, ZYX_VERSION):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def _binary_path(key: str) -> Path:
    return settings.cache_dir() / "binaries" / f"{key[:2]}" / f"{key}.bin"


_MAGIC = b"zyxbin1\0"


def _wrap(binary: bytes) -> bytes:
    """A cache file's bytes: magic, the SHA-256 of the binary, then the binary."""
    return _MAGIC + hashlib.sha256(binary).digest() + binary


def _unwrap(data: bytes) -> bytes | None:
    """The binary stored in a cache file, or None when the file is not intact."""
    head = len(_MAGIC) + 32
    if len(data) <= head or not data.startswith(_MAGIC):
        return None
    binary = data[head:]
    return binary if hashlib.sha256(binary).digest() == data[len(_MAGIC):head] else None


def _load_binary(device: ClDevice, key: str) -> Any | None:
    """The program stored under ``key``, or None; a bad entry is deleted, never fatal."""
    import pyopencl as cl

    path = _binary_path(key)
    try:
        binary = _unwrap(path.read_bytes())
    except OSError:
        return None
    prg = None
    if binary is not None:  # never hand a truncated binary to the driver: PoCL segfaults on one
        try:
            prg = cl.Program(device.context, [device.cl_device], [binary])
            with _quiet_build_log():
                prg.build()
        except Exception:  # noqa: BLE001 - a foreign or stale entry is dropped
            prg = None
    if prg is None:
        try:
            path.unlink()
        except OSError:
            pass
    return prg


def _store_binary(prg: Any, key: str) -> None:
    path = _binary_path(key)
    try:
        binary = prg.binaries[0]
        if not binary:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        with os.fdopen(fd, "wb") as fh:
            fh.write(_wrap(bytes(binary)))
        os.replace(tmp, path)
    except Exception:  # noqa: BLE001 - an unwritable cache only costs speed
        pass


@contextlib.contextmanager
def _quiet_build_log() -> Iterator[None]:
    """Hide the build log of a successful build (e.g. LLVM's AVX ABI notes on PoCL): noise to
    users; ``ZYX_DEBUG=2`` shows it. A failed build's log travels in the CompileError."""
    import pyopencl as cl

    with warnings.catch_warnings():
        if settings.DEBUG < 2:
            warnings.simplefilter("ignore", cl.CompilerWarning)
        yield


def build_program(device: ClDevice, source: str, options: str = "", name: str = "") -> Any:
    """A built ``pyopencl.Program`` for ``source`` on ``device``, from the fastest cache."""
    mem_key = (device.id, source, options, device)  # the device object too: each has its own context
    start = profiling.now_ns() if profiling._sinks else 0
    prg = _programs.get(mem_key)
    if prg is not None:
        BuildStats.memory_hits += 1
        if profiling._sinks:
            profiling.note(profiling.RawEvent("build", name, device, start, profiling.now_ns(), detail="in memory"))
        return prg
    with _lock:
        prg = _programs.get(mem_key)
        if prg is not None:
            return prg
        key = binary_cache_key(device, source, options)
        with build_lock(device):  # other processes may be building into the driver's cache
            prg = _load_binary(device, key)
            built = prg is None
            if built:
                prg = _build_from_source(device, source, options, name)
        if built:
            BuildStats.source_builds += 1
            _store_binary(prg, key)
        else:
            BuildStats.binary_loads += 1
        _programs[mem_key] = prg
    if profiling._sinks:
        how = "compile" if built else "binary cache"
        profiling.note(profiling.RawEvent("build", name, device, start, profiling.now_ns(), detail=how))
    if settings.DEBUG >= 2:
        print(f"--- zyx: new kernel {name or '(unnamed)'} on {device} ---\n{source}", file=sys.stderr)
    return prg


def _build_from_source(device: ClDevice, source: str, options: str, name: str) -> Any:
    import pyopencl as cl

    prg = cl.Program(device.context, source)
    try:
        with _quiet_build_log():
            return prg.build(options=options.split() if options else [], cache_dir=False)
    except cl.Error as exc:
        try:
            log = prg.get_build_info(device.cl_device, cl.program_build_info.LOG)
        except Exception:  # noqa: BLE001 - no log: the build error's own text must do
            log = str(exc)
        raise CompileError(
            f"OpenCL build of {name or 'kernel'} failed on {device}", source=source, build_log=log or str(exc)
        ) from None
