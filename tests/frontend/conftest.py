"""Fixtures of the frontend tests."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from zyx.backend.program import BuildStats


def check_flat_compiles(fn: Callable[[Any], Any], values: Sequence[Any]) -> None:
    """Runs ``fn(value)`` for each value; asserts that nothing compiles after the first."""
    fn(values[0])
    before = BuildStats.programs()
    for v in values[1:]:
        fn(v)
    assert BuildStats.programs() == before, "a new bound value compiled a kernel"


@pytest.fixture(scope="session")
def flat_compiles() -> Callable[[Callable[[Any], Any], Sequence[Any]], None]:
    """``flat_compiles(fn, values)``: one compile serves every value (variable sizes)."""
    return check_flat_compiles
