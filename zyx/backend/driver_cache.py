"""The OpenCL driver's own on-disk kernel cache, and a lock that keeps processes from building
into it at the same time.

PoCL writes every program it builds (from source or from a binary) into a kernel cache on disk,
shared by every process of the user (``$POCL_CACHE_DIR``, else ``$XDG_CACHE_HOME/pocl`` or
``~/.cache/pocl``). Two processes building the same program into it at once race: now and then
one gets a ``CompileError`` whose log says only "failed to build the program", or aborts inside
``clBuildProgram`` of a cached binary. A build therefore holds
an exclusive ``flock`` on a file in that cache directory: processes sharing the cache build one at
a time, processes with their own caches (zyx's test workers) do not wait for each other.

A process can hold the lock for long: stopped (Ctrl-Z, a debugger), or wedged inside the driver.
Waiting therefore says so on stderr after ``NOTICE_AFTER_S``, naming the holder's pid (written
into the lock file), and gives up after ``GIVE_UP_AFTER_S`` with a warning: the build then runs
unlocked, which risks the race above but never hangs the caller for good.
"""
from __future__ import annotations

import contextlib
import os
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no flock; builds are not serialized there
    fcntl = None  # type: ignore[assignment]

if TYPE_CHECKING:
    from zyx.backend.cl_device import ClDevice

LOCK_NAME = "zyx-build.lock"
#: seconds of waiting for another process's build before saying so on stderr
NOTICE_AFTER_S = 3.0
#: seconds of waiting after which the build runs without the lock (with a warning)
GIVE_UP_AFTER_S = 120.0
_POLL_S = 0.01  # first retry interval; it doubles up to 0.2 s


def uses_pocl_cache(device: ClDevice) -> bool:
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
def build_lock(device: ClDevice) -> Iterator[None]:
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
        if _acquire(fd, path):
            _write_holder(fd)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def _try_lock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _acquire(fd: int, path: Path) -> bool:
    """Take the lock on ``fd``, waiting for its holder; False when ``GIVE_UP_AFTER_S`` passed without it."""
    if _try_lock(fd):
        return True
    start = time.monotonic()
    pause, announced = _POLL_S, False
    while True:
        time.sleep(pause)
        pause = min(2 * pause, 0.2)
        if _try_lock(fd):
            if announced:
                print(f"zyx: got the kernel build lock after {time.monotonic() - start:.0f} s", file=sys.stderr)
            return True
        waited = time.monotonic() - start
        if not announced and waited >= NOTICE_AFTER_S:
            print(f"zyx: waiting for {_holder(path)} to finish building kernels into PoCL's cache {path.parent} "
                  f"(processes sharing that cache build one at a time; POCL_CACHE_DIR gives this one its own)",
                  file=sys.stderr)
            announced = True
        if waited >= GIVE_UP_AFTER_S:
            warnings.warn(f"zyx: {_holder(path)} has held the kernel build lock {path} for over "
                          f"{GIVE_UP_AFTER_S:.0f} s (stopped or stuck?); building without it, so a build racing "
                          f"another process's may fail",
                          RuntimeWarning, stacklevel=4)
            return False


def _write_holder(fd: int) -> None:
    """Record this process's pid in the lock file, for the notices of processes waiting on it."""
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    except OSError:
        pass  # the pid is only for messages


def _holder(path: Path) -> str:
    """'process N' from the lock file, or 'another process' when it names none."""
    try:
        pid = path.read_text().strip()
    except OSError:
        pid = ""
    return f"process {pid}" if pid.isdigit() else "another process"
