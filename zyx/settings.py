"""zyx's environment variables, read in one place (README lists them in one table).

``ZYX_DEVICE``    default device (``opencl:P:D`` or a name substring)
``ZYX_DEBUG``     0 silent, 1 each launch with its time, 2 also each new kernel's source
``ZYX_TUNE``      0 heuristics only, 1 tuning database + small search, 2 wide search
``ZYX_CACHE_DIR`` where compiled binaries and tuning results live (default: platformdirs)
``ZYX_HEURISTICS`` ``auto`` (default) chooses kernel shapes by the device's kind; ``gpu`` or ``cpu``
                  chooses what zyx chooses for that kind on any device (``gpu`` runs the GPU paths,
                  local memory and work-group reductions, on a CPU: tests and the sanitizer tier)
"""
from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any

import platformdirs


def _int_env(name: str, default: int) -> int:
    raw = os.environ.get(name, "")
    try:
        return int(raw) if raw.strip() else default
    except ValueError:
        return default


DEBUG: int = _int_env("ZYX_DEBUG", 0)
TUNE: int = _int_env("ZYX_TUNE", 0)

HEURISTICS_MODES = ("auto", "cpu", "gpu")


def _heuristics_env() -> str:
    raw = os.environ.get("ZYX_HEURISTICS", "").strip().lower()
    if raw in HEURISTICS_MODES or not raw:
        return raw or "auto"
    warnings.warn(f"ZYX_HEURISTICS={raw!r} is not one of {', '.join(HEURISTICS_MODES)}; using auto", stacklevel=2)
    return "auto"


HEURISTICS: str = _heuristics_env()


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


def set_heuristics(mode: str) -> None:
    """Set the heuristics mode (same meaning as ``ZYX_HEURISTICS``: auto, cpu or gpu)."""
    global HEURISTICS
    mode = str(mode).strip().lower()
    if mode not in HEURISTICS_MODES:
        raise ValueError(f"heuristics mode must be one of {', '.join(HEURISTICS_MODES)}, got {mode!r}")
    HEURISTICS = mode


def heuristics_kind(device: Any) -> str:
    """``"cpu"`` or ``"gpu"``: which kind of device the heuristics choose kernel shapes for on ``device`` (a
    ``Device`` or ``DeviceInfo``; None counts as a GPU). The one place that decides: ``ZYX_HEURISTICS`` when
    it names a kind, else the device's own (an accelerator takes the GPU choices). Memory features of the
    real device (huge-page buffers) read ``device.kind`` instead."""
    if HEURISTICS != "auto":
        return HEURISTICS
    return "cpu" if getattr(device, "kind", None) == "cpu" else "gpu"


def heuristics_tag(device: Any) -> str:
    """The part of a tuning/calibration cache key that keeps forced-heuristics results apart: empty when
    the heuristics choose for the device's own kind (so existing entries stay valid), else ``|h=<kind>``."""
    kind = heuristics_kind(device)
    own = "cpu" if getattr(device, "kind", None) == "cpu" else "gpu"
    return "" if kind == own else f"|h={kind}"
