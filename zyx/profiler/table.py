"""``key_averages()``: a profile's events grouped by kind and name, printed as PyTorch's profiler prints."""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from zyx.profiler.events import ProfilerEvent


@dataclass
class EventAverage:
    """The events of one (kind, name): how many, their device and host time in microseconds, their bytes."""

    kind: str
    name: str
    calls: int = 0
    device_time_total: float = 0.0
    host_time_total: float = 0.0
    bytes: int = 0
    devices: set[str] = field(default_factory=set)

    @property
    def device_time_avg(self) -> float:
        return self.device_time_total / self.calls if self.calls else 0.0

    @property
    def host_time_avg(self) -> float:
        return self.host_time_total / self.calls if self.calls else 0.0

    @property
    def gb_per_s(self) -> float:
        """Bytes moved per second, in GB/s: of device time, or of host time for what has none (a blocking
        copy); 0 when neither was measurable."""
        t = self.device_time_total if self.device_time_total > 0 else self.host_time_total
        return self.bytes / (t * 1e3) if t > 0 and self.bytes else 0.0


#: The columns ``table`` can sort by (largest first, except ``name``).
SORT_KEYS = ("device_time_total", "device_time_avg", "host_time_total", "host_time_avg", "calls", "bytes",
             "gb_per_s", "name")


def _time(us: float) -> str:
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def _bytes(n: int) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n} B"


class KeyAverages(list):
    """A list of ``EventAverage`` (one per kind and name, in order of first appearance) with ``table``."""

    def table(self, sort_by: str = "device_time_total", row_limit: int = 100) -> str:
        """The rows as a text table like PyTorch's profiler's: name, kind, calls, device time total, its
        share and average, host time total and average, bytes and GB/s; ``row_limit`` rows at most
        (a negative limit prints all)."""
        if sort_by not in SORT_KEYS:
            raise ValueError(f"sort_by must be one of {', '.join(SORT_KEYS)}, got {sort_by!r}")
        rows = sorted(self, key=lambda a: a.name) if sort_by == "name" else \
            sorted(self, key=lambda a: getattr(a, sort_by), reverse=True)
        if row_limit >= 0:
            rows = rows[:row_limit]
        total = sum(a.device_time_total for a in self) or 1.0
        header = ("Name", "Kind", "Calls", "Device total", "Device %", "Device avg", "Host total", "Host avg",
                  "Bytes", "GB/s")
        body = [(a.name, a.kind, str(a.calls), _time(a.device_time_total),
                 f"{100 * a.device_time_total / total:.2f}%", _time(a.device_time_avg), _time(a.host_time_total),
                 _time(a.host_time_avg), _bytes(a.bytes), f"{a.gb_per_s:.2f}" if a.gb_per_s else "-")
                for a in rows]
        name_w = min(max([len(header[0])] + [len(r[0]) for r in body]), 60)
        widths = [name_w] + [max(len(h), *(len(r[i]) for r in body)) if body else len(h)
                             for i, h in enumerate(header) if i]
        rule = "  ".join("-" * w for w in widths)

        def line(cells: tuple[str, ...]) -> str:
            name = cells[0] if len(cells[0]) <= name_w else cells[0][:name_w - 3] + "..."
            return "  ".join([name.ljust(name_w)] + [c.rjust(w) for c, w in zip(cells[1:], widths[1:])])

        kernels = [a for a in self if a.kind == "kernel"]
        footer = (f"Device time total: {_time(sum(a.device_time_total for a in kernels))} in "
                  f"{sum(a.calls for a in kernels)} kernel launches; host time total: "
                  f"{_time(sum(a.host_time_total for a in self))}")
        return "\n".join([rule, line(header), rule, *(line(r) for r in body), rule, footer])

    def __str__(self) -> str:
        return self.table()


def key_averages(events: Iterable[ProfilerEvent]) -> KeyAverages:
    """Group ``events`` by (kind, name). A build or a blocking copy has no device time of its own (its
    host time is what it cost); a kernel's device time is its profiling event's."""
    groups: dict[tuple[str, str], EventAverage] = {}
    for e in events:
        avg = groups.get((e.kind, e.name))
        if avg is None:
            avg = groups[(e.kind, e.name)] = EventAverage(e.kind, e.name)
        avg.calls += 1
        if e.kind == "kernel" or (e.kind == "transfer" and e.name == "device_to_device"):
            avg.device_time_total += e.duration
        avg.host_time_total += e.host_duration
        avg.bytes += e.bytes
        avg.devices.add(e.device)
    return KeyAverages(groups.values())
