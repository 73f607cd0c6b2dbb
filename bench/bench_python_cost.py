"""Python cost per op: host time zyx spends recording ops and replaying cached schedules.

Uses only the public API, so the same script measures any zyx tree (``PYTHONPATH=<tree>``):
the restructure's before/after rows in RESULTS.md come from running it on both. Rows (best of
several rounds, microseconds):

* ``record binary op``: ``y = y * x`` recorded lazily (no realize), per op;
* ``record unary op``: ``y = y.exp()`` recorded, per op;
* ``record 11-op layer_norm``: ``F.layer_norm`` of a (64, 256) tensor recorded, per call;
* ``replay 11-op layer_norm``: recorded + realized from the schedule cache, per call;
* ``tiny (x+1).realize()``: record, replay, launch and wait for a 1024-element kernel.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

if __name__ == "__main__" and "--tree" in sys.argv:  # measure another zyx tree
    sys.path.insert(0, sys.argv[sys.argv.index("--tree") + 1])
elif __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import zyx
import zyx.nn.functional as F

ROUNDS = 7


def _per_call_us(fn: Callable[[], Any], calls: int, rounds: int | None = None) -> float:
    fn()
    best = float("inf")
    for _ in range(rounds or ROUNDS):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, time.perf_counter() - t0)
    return best / calls * 1e6


def run(quick: bool = False) -> list[dict[str, Any]]:
    """The rows (name, microseconds per call); ``quick`` takes fewer rounds."""
    global ROUNDS
    ROUNDS = 2 if quick else 7
    x = zyx.tensor(np.ones(1024, np.float32)).realize()
    m = zyx.tensor(np.random.default_rng(0).standard_normal((64, 256)).astype(np.float32)).realize()
    chain = 100

    def record_binary() -> None:
        y = x
        for _ in range(chain):
            y = y * x

    def record_unary() -> None:
        y = x
        for _ in range(chain):
            y = y.exp()

    def tiny() -> None:
        (x + 1).realize()
        zyx.synchronize()

    rows = [
        ("record binary op", _per_call_us(record_binary, 20) / chain),
        ("record unary op", _per_call_us(record_unary, 20) / chain),
        ("record 11-op layer_norm", _per_call_us(lambda: F.layer_norm(m, 256), 200)),
        ("replay 11-op layer_norm", _per_call_us(lambda: F.layer_norm(m, 256).realize(), 200)),
        ("tiny (x+1).realize()", _per_call_us(tiny, 200)),
    ]
    zyx.synchronize()
    return [{"name": name, "us": round(us, 2)} for name, us in rows]


if __name__ == "__main__":
    print(f"zyx from {Path(zyx.__file__).parent.parent}")
    print("| python cost | us |\n|---|---|")
    for row in run():
        print(f"| {row['name']} | {row['us']} |")
