"""The persistent tuning database: best configurations per device, kernel and size class.

One SQLite file under ``ZYX_CACHE_DIR`` (WAL mode: safe under concurrent processes).
Rows hold plain data only (JSON configs, numbers): a cache file can never run code.
An entry is used only when its device signature, kernel key, size class and zyx
version all match; a corrupt file is moved aside and recreated, never fatal.
"""
from __future__ import annotations

import json
import math
import sqlite3
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zyx import settings
from zyx.backend.program import ZYX_VERSION

_SCHEMA = """
CREATE TABLE IF NOT EXISTS tuning (
    device TEXT NOT NULL,
    kernel TEXT NOT NULL,
    size_class TEXT NOT NULL,
    zyx_version TEXT NOT NULL,
    config TEXT NOT NULL,
    tuned_s REAL NOT NULL,
    baseline_s REAL NOT NULL,
    search_s REAL NOT NULL,
    candidates INTEGER NOT NULL,
    label TEXT NOT NULL DEFAULT '',
    created REAL NOT NULL,
    PRIMARY KEY (device, kernel, size_class)
)
"""


def size_class(sizes: Iterable[int]) -> str:
    """Bucket problem sizes so nearby sizes share a result: each size to its power-of-two octave."""
    return "x".join(str(0 if s <= 0 else 1 << max(0, math.ceil(math.log2(s)))) for s in sizes) or "scalar"


@dataclass(frozen=True)
class Entry:
    """One tuning result."""

    device: str
    kernel: str
    size_class: str
    config: dict[str, Any]
    tuned_s: float
    baseline_s: float
    search_s: float
    candidates: int
    label: str


class TuningDB:
    """Tuning results stored in ``path`` (default ``ZYX_CACHE_DIR/tuning.sqlite3``)."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = Path(path) if path is not None else settings.cache_dir() / "tuning.sqlite3"
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None

    # -- connection with corruption recovery --------------------------------------
    def _connect(self) -> sqlite3.Connection:
        if self._conn is not None:
            return self._conn
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            conn = self._open()
        except sqlite3.DatabaseError:
            self._move_aside()
            conn = self._open()
        self._conn = conn
        return conn

    def _open(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=30, check_same_thread=False)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(_SCHEMA)
            conn.execute("SELECT count(*) FROM tuning").fetchone()
            conn.commit()
        except sqlite3.DatabaseError:
            conn.close()
            raise
        return conn

    def _move_aside(self) -> None:
        for suffix in ("", "-wal", "-shm"):
            p = Path(str(self.path) + suffix)
            if p.exists():
                try:
                    p.replace(Path(f"{p}.corrupt-{int(time.time())}"))
                except OSError:
                    p.unlink(missing_ok=True)

    def _run(self, sql: str, args: tuple = ()) -> list[tuple]:
        with self._lock:
            try:
                conn = self._connect()
                rows = conn.execute(sql, args).fetchall()
                conn.commit()
                return rows
            except sqlite3.DatabaseError:
                if self._conn is not None:
                    self._conn.close()
                self._conn = None
                self._move_aside()
                conn = self._connect()
                rows = conn.execute(sql, args).fetchall()
                conn.commit()
                return rows

    # -- public API ---------------------------------------------------------------
    def get(self, device: str, kernel: str, size_cls: str) -> Entry | None:
        """The stored result for this device, kernel and size class, or None (stale/bad rows ignored)."""
        rows = self._run("SELECT config, tuned_s, baseline_s, search_s, candidates, label, zyx_version "
                         "FROM tuning WHERE device=? AND kernel=? AND size_class=?", (device, kernel, size_cls))
        if not rows:
            return None
        config_text, tuned, base, search, cands, label, version = rows[0]
        if version != ZYX_VERSION:
            return None
        try:
            config = json.loads(config_text)
        except (TypeError, ValueError):
            config = None
        if not isinstance(config, dict):
            self.delete(device, kernel, size_cls)
            return None
        return Entry(device, kernel, size_cls, config, tuned, base, search, cands, label)

    def put(self, entry: Entry) -> None:
        """Store (or replace) a result."""
        self._run("INSERT OR REPLACE INTO tuning VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                  (entry.device, entry.kernel, entry.size_class, ZYX_VERSION,
                   json.dumps(entry.config, sort_keys=True), float(entry.tuned_s), float(entry.baseline_s),
                   float(entry.search_s), int(entry.candidates), entry.label, time.time()))

    def delete(self, device: str, kernel: str, size_cls: str) -> None:
        """Remove one entry."""
        self._run("DELETE FROM tuning WHERE device=? AND kernel=? AND size_class=?", (device, kernel, size_cls))

    def entries(self, device: str | None = None) -> list[Entry]:
        """Every usable entry (of one device signature, if given)."""
        sql = "SELECT device, kernel, size_class, config, tuned_s, baseline_s, search_s, candidates, label " \
              "FROM tuning WHERE zyx_version=?"
        args: tuple = (ZYX_VERSION,)
        if device is not None:
            sql += " AND device=?"
            args += (device,)
        out = []
        for dev, kern, sc, cfg, t, b, s, c, label in self._run(sql + " ORDER BY label, kernel", args):
            try:
                config = json.loads(cfg)
            except (TypeError, ValueError):
                continue
            if isinstance(config, dict):
                out.append(Entry(dev, kern, sc, config, t, b, s, c, label))
        return out

    def clear(self, device: str | None = None) -> int:
        """Remove every entry (of one device signature, if given); returns how many."""
        before = len(self._run("SELECT kernel FROM tuning" + (" WHERE device=?" if device else ""),
                               (device,) if device else ()))
        self._run("DELETE FROM tuning" + (" WHERE device=?" if device else ""), (device,) if device else ())
        return before

    def close(self) -> None:
        """Close the connection (a later call reopens it)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


_default_db: TuningDB | None = None


def default_db() -> TuningDB:
    """The process-wide database at the configured cache directory."""
    global _default_db
    path = settings.cache_dir() / "tuning.sqlite3"
    if _default_db is None or _default_db.path != path:
        _default_db = TuningDB(path)
    return _default_db
