"""Autotuning: beam search over kernel tunables and a persistent per-device database."""
from zyx.tune.db import Entry, TuningDB, default_db, size_class
from zyx.tune.search import Param, SearchResult, Space, Trial, beam_search
from zyx.tune.tuner import TuneStats, choose, run_search

__all__ = ["Entry", "Param", "SearchResult", "Space", "Trial", "TuneStats", "TuningDB", "beam_search", "choose",
           "default_db", "run_search", "size_class"]
