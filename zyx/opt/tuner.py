"""Choosing a kernel's configuration: heuristics, the tuning database, or a search.

``ZYX_TUNE=0`` heuristics only (the default, and what tests use), ``1`` use the database
and search unseen kernels within a small budget, ``2`` a wide search with a larger one.
Kernels (IR or contract) call ``choose`` with their key, problem sizes, tunable space,
heuristic default and a ``measure`` function that builds, runs and times a config.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from zyx import settings
from zyx.opt.db import Entry, TuningDB, default_db, size_class
from zyx.opt.search import Config, SearchResult, Space, beam_search, stderr_log

if TYPE_CHECKING:
    from zyx.backend.device import Device

BUDGET_S = {1: 3.0, 2: 30.0}  # per kernel and size class


#: Called with (kernel label, candidates measured so far) during searches (the CLI's progress line).
progress_hook: Callable[[str, int], None] | None = None


class TuneStats:
    """Counters for tests and reports: searches run, candidates measured, database hits."""

    searches = 0
    candidates = 0
    db_hits = 0


def choose(
    device: Device,
    kernel_key: str,
    sizes: tuple[int, ...],
    space: Space,
    default: Config,
    measure: Callable[[Config], tuple[float, Any]],
    same_output: Callable[[Any, Any], bool],
    label: str = "",
    mode: int | None = None,
    db: TuningDB | None = None,
    budget_s: float | None = None,
) -> dict[str, Any]:
    """The configuration to run ``kernel_key`` with on ``device`` at these sizes."""
    mode = settings.TUNE if mode is None else mode
    if mode <= 0:
        return dict(default)
    db = db or default_db()
    sc = size_class(sizes)
    kernel_key += settings.heuristics_tag(device)  # forced GPU/CPU heuristics tune kernels of other shapes
    entry = db.get(device.info.signature, kernel_key, sc)
    if entry is not None and space.allowed(entry.config) and set(entry.config) == set(default):
        TuneStats.db_hits += 1
        return dict(entry.config)
    hook = progress_hook
    result = run_search(space, default, measure, same_output, mode, budget_s,
                        progress=(lambda n: hook(label or kernel_key, n)) if hook else None)
    db.put(Entry(device.info.signature, kernel_key, sc, result.best, result.best_s, result.baseline_s,
                 result.elapsed_s, len(result.trials), label))
    return dict(result.best)


def run_search(space: Space, default: Config, measure: Callable[[Config], tuple[float, Any]],
               same_output: Callable[[Any, Any], bool], mode: int, budget_s: float | None = None,
               progress: Callable[[int], None] | None = None) -> SearchResult:
    """One search in the given mode, counted in ``TuneStats``."""
    wide = mode >= 2
    result = beam_search(space, default, measure, same_output,
                         budget_s=budget_s if budget_s is not None else BUDGET_S[2 if wide else 1],
                         beam_width=3 if wide else 2, wide=wide,
                         log=stderr_log if settings.DEBUG >= 1 else None, progress=progress)
    TuneStats.searches += 1
    TuneStats.candidates += len(result.trials)
    return result
