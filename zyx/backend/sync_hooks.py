"""Checks that run whenever device results become visible to the host.

Kernels that detect bad input only on the device (an out-of-range offset read at run
time) record it in a device flag; the module that launched them registers a check here.
``Tensor`` readback and ``zyx.synchronize`` call ``run`` so that such an error is raised
at the latest when values are next read.
"""
from __future__ import annotations

import threading
from typing import Any, Callable, Optional

Check = Callable[[Optional[Any]], None]  # called with the device being read (None: all)

_checks: list[Check] = []
_lock = threading.Lock()


def register(check: Check) -> None:
    """Add ``check`` (idempotent); it raises when it finds an error on the device it is given."""
    with _lock:
        if check not in _checks:
            _checks.append(check)


def run(device: Any | None = None) -> None:
    """Run every registered check for ``device`` (None: every device)."""
    for check in list(_checks):
        check(device)
