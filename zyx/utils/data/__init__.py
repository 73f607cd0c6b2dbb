"""Data loading with PyTorch's names: ``Dataset``, ``TensorDataset``, ``DataLoader`` and the samplers
(``DistributedSampler`` splits indices across ranks as PyTorch's does)."""
from __future__ import annotations

from zyx.utils.data.dataset import Dataset, TensorDataset
from zyx.utils.data.loader import DataLoader, default_collate
from zyx.utils.data.sampler import DistributedSampler, RandomSampler, SequentialSampler

__all__ = ["DataLoader", "Dataset", "DistributedSampler", "RandomSampler", "SequentialSampler", "TensorDataset",
           "default_collate"]
