"""The tuning database: persistence across processes, corruption recovery, plain data."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from zyx.opt.db import Entry, TuningDB, size_class


def _entry(kernel: str = "k1", cfg: dict | None = None) -> Entry:
    return Entry("devsig", kernel, size_class((1000, 33)), cfg or {"local": 64, "vec": 4}, 1e-3, 2e-3, 0.5, 7, "test")


def test_size_class_buckets_nearby_sizes() -> None:
    assert size_class((1000,)) == size_class((1024,)) == "1024"
    assert size_class((1025,)) == "2048"
    assert size_class((0, 1, 3)) == "0x1x4"
    assert size_class(()) == "scalar"


def test_put_get_roundtrip_and_replace(tmp_path: Path) -> None:
    db = TuningDB(tmp_path / "t.sqlite3")
    assert db.get("devsig", "k1", size_class((1000, 33))) is None
    db.put(_entry())
    got = db.get("devsig", "k1", size_class((1000, 33)))
    assert got is not None and got.config == {"local": 64, "vec": 4} and got.candidates == 7
    db.put(_entry(cfg={"local": 128, "vec": 1}))
    assert db.get("devsig", "k1", size_class((1000, 33))).config == {"local": 128, "vec": 1}
    assert db.get("otherdevice", "k1", size_class((1000, 33))) is None  # foreign device: not used
    assert len(db.entries()) == 1 and db.clear() == 1 and db.entries() == []


def test_result_found_by_a_new_process(tmp_path: Path) -> None:
    path = tmp_path / "t.sqlite3"
    TuningDB(path).put(_entry("shared"))
    code = ("import sys; from zyx.opt.db import TuningDB, size_class\n"
            f"e = TuningDB({str(path)!r}).get('devsig', 'shared', size_class((1000, 33)))\n"
            "print(e.config['local'])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "64"


def test_corrupt_file_is_recovered(tmp_path: Path) -> None:
    path = tmp_path / "t.sqlite3"
    path.write_bytes(b"this is not a database" * 100)
    db = TuningDB(path)
    assert db.get("devsig", "k1", "x") is None  # no exception
    db.put(_entry())
    assert db.get("devsig", "k1", size_class((1000, 33))) is not None
    assert list(tmp_path.glob("t.sqlite3.corrupt-*")), "the corrupt file is kept aside for inspection"


def test_corrupted_while_open_is_recovered(tmp_path: Path) -> None:
    path = tmp_path / "t.sqlite3"
    db = TuningDB(path)
    db.put(_entry())
    db.close()
    with open(path, "r+b") as fh:
        fh.seek(0)
        fh.write(b"\xff" * 200)
    db2 = TuningDB(path)
    assert db2.get("devsig", "k1", size_class((1000, 33))) is None
    db2.put(_entry())
    assert db2.get("devsig", "k1", size_class((1000, 33))).config["local"] == 64


def test_bad_config_row_is_ignored_and_replaced(tmp_path: Path) -> None:
    db = TuningDB(tmp_path / "t.sqlite3")
    db.put(_entry())
    db._run("UPDATE tuning SET config='not json {'")
    assert db.get("devsig", "k1", size_class((1000, 33))) is None
    assert db.entries() == []


def test_stale_version_entry_is_ignored(tmp_path: Path) -> None:
    db = TuningDB(tmp_path / "t.sqlite3")
    db.put(_entry())
    db._run("UPDATE tuning SET zyx_version='0.0.0-old'")
    assert db.get("devsig", "k1", size_class((1000, 33))) is None
