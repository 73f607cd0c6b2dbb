"""Tuning contract kernels: declared tunables searched on scratch outputs, verified, stored."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import zyx
from zyx.kernels.contracts import tuning as ctuning
from zyx.opt.db import TuningDB
from zyx.opt.tuner import TuneStats

pytestmark = pytest.mark.needs_device


def _entries(path: Path, prefix: str) -> list:
    return [e for e in TuningDB(path / "tuning.sqlite3").entries() if e.kernel.startswith(f"contract:{prefix}")]


def test_flip_tuned_is_bit_exact_and_stored(tuning: Path) -> None:
    a = np.random.default_rng(0).standard_normal((37, 129)).astype(np.float32)
    before = TuneStats.searches
    got = zyx.tensor(a).flip(1).numpy()
    assert np.array_equal(got, a[:, ::-1])
    assert TuneStats.searches > before
    (entry,) = _entries(tuning, "flip")
    assert entry.tuned_s <= entry.baseline_s and set(entry.config) == {"local_size", "per_item", "vector_bytes"}


def test_in_place_write_is_measured_on_scratch(tuning: Path) -> None:
    dest_np = np.arange(40 * 50, dtype=np.int32).reshape(40, 50)
    dest = zyx.tensor(dest_np)
    src = np.full((10, 20), -7, dtype=np.int32)
    zyx.write_slice(dest, zyx.tensor(src), ((5, 15), (10, 30)))
    expected = dest_np.copy()
    expected[5:15, 10:30] = -7
    assert np.array_equal(dest.numpy(), expected)  # written exactly once, untouched elsewhere
    assert _entries(tuning, "write_slice")


def test_cumsum_tuned_matches_reference(tuning: Path) -> None:
    a = np.random.default_rng(1).standard_normal((3, 5000)).astype(np.float32)
    got = zyx.tensor(a).cumsum(1).numpy()
    np.testing.assert_allclose(got, np.cumsum(a.astype(np.float64), 1), rtol=1e-4, atol=1e-3)
    assert _entries(tuning, "cumsum")


def test_wrong_candidate_never_wins(tuning: Path, corrupt_candidates) -> None:
    corrupt_candidates(ctuning)
    a = np.random.default_rng(2).standard_normal((64, 64)).astype(np.float32)
    assert np.array_equal(zyx.tensor(a).triu(1).numpy(), np.triu(a, 1))
    (entry,) = _entries(tuning, "triangular")
    assert entry.candidates > 1 and entry.tuned_s == entry.baseline_s


def test_second_call_uses_the_database(tuning: Path) -> None:
    a = zyx.rand(33, 65)
    a.roll(3, 1).numpy()
    searches = TuneStats.searches
    hits = TuneStats.db_hits
    zyx.rand(33, 65).roll(5, 1).numpy()
    assert TuneStats.searches == searches and TuneStats.db_hits > hits
