"""A profile's records as users see them: ``ProfilerEvent`` values on one timeline.

Every time is in microseconds since the profile opened, on the host's clock. A kernel's ``start``/``end``
are its device times from the OpenCL profiling event, moved onto the host clock by the offset that puts
each launch's ``queued`` timestamp inside the host call that enqueued it (``clock_offset``).
"""
from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from zyx.backend.profiling import RawEvent


@dataclass(frozen=True)
class ProfilerEvent:
    """One kernel launch, program build or copy.

    ``start``/``end``: when it ran (device times for a kernel or a device copy, host times otherwise);
    ``host_start``/``host_end``: the host call that enqueued or performed it; ``bytes``: what it read and
    wrote (a kernel's output plus the span its loads reach; a copy's size); ``ops``: the ops fused into a
    kernel; ``detail``: how a build was served (``compile``, ``binary cache``, ``in memory``)."""

    kind: str
    name: str
    device: str
    start: float
    end: float
    host_start: float
    host_end: float
    bytes: int = 0
    ops: tuple[str, ...] = ()
    detail: str = ""

    @property
    def duration(self) -> float:
        """``end - start`` in microseconds (a kernel's device time)."""
        return self.end - self.start

    @property
    def host_duration(self) -> float:
        """Microseconds the host spent enqueueing or performing it."""
        return self.host_end - self.host_start


def clock_offset(raws: Sequence[RawEvent], timings: Sequence[tuple[int, int, int]]) -> int:
    """Nanoseconds to add to a device timestamp to put it on the host clock: each launch was queued
    between the start and end of its host call, so every launch bounds the offset from both sides; the
    middle of the tightest bounds when they agree, else (a device clock that drifts) the median middle."""
    lows = [r.host_start - q for r, (q, _, _) in zip(raws, timings)]
    highs = [r.host_end - q for r, (q, _, _) in zip(raws, timings)]
    lo, hi = max(lows), min(highs)
    if lo <= hi:
        return (lo + hi) // 2
    return int(statistics.median((a + b) / 2 for a, b in zip(lows, highs)))


def _device_times(cl_events: list[Any]) -> tuple[int, int, int]:
    """(queued, start, end) in device nanoseconds over a launch's events (waited for here)."""
    for e in cl_events:
        e.wait()
    profiles = [e.profile for e in cl_events]
    return (min(p.queued for p in profiles), min(p.start for p in profiles), max(p.end for p in profiles))


def resolve(raws: Sequence[RawEvent], origin_ns: int) -> list[ProfilerEvent]:
    """The users' events of a closed profile (``origin_ns``: when it opened, host clock)."""
    timed = [r for r in raws if r.cl_events]
    timings = {id(r): _device_times(r.cl_events) for r in timed}  # type: ignore[arg-type]
    offsets: dict[int, int] = {}
    by_device: dict[int, list[RawEvent]] = {}
    for r in timed:
        by_device.setdefault(id(r.device), []).append(r)
    for key, group in by_device.items():
        offsets[key] = clock_offset(group, [timings[id(r)] for r in group])

    def us(ns: float) -> float:
        return (ns - origin_ns) / 1e3

    events = []
    for r in raws:
        if r.cl_events:
            _, start, end = timings[id(r)]
            off = offsets[id(r.device)]
            start_us, end_us = us(start + off), us(end + off)
        else:
            start_us, end_us = us(r.host_start), us(r.host_end)
        device = getattr(r.device, "id", str(r.device))
        events.append(ProfilerEvent(r.kind, r.name, device, start_us, end_us, us(r.host_start), us(r.host_end),
                                    r.nbytes, r.ops, r.detail))
    return events
