"""Tuning the direct conv2d kernels (zyx.kernels.conv_tuning): a search on real buffers stores its result, a
later call reads it without searching, a stored tile is the one launched, bad entries are ignored."""
from __future__ import annotations

import json
import re
import sqlite3
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import zyx
import zyx.nn.functional as F
from zyx import settings
from zyx.backend.launch import recording
from zyx.kernels import conv, conv_tuning
from zyx.opt import tuner
from zyx.opt.db import TuningDB
from zyx.opt.tuner import TuneStats

torch = pytest.importorskip("torch")
TF = torch.nn.functional
pytestmark = pytest.mark.needs_device
RNG = np.random.default_rng(1403)
# (N, C, H, W) input, 16 output channels, 3x3 kernel, padding 1: one vector group of 16 floats
SHAPE, OUT = (1, 8, 9, 11), 16


@pytest.fixture(autouse=True)
def cpu_heuristics(monkeypatch: pytest.MonkeyPatch) -> None:
    """The direct conv kernels are the CPU heuristics' choice: CI's GPU-heuristics step still tunes them."""
    monkeypatch.setattr(settings, "HEURISTICS", "cpu")


@pytest.fixture()
def quick(tuning: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Tuning on with a 1 s budget per kernel (each candidate tile is a compile)."""
    monkeypatch.setitem(tuner.BUDGET_S, 1, 1.0)
    return tuning


@pytest.fixture()
def searched(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The conv kernel keys searched (not read from the database) so far; the IR kernels around a
    convolution (the loss, the gradient's relayouts) are tuned too and are not counted."""
    keys: list[str] = []

    def counting(device, key, *args, **kwargs):
        before = TuneStats.searches
        cfg = tuner.choose(device, key, *args, **kwargs)
        keys.extend([key] * (TuneStats.searches - before))
        return cfg

    monkeypatch.setattr(conv_tuning, "choose", counting)
    return keys


def _conv(grad: bool = False) -> tuple[list[str], np.ndarray, np.ndarray | None, np.ndarray, np.ndarray | None]:
    """One conv2d (and its weight gradient when ``grad``) on fresh data: the launched direct kernels'
    sources, zyx's output and weight gradient, torch's."""
    x, w, b = (RNG.normal(size=s).astype(np.float32) for s in (SHAPE, (OUT, SHAPE[1], 3, 3), (OUT,)))
    zw = zyx.tensor(w, requires_grad=grad)
    tw = torch.tensor(w, requires_grad=grad)
    with recording() as launches:
        y = F.conv2d(zyx.tensor(x), zw, zyx.tensor(b), padding=1)
        got = y.numpy()
        gw = None
        if grad:
            y.square().sum().backward()
            gw = zw.grad.numpy()
    ty = TF.conv2d(torch.tensor(x), tw, torch.tensor(b), padding=1)
    tgw = None
    if grad:
        ty.square().sum().backward()
        tgw = tw.grad.numpy()
    sources = [k.source for k, *_ in launches if k.name in ("zyx_conv2d", "zyx_conv2d_wgrad")]
    return sources, got, gw, ty.detach().numpy(), tgw


def _tile(sources: list[str]) -> tuple[int, int, int]:
    """The forward kernel's tile, from the comment the template writes at its top."""
    fwd = next(s for s in sources if "conv weight" not in s)
    m = re.search(r"tile (\d+) pixels x (\d+) x float\d+, (\d+) row", fwd)
    return int(m[1]), int(m[2]), int(m[3])


def _entries(path: Path, prefix: str) -> list:
    return [e for e in TuningDB(path / "tuning.sqlite3").entries() if e.kernel.startswith(prefix)]


def test_tuning_off_runs_the_heuristic_tile_and_searches_nothing() -> None:
    before = TuneStats.searches
    sources, got, _, ref, _ = _conv()
    np.testing.assert_allclose(got, ref, rtol=2e-4, atol=2e-4)
    assert TuneStats.searches == before
    assert _tile(sources) == conv.tile(zyx.float32, OUT, SHAPE[3])


def test_search_stores_then_the_stored_tile_runs_without_searching(quick: Path, searched: list[str]) -> None:
    sources, got, gw, ref, tgw = _conv(grad=True)
    np.testing.assert_allclose(got, ref, rtol=2e-4, atol=2e-4)
    np.testing.assert_allclose(gw, tgw, rtol=3e-4, atol=3e-4)
    assert [k.split(":")[0] for k in searched] == ["conv2d_direct", "conv2d_wgrad"]
    (fwd,) = _entries(quick, "conv2d_direct:float32:k3x3")
    (wgrad,) = _entries(quick, "conv2d_wgrad:float32:k3x3")
    assert fwd.candidates > 1 and fwd.tuned_s <= fwd.baseline_s and wgrad.tuned_s <= wgrad.baseline_s
    assert _tile(sources) == (fwd.config["p"], fwd.config["v"], fwd.config["rows"])
    assert f"{wgrad.config['cb']} channel(s)" in next(s for s in sources if "conv weight" in s)

    # a second call reads both results: no search, the stored tile launched
    hits = TuneStats.db_hits
    sources, got, gw, ref, tgw = _conv(grad=True)
    assert len(searched) == 2 and TuneStats.db_hits >= hits + 2
    assert _tile(sources) == (fwd.config["p"], fwd.config["v"], fwd.config["rows"])
    np.testing.assert_allclose(got, ref, rtol=2e-4, atol=2e-4)

    # a stored tile other than the search's is the one launched, and is correct
    db = TuningDB(quick / "tuning.sqlite3")
    other = {"p": 3, "v": 1, "rows": 2}
    db.put(replace(fwd, config=other))
    sources, got, _, ref, _ = _conv()
    assert len(searched) == 2 and _tile(sources) == (3, 1, 2)
    np.testing.assert_allclose(got, ref, rtol=2e-4, atol=2e-4)


def test_corrupt_and_stale_entries_are_ignored(quick: Path, searched: list[str]) -> None:
    _conv()
    (fwd,) = _entries(quick, "conv2d_direct:float32:k3x3")
    db = TuningDB(quick / "tuning.sqlite3")
    # stale: a tile outside the space (5 vectors do not divide 1; 99 pixels exceed the row) or other keys
    for config in ({"p": 99, "v": 5, "rows": 1}, {"tile": 8}):
        db.put(replace(fwd, config=config))
        del searched[:]
        sources, got, _, ref, _ = _conv()
        assert searched == [fwd.kernel]
        np.testing.assert_allclose(got, ref, rtol=2e-4, atol=2e-4)
        (new,) = _entries(quick, "conv2d_direct:float32:k3x3")
        assert (new.config["p"], new.config["v"], new.config["rows"]) == _tile(sources)
    # corrupt: the stored config is not JSON
    db.close()
    with sqlite3.connect(quick / "tuning.sqlite3") as conn:
        conn.execute("UPDATE tuning SET config='{not json' WHERE kernel=?", (fwd.kernel,))
    del searched[:]
    _, got, _, ref, _ = _conv()
    assert searched == [fwd.kernel]
    np.testing.assert_allclose(got, ref, rtol=2e-4, atol=2e-4)
    (new,) = _entries(quick, "conv2d_direct:float32:k3x3")
    assert set(new.config) == {"p", "v", "rows"} and json.dumps(new.config)


def test_forced_tile_wins_over_tuning(quick: Path, searched: list[str]) -> None:
    with conv_tuning.forced_tile((2, 1, 1)):
        sources, got, _, ref, _ = _conv()
    assert _tile(sources) == (2, 1, 1) and searched == []
    np.testing.assert_allclose(got, ref, rtol=2e-4, atol=2e-4)


def test_space_keeps_only_valid_tiles() -> None:
    space = conv_tuning.tile_space(16, 16, 9, 3, 4)  # one 16-float vector, 3 columns
    assert space.params[0].values == (1, 2, 3) and space.params[1].values == (1,)
    assert not space.allowed({"p": 4, "v": 1, "rows": 1}) and space.allowed({"p": 3, "v": 1, "rows": 4})
    assert conv_tuning.wgrad_space(6, 3, 3).params[0].values == (1, 2, 3)
    assert conv_tuning.wgrad_space(4, 5, 5).params[0].values == (1,)


def test_zyx_tune_builtin_set_tunes_the_conv_kernels(tuning: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """``python -m zyx tune`` reaches the direct conv kernels (its built-in set cut to the conv workload)."""
    from zyx.cli import tune
    from zyx.opt import db

    monkeypatch.setattr(tune, "BUILTIN", tuple(w for w in tune.BUILTIN if w.name.startswith("conv2d")))
    monkeypatch.setattr(tune, "default_db", lambda: db.TuningDB(tuning / "tuning.sqlite3"))
    assert len(tune.BUILTIN) == 1
    assert tune.cmd_tune(tune_args(["--quick", "--budget", "1"])) == 0
    out = capsys.readouterr().out
    assert "conv2d 2x64x56x56 -> 64" in out and "conv2d weight gradient" in out
    assert _entries(tuning, "conv2d_direct:float32:k3x3") and _entries(tuning, "conv2d_wgrad:float32:k3x3")


def tune_args(argv: list[str]):
    import argparse

    from zyx.cli import tune

    p = argparse.ArgumentParser()
    tune.add_arguments(p)
    return p.parse_args(argv)
