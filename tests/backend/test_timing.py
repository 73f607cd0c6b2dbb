"""zyx.backend.timing: profiling-event durations and wall-clock helpers (no device needed)."""
from __future__ import annotations

import time
from types import SimpleNamespace

import pytest

from zyx.backend import timing


class FakeEvent:
    """A finished profiling event: start and end in nanoseconds."""

    def __init__(self, start: int, end: int) -> None:
        self.profile = SimpleNamespace(start=start, end=end)
        self.waited = False

    def wait(self) -> None:
        self.waited = True


def test_event_seconds_of_one_event_a_list_and_nothing() -> None:
    e = FakeEvent(1_000, 3_001_000)
    assert timing.event_seconds(e) == pytest.approx(3e-3) and e.waited
    assert timing.event_seconds([FakeEvent(0, 2_000), (FakeEvent(5, 1_005), None)]) == pytest.approx(3e-6)
    assert timing.event_seconds(None) == 0.0 and timing.event_seconds([]) == 0.0


def test_span_seconds_runs_from_the_first_end_to_the_last_end() -> None:
    before, after = FakeEvent(0, 1_000), FakeEvent(2_000, 501_000)
    assert timing.span_seconds(before, after) == pytest.approx(5e-4) and after.waited


def test_median_event_seconds_skips_the_warmup_runs() -> None:
    durations = iter([100, 100, 7, 1, 5])  # two warm-up runs, then three timed ones
    calls = []

    def enqueue() -> FakeEvent:
        calls.append(1)
        return FakeEvent(0, next(durations))

    assert timing.median_event_seconds(enqueue, warmup=2, runs=3) == pytest.approx(5e-9)
    assert len(calls) == 5


def test_median_wall_seconds_and_stopwatch() -> None:
    calls = []
    assert timing.median_wall_seconds(lambda: calls.append(time.sleep(0.002)), warmup=1, runs=3) >= 0.002
    assert len(calls) == 4
    watch = timing.Stopwatch()
    time.sleep(0.002)
    first = watch.seconds()
    assert 0.002 <= first <= watch.seconds()
