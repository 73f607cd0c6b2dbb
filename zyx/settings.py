"""zyx's environment variables, read in one place (README lists them in one table).

``ZYX_DEVICE``    default device (``opencl:P:D`` or a name substring)
``ZYX_DEBUG``     0 silent, 1 each launch with its time, 2 also each new kernel's source
``ZYX_TUNE``      0 heuristics only, 1 tuning database + small search, 2 wide search
``ZYX_CACHE_DIR`` where compiled binaries and tuning results live (default: platformdirs)
"""
from __future__ import annotations

import os
from pathlib import Path

import platformdirs


def _int_env(name: str, default: int) -> int:
    raw = os.environ.get(name, "")
    try:
        return int(raw) if raw.strip() else default
    except ValueError:
        return default


DEBUG: int = _int_env("ZYX_DEBUG", 0)
TUNE: int = _int_env("ZYX_TUNE", 0)


def device_spec() -> str | None:
    """The device selection string from ``ZYX_DEVICE``, or None."""
    spec = os.environ.get("ZYX_DEVICE", "").strip()
    return spec or None


def cache_dir() -> Path:
    """The cache directory (``ZYX_CACHE_DIR`` or the platform's user cache dir)."""
    raw = os.environ.get("ZYX_CACHE_DIR", "").strip()
    return Path(raw) if raw else Path(platformdirs.user_cache_dir("zyx", appauthor=False))


def set_debug(level: int) -> None:
    """Set the debug level (same meaning as ``ZYX_DEBUG``)."""
    global DEBUG
    DEBUG = int(level)
