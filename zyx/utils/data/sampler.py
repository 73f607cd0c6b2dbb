"""Samplers: which dataset indices a DataLoader takes, in which order.

``DistributedSampler`` gives each of ``num_replicas`` ranks its share of the indices exactly as PyTorch's
does for the same seed and epoch (the permutation comes from ``torch.randperm`` seeded with
``seed + epoch``, so ranks running zyx and ranks running PyTorch read the same samples); it needs PyTorch
(the ``distributed`` extra) only when it shuffles.
"""
from __future__ import annotations

import math
import os
from collections.abc import Iterator, Sized

import numpy as np


class SequentialSampler:
    """0, 1, ..., n - 1."""

    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler:
    """A permutation of the indices, a new one each pass, from NumPy's generator seeded with ``seed``
    (None: fresh entropy)."""

    def __init__(self, data_source: Sized, seed: int | None = None) -> None:
        self.data_source = data_source
        self._rng = np.random.default_rng(seed)

    def __iter__(self) -> Iterator[int]:
        return iter(self._rng.permutation(len(self.data_source)).tolist())

    def __len__(self) -> int:
        return len(self.data_source)


def _world(num_replicas: int | None, rank: int | None) -> tuple[int, int]:
    """The replica count and this rank: as given, else the initialized process group's, else the
    ``WORLD_SIZE``/``RANK`` that torchrun sets."""
    if num_replicas is None or rank is None:
        try:
            import torch.distributed as dist

            initialized = dist.is_available() and dist.is_initialized()
        except ImportError:
            initialized = False
        if initialized:
            num_replicas = dist.get_world_size() if num_replicas is None else num_replicas
            rank = dist.get_rank() if rank is None else rank
        elif "WORLD_SIZE" in os.environ and "RANK" in os.environ:
            num_replicas = int(os.environ["WORLD_SIZE"]) if num_replicas is None else num_replicas
            rank = int(os.environ["RANK"]) if rank is None else rank
        else:
            raise ValueError("DistributedSampler: give num_replicas and rank, or initialize a process group "
                             "(zyx.distributed / torch.distributed), or run under torchrun")
    if num_replicas < 1 or not 0 <= rank < num_replicas:
        raise ValueError(f"DistributedSampler: rank must be in [0, {num_replicas}), got {rank} "
                         f"(num_replicas={num_replicas})")
    return num_replicas, rank


class DistributedSampler:
    """This rank's indices of ``dataset`` among ``num_replicas`` ranks, as ``torch.utils.data.DistributedSampler``
    splits them: shuffled by ``seed + epoch`` (``set_epoch``), padded by repeating indices to a multiple of
    the replica count, or cut to one (``drop_last``), then every ``num_replicas``-th index from ``rank``."""

    def __init__(self, dataset: Sized, num_replicas: int | None = None, rank: int | None = None,
                 shuffle: bool = True, seed: int = 0, drop_last: bool = False) -> None:
        self.dataset = dataset
        self.num_replicas, self.rank = _world(num_replicas, rank)
        self.shuffle, self.seed, self.drop_last = shuffle, seed, drop_last
        self.epoch = 0
        n = len(dataset)
        if drop_last and n % self.num_replicas:
            self.num_samples = math.ceil((n - self.num_replicas) / self.num_replicas)
        else:
            self.num_samples = math.ceil(n / self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas

    def set_epoch(self, epoch: int) -> None:
        """The epoch the next pass shuffles for (every rank must set the same one)."""
        self.epoch = epoch

    def _order(self) -> list[int]:
        n = len(self.dataset)
        if not self.shuffle:
            return list(range(n))
        try:
            import torch
        except ImportError:
            raise ImportError("DistributedSampler(shuffle=True) draws PyTorch's permutation (so ranks agree "
                              "with PyTorch's sampler): pip install 'zyx[distributed]'") from None
        g = torch.Generator()
        g.manual_seed(self.seed + self.epoch)
        return torch.randperm(n, generator=g).tolist()

    def __iter__(self) -> Iterator[int]:
        indices = self._order()
        if not self.drop_last:
            pad = self.total_size - len(indices)
            if pad > 0 and indices:
                indices += (indices * math.ceil(pad / len(indices)))[:pad]
        else:
            indices = indices[:self.total_size]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples
