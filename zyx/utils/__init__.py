"""Utilities with PyTorch's names: ``zyx.utils.data`` (datasets, samplers, the DataLoader)."""
from __future__ import annotations

from zyx.utils import data

__all__ = ["data"]
