"""Profiling: ``with zyx.profiler.profile() as prof:`` records the kernels, builds and copies of a block;
``prof.key_averages().table()`` prints them as PyTorch's profiler does, ``prof.export_chrome_trace(path)``
writes a trace Perfetto opens."""
from __future__ import annotations

from zyx.profiler.events import ProfilerEvent
from zyx.profiler.session import profile
from zyx.profiler.table import EventAverage, KeyAverages

__all__ = ["EventAverage", "KeyAverages", "ProfilerEvent", "profile"]
