"""A profile as Chrome trace-event JSON (what Perfetto and chrome://tracing open): one process, a row for the
host and one per device queue, every event a complete event (``ph: "X"``) with ``ts``/``dur`` in microseconds."""
from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from zyx.profiler.events import ProfilerEvent

_PID = 1
_HOST_TID = 0


def trace_events(events: Sequence[ProfilerEvent], device_names: dict[str, str]) -> list[dict[str, Any]]:
    """The ``traceEvents`` list: metadata naming the rows, then the host's calls (launches, builds, copies)
    on the host row and each kernel and device copy on its device's row."""
    tids = {dev: i + 1 for i, dev in enumerate(sorted({e.device for e in events}))}
    out: list[dict[str, Any]] = [
        {"ph": "M", "pid": _PID, "tid": _HOST_TID, "name": "process_name", "args": {"name": "zyx"}},
        {"ph": "M", "pid": _PID, "tid": _HOST_TID, "name": "thread_name", "args": {"name": "host"}},
    ]
    for dev, tid in tids.items():
        out.append({"ph": "M", "pid": _PID, "tid": tid, "name": "thread_name",
                    "args": {"name": f"queue {device_names.get(dev, dev)}"}})
    for e in events:
        args: dict[str, Any] = {"device": e.device, "bytes": e.bytes}
        if e.ops:
            args["ops"] = list(e.ops)
        if e.detail:
            args["how"] = e.detail
        on_device = e.kind == "kernel" or (e.kind == "transfer" and e.name == "device_to_device")
        host_name = f"launch {e.name}" if e.kind == "kernel" else e.name
        out.append({"ph": "X", "pid": _PID, "tid": _HOST_TID, "name": host_name, "cat": e.kind,
                    "ts": e.host_start, "dur": max(e.host_duration, 0.0), "args": args})
        if on_device:
            out.append({"ph": "X", "pid": _PID, "tid": tids[e.device], "name": e.name, "cat": e.kind,
                        "ts": e.start, "dur": max(e.duration, 0.0), "args": args})
    return out


def write(path: str | os.PathLike, events: Sequence[ProfilerEvent], device_names: dict[str, str]) -> None:
    """Write the trace to ``path`` whole or not at all (a temporary file renamed over it)."""
    path = Path(path)
    data = json.dumps({"traceEvents": trace_events(events, device_names), "displayTimeUnit": "ms"})
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
