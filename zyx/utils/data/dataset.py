"""Datasets: ``Dataset`` (PyTorch's protocol: ``__getitem__`` and ``__len__``) and ``TensorDataset``."""
from __future__ import annotations

from typing import Any

import numpy as np

from zyx.frontend.base import tensor_class


class Dataset:
    """A map-style dataset: ``dataset[i]`` is sample ``i`` of ``len(dataset)``; subclasses define both."""

    def __getitem__(self, index: int) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__")

    def __len__(self) -> int:
        raise NotImplementedError(f"{type(self).__name__} must define __len__")


class TensorDataset(Dataset):
    """Samples are rows of the given tensors or arrays (all of one length along dim 0): sample ``i`` is the
    tuple of their ``i``-th rows. NumPy arrays stay on the host (a DataLoader uploads each batch once); zyx
    tensors stay on their device (a batch is gathered there)."""

    def __init__(self, *tensors: Any) -> None:
        if not tensors:
            raise ValueError("TensorDataset needs at least one tensor or array")
        self.tensors = tuple(t if isinstance(t, tensor_class()) else np.asarray(t) for t in tensors)
        lengths = [int(t.shape[0]) if len(t.shape) else -1 for t in self.tensors]
        if min(lengths) < 0:
            raise ValueError("TensorDataset: every tensor needs a first dimension (a 0-d one has no rows)")
        if len(set(lengths)) != 1:
            raise ValueError(f"TensorDataset: the tensors' first dimensions differ: {lengths}")

    def __getitem__(self, index: int) -> tuple[Any, ...]:
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return int(self.tensors[0].shape[0])
