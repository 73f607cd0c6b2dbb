"""Beam search: finds the optimum, skips failing candidates, never lets a wrong one win."""
from __future__ import annotations

import math

import pytest

from zyx.opt.search import Param, Space, beam_search, grid

SPACE = Space((Param("local", (16, 32, 64, 128, 256)), Param("vec", (1, 2, 4, 8))))


def cost(cfg: dict) -> float:
    return abs(math.log2(cfg["local"]) - 6) + abs(math.log2(cfg["vec"]) - 2) + 1.0  # best: 64, 4


def test_finds_the_best_configuration() -> None:
    res = beam_search(SPACE, {"local": 16, "vec": 1}, lambda c: (cost(c), "out"), lambda a, b: a == b,
                      budget_s=10)
    assert res.best == {"local": 64, "vec": 4}
    assert res.best_s == 1.0 and res.baseline_s == cost({"local": 16, "vec": 1})


def test_failing_candidate_is_skipped_not_fatal() -> None:
    def measure(c: dict) -> tuple[float, str]:
        if c["vec"] == 4:
            raise RuntimeError("build failed: vector width unsupported")
        return cost(c), "out"

    res = beam_search(SPACE, {"local": 16, "vec": 1}, measure, lambda a, b: a == b, budget_s=10)
    assert res.best["vec"] != 4
    assert res.failed and all(math.isinf(t.seconds) for t in res.failed)


def test_wrong_candidate_never_wins() -> None:
    # the fastest configuration produces a different output: it must be rejected
    def measure(c: dict) -> tuple[float, str]:
        if c == {"local": 64, "vec": 4}:
            return 0.001, "WRONG"
        return cost(c), "out"

    res = beam_search(SPACE, {"local": 16, "vec": 1}, measure, lambda a, b: a == b, budget_s=10, wide=True)
    assert res.best != {"local": 64, "vec": 4}
    assert any(t.config == {"local": 64, "vec": 4} for t in res.rejected)


def test_constraint_excludes_configurations() -> None:
    space = Space(SPACE.params, allowed=lambda c: c["local"] * c["vec"] <= 128)
    res = beam_search(space, {"local": 16, "vec": 1}, lambda c: (cost(c), 0), lambda a, b: True, budget_s=10,
                      wide=True)
    assert all(t.config["local"] * t.config["vec"] <= 128 for t in res.trials)


def test_budget_bounds_the_search() -> None:
    import time

    def slow(c: dict) -> tuple[float, int]:
        time.sleep(0.05)
        return cost(c), 0

    res = beam_search(SPACE, {"local": 16, "vec": 1}, slow, lambda a, b: True, budget_s=0.2, wide=True)
    assert res.elapsed_s < 1.0 and len(res.trials) < len(grid(SPACE.params))


def test_default_failure_is_reported() -> None:
    with pytest.raises(RuntimeError, match="default configuration"):
        beam_search(SPACE, {"local": 16, "vec": 1}, lambda c: 1 / 0, lambda a, b: True)


def test_a_default_timed_in_a_busy_moment_gets_another_chance() -> None:
    seen: list[dict] = []

    def busy_first(c: dict) -> tuple[float, str]:  # the first measurement (the default's) ran on a busy machine
        seen.append(c)
        return (50.0 if len(seen) == 1 else cost(c)), "out"

    res = beam_search(SPACE, {"local": 64, "vec": 4}, busy_first, lambda a, b: a == b, budget_s=10)
    assert res.best == {"local": 64, "vec": 4} and res.best_s == res.baseline_s == 1.0
    assert seen.count({"local": 64, "vec": 4}) == 3  # measured again, interleaved with the fastest candidates
