"""Timing: device durations from OpenCL profiling events, host durations from the wall clock.

Every queue is created with profiling enabled, so a launch's event knows when its kernel
started and ended on the device. Measurements take warm-up runs, then the median of several.
"""
from __future__ import annotations

import statistics
import time
from typing import Any, Callable


def event_seconds(event: Any) -> float:
    """Device time between start and end of a profiling event, in seconds, once it has finished
    (waited for here). A list or tuple of events is summed (a kernel launched as whole
    work-groups plus a remainder, a contract's several launches); None, nothing launched, is 0."""
    if event is None:
        return 0.0
    if isinstance(event, (list, tuple)):
        return sum(event_seconds(e) for e in event)
    event.wait()
    return (event.profile.end - event.profile.start) * 1e-9


def span_seconds(first: Any, last: Any) -> float:
    """Device time from the end of event ``first`` to the end of event ``last`` (two markers
    around work whose own events are not at hand), in seconds."""
    last.wait()
    return (last.profile.end - first.profile.end) * 1e-9


def median_event_seconds(enqueue: Callable[[], Any], warmup: int = 2, runs: int = 7) -> float:
    """Median device time of ``enqueue()`` (which returns its profiling event or events), in seconds."""
    for _ in range(warmup):
        event_seconds(enqueue())
    return statistics.median(event_seconds(enqueue()) for _ in range(runs))


def median_wall_seconds(fn: Callable[[], Any], warmup: int = 2, runs: int = 7) -> float:
    """Median wall-clock time of ``fn()``, in seconds (for host-side work)."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        watch = Stopwatch()
        fn()
        times.append(watch.seconds())
    return statistics.median(times)


class Stopwatch:
    """Wall-clock seconds since it was made (``time.perf_counter``)."""

    __slots__ = ("start",)

    def __init__(self) -> None:
        self.start = time.perf_counter()

    def seconds(self) -> float:
        """Seconds elapsed so far."""
        return time.perf_counter() - self.start


#: Sleep between two implementations' blocks in a benchmark. PyTorch's OpenMP (libgomp) workers spin
#: on for milliseconds after every parallel call, taking a core from whatever runs next; this outlasts
#: that spin.
SETTLE_SECONDS = 0.03


def alternating(fns: dict[str, Callable[[], Any]], reps: int, block: int = 3,
                pause: float = 0.02, settle: float = SETTLE_SECONDS) -> dict[str, tuple[float, float]]:
    """(best, median) wall seconds of each implementation (a benchmark's same-run comparison): ``reps``
    rounds, each running every implementation in turn for ``block`` timed calls after one untimed call.

    Another library's threads spin on after a call, so ``pause`` seconds of sleep follow each call of an
    implementation whose name does not start with ``zyx``, and ``settle`` seconds of sleep come before
    every block: the block's calls do not share the CPUs with the previous implementation's spinning
    threads (``SETTLE_SECONDS``)."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(reps):
        for name, fn in fns.items():
            time.sleep(settle)
            fn()
            for _ in range(block):
                watch = Stopwatch()
                fn()
                times[name].append(watch.seconds())
                if not name.startswith("zyx"):
                    time.sleep(pause)
    return {name: (min(ts), statistics.median(ts)) for name, ts in times.items()}
