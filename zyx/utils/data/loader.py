"""``DataLoader``: batches of a dataset as zyx tensors, each batch gathered and uploaded once.

A ``TensorDataset`` of host arrays is indexed on the host and each of its tensors uploaded once per
batch; one of zyx tensors is gathered on its device (only the batch's indices cross). Other datasets go
through ``default_collate``: NumPy arrays and Python numbers stacked on the host and uploaded once, zyx
tensors stacked on the device, tuples, lists and dicts collated field by field (PyTorch's rules: Python
ints become int64, floats float64, bools bool).
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Callable

import numpy as np

from zyx.frontend.base import tensor_class
from zyx.frontend.contract_ops import stack
from zyx.frontend.creation import tensor
from zyx.utils.data.dataset import TensorDataset
from zyx.utils.data.sampler import RandomSampler, SequentialSampler


def default_collate(samples: Sequence[Any]) -> Any:
    """One batch from a list of samples (see the module docstring)."""
    first = samples[0]
    if isinstance(first, tensor_class()):
        return stack(list(samples), 0)
    if isinstance(first, dict):
        return {k: default_collate([s[k] for s in samples]) for k in first}
    if isinstance(first, (tuple, list)):
        if any(len(s) != len(first) for s in samples):
            raise ValueError("default_collate: the samples' tuples have different lengths")
        return [default_collate(list(field)) for field in zip(*samples)]
    if isinstance(first, (str, bytes)):
        return list(samples)
    if isinstance(first, bool):
        return tensor(np.asarray(samples, dtype=np.bool_))
    if isinstance(first, int):
        return tensor(np.asarray(samples, dtype=np.int64))
    if isinstance(first, float):
        return tensor(np.asarray(samples, dtype=np.float64))
    return tensor(np.stack([np.asarray(s) for s in samples]))


class DataLoader:
    """Batches of ``dataset`` (PyTorch's ``DataLoader`` arguments): ``batch_size`` samples each, the last
    one shorter unless ``drop_last``; in order, shuffled (``shuffle``; ``generator_seed`` makes the
    permutations repeatable), or in a ``sampler``'s order (a ``DistributedSampler`` for data parallelism);
    ``collate_fn`` turns a list of samples into a batch (default: ``default_collate``)."""

    def __init__(self, dataset: Any, batch_size: int = 1, shuffle: bool = False, drop_last: bool = False,
                 sampler: Iterable[int] | None = None, collate_fn: Callable[[list[Any]], Any] | None = None,
                 generator_seed: int | None = None) -> None:
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
            raise ValueError(f"DataLoader: batch_size must be a positive int, got {batch_size!r}")
        if sampler is not None and shuffle:
            raise ValueError("DataLoader: shuffle=True cannot be combined with a sampler (the sampler sets the order)")
        self.dataset = dataset
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.collate_fn = collate_fn
        self.sampler = sampler if sampler is not None else \
            RandomSampler(dataset, generator_seed) if shuffle else SequentialSampler(dataset)

    def __len__(self) -> int:
        n = len(self.sampler)  # type: ignore[arg-type]
        return n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)

    def __iter__(self) -> Iterator[Any]:
        batch: list[int] = []
        for i in self.sampler:
            batch.append(int(i))
            if len(batch) == self.batch_size:
                yield self._fetch(batch)
                batch = []
        if batch and not self.drop_last:
            yield self._fetch(batch)

    def _fetch(self, indices: list[int]) -> Any:
        if self.collate_fn is None and isinstance(self.dataset, TensorDataset):
            return self._tensor_batch(indices)
        samples = [self.dataset[i] for i in indices]
        return (self.collate_fn or default_collate)(samples)

    def _tensor_batch(self, indices: list[int]) -> list[Any]:
        host_index = np.asarray(indices, dtype=np.int64)
        on_device: dict[Any, Any] = {}  # the batch's indices, uploaded once per device
        out = []
        for t in self.dataset.tensors:
            if isinstance(t, tensor_class()):
                idx = on_device.get(t.device)
                if idx is None:
                    idx = on_device[t.device] = tensor(host_index, device=t.device)
                out.append(t.index_select(0, idx))
            else:
                out.append(tensor(np.ascontiguousarray(t[host_index])))
        return out
