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
