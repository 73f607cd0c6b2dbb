"""zyx.utils.data: datasets, the DataLoader's batches (order, sizes, one upload per batch) and the
DistributedSampler's split against PyTorch's."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import zyx
from zyx.utils.data import DataLoader, Dataset, DistributedSampler, TensorDataset, default_collate

pytestmark = pytest.mark.needs_device


def _uploads(fn: Any) -> tuple[Any, int]:
    with zyx.profiler.profile() as prof:
        out = fn()
    return out, sum(e.name == "host_to_device" for e in prof.events())


@pytest.mark.parametrize("n, batch, drop_last", [(10, 4, False), (10, 4, True), (8, 4, False), (3, 5, False),
                                                  (3, 5, True), (0, 2, False)])
def test_batches_in_order_with_the_last_one_shorter_or_dropped(n: int, batch: int, drop_last: bool) -> None:
    x = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
    y = np.arange(n) % 4
    loader = DataLoader(TensorDataset(x, y), batch_size=batch, drop_last=drop_last)
    batches = list(loader)
    assert len(batches) == len(loader) == (n // batch if drop_last else -(-n // batch))
    seen = 0
    for xb, yb in batches:
        assert xb.dtype == zyx.float32 and yb.dtype == zyx.int64
        np.testing.assert_array_equal(xb.numpy(), x[seen:seen + xb.shape[0]])
        np.testing.assert_array_equal(yb.numpy(), y[seen:seen + xb.shape[0]])
        seen += xb.shape[0]
    assert seen == (n // batch * batch if drop_last else n)


def test_one_upload_per_tensor_per_batch_and_device_datasets_gather_in_place() -> None:
    x = np.random.default_rng(0).standard_normal((50, 8)).astype(np.float32)
    y = np.arange(50)
    it = iter(DataLoader(TensorDataset(x, y), batch_size=16))
    (xb, yb), uploads = _uploads(lambda: next(it))
    assert uploads == 2
    dev = TensorDataset(zyx.tensor(x), zyx.tensor(y))
    it = iter(DataLoader(dev, batch_size=16, shuffle=True, generator_seed=3))
    (xb, yb), uploads = _uploads(lambda: next(it))
    assert uploads == 1  # the batch's indices only
    np.testing.assert_array_equal(xb.numpy(), x[yb.numpy()])


def test_shuffling_is_a_permutation_repeatable_by_seed_and_new_each_epoch() -> None:
    ds = TensorDataset(np.arange(37))

    def epoch(loader: DataLoader) -> list[int]:
        return [int(v) for (b,) in loader for v in b.numpy()]

    a, b = DataLoader(ds, 5, shuffle=True, generator_seed=7), DataLoader(ds, 5, shuffle=True, generator_seed=7)
    first, again = epoch(a), epoch(b)
    assert sorted(first) == list(range(37)) and first == again and first != list(range(37))
    assert epoch(a) != first  # the next epoch draws a new permutation


class Pairs(Dataset):
    def __len__(self) -> int:
        return 5

    def __getitem__(self, i: int) -> Any:
        return {"x": np.full((2,), i, np.float32), "n": i, "f": i / 2, "t": zyx.full((3,), float(i))}


def test_default_collate_follows_pytorch_types() -> None:
    (batch,) = list(DataLoader(Pairs(), batch_size=5))
    assert batch["x"].shape == (5, 2) and batch["n"].dtype == zyx.int64 and batch["f"].dtype == zyx.float64
    assert batch["t"].shape == (5, 3)
    np.testing.assert_array_equal(batch["t"].numpy()[:, 0], np.arange(5))
    assert default_collate([(1, True), (2, False)])[1].dtype == zyx.bool
    custom = DataLoader(Pairs(), batch_size=2, collate_fn=lambda s: [d["n"] for d in s])
    assert list(custom) == [[0, 1], [2, 3], [4]]


@pytest.mark.parametrize("n", [10, 11, 3, 1])
@pytest.mark.parametrize("replicas", [1, 2, 3, 4])
@pytest.mark.parametrize("shuffle", [True, False])
@pytest.mark.parametrize("drop_last", [True, False])
def test_distributed_sampler_splits_as_pytorch(n: int, replicas: int, shuffle: bool, drop_last: bool, torch) -> None:
    from torch.utils.data import DistributedSampler as TorchSampler

    data = list(range(n))
    for rank in range(replicas):
        ours = DistributedSampler(data, replicas, rank, shuffle=shuffle, seed=11, drop_last=drop_last)
        theirs = TorchSampler(data, replicas, rank, shuffle=shuffle, seed=11, drop_last=drop_last)
        for epoch in (0, 3):
            ours.set_epoch(epoch)
            theirs.set_epoch(epoch)
            assert list(ours) == list(theirs) and len(ours) == len(theirs)


def test_a_distributed_sampler_drives_a_loader_and_the_ranks_cover_the_data() -> None:
    x = np.arange(20)
    seen = []
    for rank in range(3):
        sampler = DistributedSampler(x, 3, rank, shuffle=False)
        seen += [int(v) for (b,) in DataLoader(TensorDataset(x), batch_size=4, sampler=sampler) for v in b.numpy()]
    assert set(seen) == set(range(20)) and len(seen) == 21  # padded to a multiple of the ranks (one repeat)


def test_bad_arguments_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    ds = TensorDataset(np.arange(4))
    with pytest.raises(ValueError, match="batch_size must be a positive int"):
        DataLoader(ds, batch_size=0)
    with pytest.raises(ValueError, match="shuffle=True cannot be combined"):
        DataLoader(ds, shuffle=True, sampler=[0, 1])
    with pytest.raises(ValueError, match="first dimensions differ"):
        TensorDataset(np.zeros(3), np.zeros(4))
    with pytest.raises(ValueError, match=r"rank must be in \[0, 2\)"):
        DistributedSampler(ds, 2, 2)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    monkeypatch.delenv("RANK", raising=False)
    with pytest.raises(ValueError, match="give num_replicas and rank"):
        DistributedSampler(ds)
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.setenv("RANK", "3")
    assert (DistributedSampler(ds).num_replicas, DistributedSampler(ds).rank) == (4, 3)
