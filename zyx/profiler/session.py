"""``zyx.profiler.profile()``: the context manager that collects a block's kernel launches, builds and copies."""
from __future__ import annotations

import os
from contextlib import ExitStack
from types import TracebackType

from zyx.backend import profiling
from zyx.profiler import chrome_trace
from zyx.profiler.events import ProfilerEvent, resolve
from zyx.profiler.table import KeyAverages, key_averages


class profile:  # PyTorch's name (torch.profiler.profile), lower case
    """``with zyx.profiler.profile() as prof:`` records every kernel launch, program build and host<->device
    copy of the block (every thread's). After the block: ``prof.events()``, ``prof.key_averages().table()``
    and ``prof.export_chrome_trace(path)``. Reading the device times waits for the block's kernels to finish,
    which happens when the block closes."""

    def __init__(self) -> None:
        self._stack: ExitStack | None = None
        self._raw: list[profiling.RawEvent] | None = None
        self._origin = 0
        self._events: list[ProfilerEvent] | None = None
        self._device_names: dict[str, str] = {}

    def __enter__(self) -> profile:
        if self._stack is not None or self._events is not None:
            raise RuntimeError("a zyx.profiler.profile() can be entered once; make a new one for another block")
        self._stack = ExitStack()
        self._raw = self._stack.enter_context(profiling.collecting())
        self._origin = profiling.now_ns()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        assert self._stack is not None and self._raw is not None
        self._stack.close()
        self._device_names = {getattr(r.device, "id", str(r.device)): str(r.device) for r in self._raw}
        self._events = resolve(self._raw, self._origin)
        self._raw = None

    def _closed(self) -> list[ProfilerEvent]:
        if self._events is None:
            raise RuntimeError("the profile is still open (or was never entered): read it after the with block")
        return self._events

    def events(self) -> list[ProfilerEvent]:
        """Every recorded event in the order the host made them (``kind``, ``name``, ``device``, ``start``,
        ``end`` in microseconds since the block opened, ``bytes``, ...; see ``ProfilerEvent``)."""
        return list(self._closed())

    def key_averages(self) -> KeyAverages:
        """The events grouped by kind and name; ``.table(sort_by=..., row_limit=...)`` prints them."""
        return key_averages(self._closed())

    def export_chrome_trace(self, path: str | os.PathLike) -> None:
        """Write the events as Chrome trace-event JSON to ``path`` (Perfetto, chrome://tracing)."""
        chrome_trace.write(path, self._closed(), self._device_names)

    def device_time_total(self) -> float:
        """Microseconds of device time of the block's kernels."""
        return sum(e.duration for e in self._closed() if e.kind == "kernel")
