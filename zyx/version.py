"""The one place zyx's version is written (pyproject.toml reads it; caches key on it)."""

__version__ = "0.1.0"
