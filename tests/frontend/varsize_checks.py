"""Checks shared by the variable-size tests (test_variable_sizes, test_variable_size_exprs)."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from zyx.backend.program import BuildStats


def close(got: Any, want: Any, rtol: float = 1e-5, atol: float = 1e-6) -> None:
    """``got.numpy()`` has ``want``'s shape and values."""
    got = got.numpy()
    assert got.shape == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def np_softmax(a: np.ndarray, axis: int) -> np.ndarray:
    """NumPy's softmax along ``axis`` (an empty array as it is)."""
    if a.size == 0:
        return a
    e = np.exp(a - a.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def flat_compiles(fn: Callable[[Any], Any], values: Sequence[Any]) -> None:
    """Runs ``fn(value)`` for each value; asserts that nothing compiles after the first."""
    fn(values[0])
    before = BuildStats.programs()
    for v in values[1:]:
        fn(v)
    assert BuildStats.programs() == before, "a new bound value compiled a kernel"
