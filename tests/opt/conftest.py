"""Fixtures shared by the tuning tests."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pytest

from zyx import settings
from zyx.graph import schedule
from zyx.opt import tuner


@pytest.fixture()
def tuning(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Tuning on (ZYX_TUNE=1, 2 s per kernel) with a private cache directory and no recorded schedules: a
    replayed schedule carries another test's tuned kernels and would search nothing."""
    schedule.clear()
    monkeypatch.setenv("ZYX_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(settings, "TUNE", 1)
    monkeypatch.setitem(tuner.BUDGET_S, 1, 2.0)
    return tmp_path


@pytest.fixture()
def corrupt_candidates(monkeypatch: pytest.MonkeyPatch) -> Callable[[Any], None]:
    """Patch a module's ``_read_output`` seam so every candidate after the baseline is wrong."""

    def install(module: Any) -> None:
        real = module._read_output
        calls = {"n": 0}

        def corrupting(buf: Any, nbytes: int) -> Any:
            data = real(buf, nbytes)
            calls["n"] += 1
            if calls["n"] > 1:
                data = data.copy()
                data[:4] ^= 0xFF
            return data

        monkeypatch.setattr(module, "_read_output", corrupting)

    return install
