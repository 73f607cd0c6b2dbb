"""Full reductions (``x.sum()`` with no dim) through their fast path, and the one-element readback
(``item``/``float``) that reads the element straight into an array of its dtype."""
from __future__ import annotations

import numpy as np
import pytest

import zyx
from zyx.graph import schedule
from zyx.opt.heuristics import STAGE_CHUNK_MIN

torch = pytest.importorskip("torch")

N = 32 * STAGE_CHUNK_MIN  # long enough for a two-stage reduce


def _close(got: float, want: float, n: int) -> None:
    assert abs(got - want) <= 1e-5 * n ** 0.5 * max(1.0, abs(want)), (got, want)


@pytest.mark.parametrize("shape", [(N,), (64, N // 64), (2, 3, N // 6 + 1)], ids=str)
def test_full_sum_mean_max_min_match_torch(shape: tuple[int, ...]) -> None:
    a = np.random.default_rng(0).uniform(-1, 1, shape).astype(np.float32)
    x, t = zyx.tensor(a), torch.from_numpy(a)
    n = a.size
    _close(float(x.sum()), float(t.sum()), n)
    _close(float(x.mean()), float(t.mean()), n)
    assert float(x.max()) == float(t.max()) and float(x.min()) == float(t.min())
    assert x.sum().shape == () and x.sum(keepdim=True).shape == (1,) * len(shape)
    assert x.max(keepdim=True).shape == (1,) * len(shape)
    _close(x.sum(keepdim=True).numpy().reshape(()).item(), float(t.sum()), n)


def test_full_sum_of_views_and_other_dtypes() -> None:
    rng = np.random.default_rng(1)
    a = rng.uniform(-1, 1, (256, 1024)).astype(np.float32)
    x, t = zyx.tensor(a), torch.from_numpy(a)
    for zv, tv in ((x.T, t.T), (x[1:], t[1:]), (x[:, ::2], t[:, ::2]), (x[3:].flatten()[5:], t[3:].flatten()[5:])):
        _close(float(zv.sum()), float(tv.sum()), tv.numel())
    ints = rng.integers(-1000, 1000, N).astype(np.int32)
    zi = zyx.tensor(ints).sum()
    assert zi.dtype == zyx.int64 and zi.item() == int(ints.astype(np.int64).sum()) and type(zi.item()) is int
    halves = rng.uniform(-1, 1, N).astype(np.float16)
    zh = zyx.tensor(halves).sum()
    assert zh.dtype == zyx.float16
    want = float(torch.from_numpy(halves).sum())  # float32 partials in another order: one float16 ulp apart
    assert abs(zh.item() - want) <= 2 * float(np.spacing(np.float16(want)))
    b = rng.random(N) < 0.3
    assert zyx.tensor(b).sum().item() == int(b.sum())


def test_repeated_full_sum_replays_with_new_values_and_frees_buffers() -> None:
    """The second x.sum() of a structure replays the recorded schedule: it must read the new
    tensor's values (not the first one's) and hold no buffer after its result is dropped."""
    rng = np.random.default_rng(2)
    arrays = [rng.uniform(-1, 1, N).astype(np.float32) for _ in range(3)]
    float(zyx.tensor(arrays[0]).sum())  # the schedule is recorded here
    zyx.synchronize()
    start = zyx.memory_stats()["live_buffers"]
    hits = schedule.schedule_stats["hits"]
    for a in arrays:
        x = zyx.tensor(a)
        _close(float(x.sum()), float(a.astype(np.float64).sum()), N)
        _close(float(x.sum() * 2.0), 2 * float(a.astype(np.float64).sum()), N)
        del x
    assert schedule.schedule_stats["hits"] > hits
    zyx.synchronize()
    assert zyx.memory_stats()["live_buffers"] == start


def test_item_of_one_element_views() -> None:
    a = np.arange(24, dtype=np.float64).reshape(2, 3, 4) - 5.5
    x = zyx.tensor(a)
    assert x[1, 2, 3].item() == a[1, 2, 3]
    assert x[1:, 2:, 3:].item() == a[1, 2, 3]  # a (1, 1, 1) view at an offset
    assert x[1, 1, 1:2].expand(1).item() == a[1, 1, 1]
    assert x.permute(2, 0, 1)[3, 1, 0].item() == a[1, 0, 3]
    assert (x[0, 0, 0] * 2).item() == 2 * a[0, 0, 0]  # a pending value
    bf = zyx.tensor([1.5, -2.25], dtype=zyx.bfloat16)[1]
    assert bf.item() == -2.25 and type(bf.item()) is float
    with pytest.raises(zyx.ShapeError, match="exactly one element"):
        x[0, 0].item()


def test_item_raises_a_pending_device_error() -> None:
    """The one-element readback runs the device error checks: an integer division by zero raises."""
    z = zyx.tensor([7, 0], dtype=zyx.int32)
    with pytest.raises(zyx.DivisionByZeroError):
        (z[0] // z[1]).item()
    assert (z[0] // 2).item() == 3  # the flag was cleared by the check
