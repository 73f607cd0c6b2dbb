"""The OpenCL driver's own on-disk kernel cache, and a lock that keeps processes from building
into it at the same time.

PoCL writes every program it builds (from source or from a binary) into a kernel cache on disk,
shared by every process of the user (``$POCL_CACHE_DIR``, else ``$XDG_CACHE_HOME/pocl`` or
``~/.cache/pocl``). Two processes building the same program into it at once race: on the 2-core
VM, four processes running the same few ops on a fresh cache failed 2 times in ~40 tries, one
process getting a ``CompileError`` whose log says only "failed to build the program" (and once,
earlier, a process aborted inside ``clBuildProgram`` of a cached binary). A build therefore holds
an exclusive ``flock`` on a file in that cache directory: processes sharing the cache build one at
a time, processes with their own caches (zyx's test workers) do not wait for each other.
"""
from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no flock; builds are not serialized there
    fcntl = None  # type: ignore[assignment]

if TYPE_CHECKING:
    from zyx.backend.device import Device

LOCK_NAME = "zyx-build.lock"


def uses_pocl_cache(device: Device) -> bool:
    """Whether ``device``'s driver is PoCL with its on-disk kernel cache on (``POCL_KERNEL_CACHE=0`` turns it off)."""
    return "pocl" in device.info.platform_version.lower() and os.environ.get("POCL_KERNEL_CACHE", "1") != "0"


def pocl_cache_dir() -> Path:
    """The directory PoCL keeps its kernel cache in, as PoCL chooses it."""
    explicit = os.environ.get("POCL_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "pocl"


@contextlib.contextmanager
def build_lock(device: Device) -> Iterator[None]:
    """Hold the cross-process build lock of ``device``'s driver cache (nothing to hold for drivers
    without a shared cache, or where the lock file cannot be made: the build then runs unlocked)."""
    if fcntl is None or not uses_pocl_cache(device):
        yield
        return
    path = pocl_cache_dir() / LOCK_NAME
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError:
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock
