"""Beam search over a kernel's tunable parameters, with output verification.

A candidate configuration is built and timed by a caller-supplied ``measure``; one that
fails to build or launch scores infinity and is logged, never fatal; one whose output
differs from the baseline (the default configuration's output) is rejected and can
never win.
"""
from __future__ import annotations

import itertools
import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Callable

from zyx.backend.timing import Stopwatch

Config = Mapping[str, Any]


@dataclass(frozen=True)
class Param:
    """One tunable: a name and its candidate values in a meaningful order."""

    name: str
    values: tuple[Any, ...]


@dataclass(frozen=True)
class Space:
    """The tunables of a kernel plus a constraint on whole configurations (device limits)."""

    params: tuple[Param, ...]
    allowed: Callable[[Config], bool] = lambda cfg: True

    def neighbors(self, cfg: Config, wide: bool) -> list[dict[str, Any]]:
        """Configs differing from ``cfg`` in one parameter (adjacent values, or any value when wide)."""
        out = []
        for p in self.params:
            if cfg.get(p.name) not in p.values:
                choices = p.values
            elif wide:
                choices = p.values
            else:
                i = p.values.index(cfg[p.name])
                choices = p.values[max(i - 1, 0): i + 2]
            for v in choices:
                if v != cfg.get(p.name):
                    cand = {**cfg, p.name: v}
                    if self.allowed(cand):
                        out.append(cand)
        return out


@dataclass
class Trial:
    """One measured candidate."""

    config: dict[str, Any]
    seconds: float
    error: str | None = None
    verified: bool = True


@dataclass
class SearchResult:
    """The outcome of a search: the best verified configuration and what it cost to find."""

    best: dict[str, Any]
    best_s: float
    baseline_s: float
    trials: list[Trial] = field(default_factory=list)
    elapsed_s: float = 0.0

    @property
    def rejected(self) -> list[Trial]:
        return [t for t in self.trials if not t.verified]

    @property
    def failed(self) -> list[Trial]:
        return [t for t in self.trials if t.error is not None]


def _key(cfg: Config) -> tuple:
    return tuple(sorted(cfg.items()))


def beam_search(
    space: Space,
    default: Config,
    measure: Callable[[Config], tuple[float, Any]],
    same_output: Callable[[Any, Any], bool],
    budget_s: float = 5.0,
    beam_width: int = 2,
    wide: bool = False,
    max_rounds: int = 8,
    log: Callable[[str], None] | None = None,
    progress: Callable[[int], None] | None = None,
) -> SearchResult:
    """Search ``space`` from ``default``; ``measure(cfg) -> (seconds, output)``.

    The default configuration is measured first; its output is the reference every other
    candidate's output must match (``same_output``) before it may win. The fastest candidates
    and the default are measured again at the end (``_confirm``) before one is chosen.
    """
    log = log or (lambda msg: None)
    watch = Stopwatch()
    default = dict(default)
    try:
        base_s, reference = measure(default)
    except Exception as exc:
        raise RuntimeError(f"the default configuration {default} failed: {exc}") from exc
    result = SearchResult(best=default, best_s=base_s, baseline_s=base_s, trials=[Trial(default, base_s)])
    seen = {_key(default)}
    beam: list[Trial] = [result.trials[0]]
    for _ in range(max_rounds):
        frontier = []
        for t in beam:
            for cand in space.neighbors(t.config, wide):
                if _key(cand) not in seen:
                    seen.add(_key(cand))
                    frontier.append(cand)
        if not frontier:
            break
        improved = False
        for cand in frontier:
            if watch.seconds() > budget_s:
                break
            trial = _measure_one(cand, measure, same_output, reference, log)
            result.trials.append(trial)
            if progress:
                progress(len(result.trials))
            if trial.verified and trial.error is None and trial.seconds < result.best_s:
                result.best, result.best_s, improved = dict(cand), trial.seconds, True
        ok = [t for t in result.trials if t.verified and t.error is None and math.isfinite(t.seconds)]
        beam = sorted(ok, key=lambda t: t.seconds)[:beam_width]
        if not improved or watch.seconds() > budget_s:
            break
    if result.best != default:
        _confirm(result, default, measure, beam_width)
    result.elapsed_s = watch.seconds()
    return result


def _confirm(result: SearchResult, default: dict[str, Any], measure: Callable[[Config], tuple[float, Any]],
             top: int, rounds: int = 2) -> None:
    """Re-measure the ``top`` fastest verified candidates and the default, interleaved, ``rounds`` times; each
    keeps its fastest time (a busy machine only slows a kernel down), and the fastest of those wins: a
    default first timed in a busy moment is not beaten by a slower candidate timed in a quiet one."""
    ok = sorted((t for t in result.trials[1:] if t.verified and t.error is None and math.isfinite(t.seconds)),
                key=lambda t: t.seconds)[:top]
    best = {_key(default): (result.baseline_s, default)}
    best.update({_key(t.config): (t.seconds, t.config) for t in ok})
    for _ in range(rounds):
        for key, (s, cfg) in list(best.items()):
            try:
                best[key] = (min(s, measure(cfg)[0]), cfg)
            except Exception:  # noqa: BLE001 - it ran before; a failure now just keeps its time
                pass
    result.best_s, cfg = min(best.values(), key=lambda x: x[0])
    result.best, result.baseline_s = dict(cfg), best[_key(default)][0]


def _measure_one(cand: dict[str, Any], measure: Callable[[Config], tuple[float, Any]],
                 same_output: Callable[[Any, Any], bool], reference: Any,
                 log: Callable[[str], None]) -> Trial:
    try:
        seconds, output = measure(cand)
    except Exception as exc:  # noqa: BLE001 - a failing candidate scores infinity, never fatal
        log(f"candidate {cand} failed: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
        return Trial(cand, math.inf, error=f"{type(exc).__name__}: {exc}")
    if not same_output(reference, output):
        log(f"candidate {cand} rejected: its output differs from the untuned kernel's")
        return Trial(cand, seconds, verified=False)
    return Trial(cand, seconds)


def grid(params: Sequence[Param]) -> list[dict[str, Any]]:
    """Every combination of the parameters' values (for small exhaustive sweeps)."""
    names = [p.name for p in params]
    return [dict(zip(names, combo)) for combo in itertools.product(*(p.values for p in params))]


def stderr_log(msg: str) -> None:
    """Log a tuning message to stderr."""
    print(f"zyx tune: {msg}", file=sys.stderr)
