"""The ``zyx`` command line: each subcommand's output on the default device."""
from __future__ import annotations

import pytest

import zyx
from zyx.cli import main


@pytest.mark.needs_device
def test_devices_lists_the_default_device(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["devices"]) == 0
    out = capsys.readouterr().out
    assert zyx.default_device().name in out and "* default device" in out


def test_contracts_lists_every_contract(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["contracts"]) == 0
    out = capsys.readouterr().out
    for name in ("contiguize", "write_slice_doff", "cumsum_f16"):
        assert f"| {name} |" in out


@pytest.mark.needs_device
def test_tune_contracts_calibrates_like_contracts_calibrate(capsys: pytest.CaptureFixture[str],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from zyx.contracts import calibrate

    calls = []
    monkeypatch.setattr(calibrate, "calibrate", lambda dev, quick=False, log=print: calls.append((dev, quick)))
    assert main(["tune", "--contracts", "--quick"]) == 0
    assert calls == [(zyx.default_device(), True)]
    assert "calibrating contract kernels" in capsys.readouterr().out


@pytest.mark.needs_device
def test_tune_show_on_an_empty_cache(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                                     tmp_path) -> None:
    from zyx.opt import db

    monkeypatch.setattr(db, "default_db", lambda: db.TuningDB(tmp_path / "tuning.sqlite3"))
    monkeypatch.setattr("zyx.cli.tune.default_db", lambda: db.TuningDB(tmp_path / "tuning.sqlite3"))
    assert main(["tune", "--show"]) == 0
    assert "0 tuning result(s)" in capsys.readouterr().out


def test_bench_runs_every_script_and_reports_the_failed_ones(capsys: pytest.CaptureFixture[str],
                                                             monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    """``zyx bench`` prints each bench script's ``run(quick)`` table; a script that raises is reported on stderr
    and makes the exit status 1 without stopping the scripts after it; a script without ``run`` is skipped."""
    from zyx import benchmarks

    monkeypatch.setattr(benchmarks, "bench_header", lambda: "# header")
    monkeypatch.setattr(zyx, "default_device", lambda: "a device")  # no OpenCL needed (the device-free tier)
    monkeypatch.setattr(benchmarks, "foundation", lambda dev, quick=False: [{"name": "ceiling", "quick": quick}])
    (tmp_path / "bench_a_broken.py").write_text("def run(quick=False):\n    raise RuntimeError('no torch here')\n")
    (tmp_path / "bench_b_diagnostic.py").write_text("def phases():\n    raise AssertionError('never called')\n")
    (tmp_path / "bench_c_good.py").write_text("def run(quick=False):\n    return [{'op': 'good', 'quick': quick}]\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert main(["bench", "--quick", "--bench-dir", str(tmp_path)]) == 1
    out, err = capsys.readouterr()
    assert "| ceiling | True |" in out and "## bench_c_good" in out and "| good | True |" in out
    assert "bench_b_diagnostic" not in out + err
    assert "bench_a_broken failed: RuntimeError: no torch here" in err and "1 script(s) failed: bench_a_broken" in err


def test_the_bench_scripts_take_quick() -> None:
    """Every bench/bench_*.py with a module-level ``run`` takes ``quick`` first (``zyx bench`` calls
    ``run(quick=...)``); diagnostic scripts name their entry point otherwise."""
    import ast
    from pathlib import Path

    scripts = sorted((Path(__file__).resolve().parents[2] / "bench").glob("bench_*.py"))
    assert scripts
    for script in scripts:
        runs = [f for f in ast.parse(script.read_text()).body if isinstance(f, ast.FunctionDef) and f.name == "run"]
        for fn in runs:
            assert fn.args.args and fn.args.args[0].arg == "quick", script.name
