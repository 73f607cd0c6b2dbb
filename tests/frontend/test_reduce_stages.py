"""Reductions to few outputs over leading or strided axes, which run as two-stage reduces
(``ir.stages``): BatchNorm's statistics and their gradients, bias gradients, ``sum(dim=0)``.

Checked against NumPy/PyTorch on odd sizes, channels-last (strided) and other non-contiguous views,
empty tensors, 16-bit floats, integers and bools, the ops fused before and after the reduce; every
result has the same bits on a second run and on a replay, the scratch partials are freed, and the
kernel counts show when the split is chosen (two kernels) and when it is not (one).
"""
from __future__ import annotations

import numpy as np
import pytest

import zyx
from zyx.backend.launch import kernel_count
from zyx.graph import schedule

pytestmark = pytest.mark.needs_device
torch = pytest.importorskip("torch")

RNG = np.random.default_rng(30)


def _kernels(fn):
    """``fn()``'s result as NumPy and the kernels its realization launched."""
    before = kernel_count()
    out = fn().numpy()
    return out, kernel_count() - before


def _close(got: np.ndarray, want: np.ndarray, n: int) -> None:
    """A float32 sum of ``n`` elements: within a few rounding errors of a running sum's bound."""
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6 * np.sqrt(n) * max(1.0, float(np.abs(want).max())))


CASES = [  # (shape, dims, stored, kernels): stored "nhwc" keeps (N, H, W, C) in memory, viewed as (N, C, H, W)
    ((50176, 32), 0, None, 2),
    ((50177, 33), 0, None, 2),  # odd: no chunk count divides the reduce, its last elements go to stage 2
    ((64, 32, 28, 28), (0, 2, 3), "nhwc", 2),
    ((64, 32, 28, 28), (0, 2, 3), None, 1),  # NCHW: 32 channels each stream their own contiguous rows
    ((63, 17, 29, 31), (0, 2, 3), "nhwc", 2),
    ((3, 5, 70001), (0, 2), None, 2),
    ((1000003, 3), 0, None, 2),
]


def _input(shape, stored, dtype=np.float32):
    if stored == "nhwc":
        n, c, h, w = shape
        a = RNG.standard_normal((n, h, w, c)).astype(dtype)
        return zyx.tensor(a).permute(0, 3, 1, 2), torch.from_numpy(a).permute(0, 3, 1, 2)
    a = RNG.standard_normal(shape).astype(dtype)
    return zyx.tensor(a), torch.from_numpy(a)


@pytest.mark.parametrize("shape, dims, stored, kernels", CASES, ids=[f"{c[0]}-{c[1]}-{c[2]}" for c in CASES])
def test_few_output_reductions_match_torch(shape, dims, stored, kernels):
    x, t = _input(shape, stored)
    n = t.numel() // max(1, t.sum(dims).numel())
    t64 = t.double()
    got, launched = _kernels(lambda: x.sum(dims))
    _close(got, t64.sum(dims).numpy(), n)
    assert launched == kernels  # two: the two stages
    _close(x.mean(dims).numpy(), t64.mean(dims).numpy(), n)
    np.testing.assert_array_equal(x.amax(dims).numpy(), t.amax(dims).numpy())
    np.testing.assert_array_equal(x.amin(dims).numpy(), t.amin(dims).numpy())
    keep = x.sum(dims, keepdim=True)
    assert keep.shape == tuple(t.sum(dims, keepdim=True).shape)
    _close(keep.numpy(), t64.sum(dims, keepdim=True).numpy(), n)
    var = x.var(dims)  # a reduce of a fused (x - mean)^2: a pending mean read by the partials kernel
    np.testing.assert_allclose(var.numpy(), t64.var(dims).numpy(), rtol=1e-4)


def test_same_bits_every_run_and_on_replay():
    x, _ = _input((64, 32, 28, 28), "nhwc")
    hits = schedule.schedule_stats["hits"]
    runs = [x.sum((0, 2, 3)).numpy() for _ in range(3)]
    assert schedule.schedule_stats["hits"] > hits  # replays of the recorded two-stage schedule
    schedule.clear()
    runs.append(x.sum((0, 2, 3)).numpy())  # built again
    for r in runs[1:]:
        assert np.array_equal(r.view(np.uint32), runs[0].view(np.uint32))


def test_replay_reads_new_values_and_frees_the_partials():
    arrays = [RNG.standard_normal((50176, 32)).astype(np.float32) for _ in range(3)]
    zyx.tensor(arrays[0]).sum(0).numpy()  # the schedule is recorded here
    zyx.synchronize()
    start = zyx.memory_stats()["live_buffers"]
    for a in arrays:
        x = zyx.tensor(a)
        _close(x.sum(0).numpy(), a.astype(np.float64).sum(0), 50176)
        _close((x.sum(0) * 2.0).numpy(), 2 * a.astype(np.float64).sum(0), 50176)
        del x
    zyx.synchronize()
    assert zyx.memory_stats()["live_buffers"] == start


def test_jit_replays_the_two_stages():
    fn = zyx.jit(lambda a: a.sum(0) / 3.0 + a.amax(0))
    for _ in range(3):
        a = RNG.standard_normal((50176, 8)).astype(np.float32)
        got = fn(zyx.tensor(a)).numpy()
        _close(got, a.astype(np.float64).sum(0) / 3.0 + a.max(0), 50176)


def test_split_chosen_only_for_few_outputs():
    many = zyx.tensor(RNG.standard_normal((256, 1024)).astype(np.float32))  # a Linear's bias gradient
    got, kernels = _kernels(lambda: many.sum(0))
    assert kernels == 1
    _close(got, many.numpy().astype(np.float64).sum(0), 256)
    short = zyx.tensor(RNG.standard_normal((4000, 32)).astype(np.float32))  # too little work for a launch more
    assert _kernels(lambda: short.sum(0))[1] == 1
    few = zyx.tensor(RNG.standard_normal((65536, 8)).astype(np.float32))
    got, kernels = _kernels(lambda: (few * 2.0 - 1.0).relu().sum(0).sqrt())  # ops before and after fused
    assert kernels == 2
    want = np.sqrt(np.maximum(few.numpy().astype(np.float64) * 2 - 1, 0).sum(0))
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_non_contiguous_views():
    a = RNG.standard_normal((32, 100003)).astype(np.float32)
    x = zyx.tensor(a)
    _close(x.T.sum(0).numpy(), a.astype(np.float64).sum(1), 100003)  # a transposed (strided) reduce
    _close(x[:, ::3].T.sum(0).numpy(), a[:, ::3].astype(np.float64).sum(1), 33335)
    b = RNG.standard_normal((40001, 2, 8)).astype(np.float32)
    _close(zyx.tensor(b)[:, 1].sum(0).numpy(), b[:, 1].astype(np.float64).sum(0), 40001)


@pytest.mark.parametrize("dtype", [zyx.float16, zyx.bfloat16])
def test_16_bit_floats(dtype):
    tdt = torch.float16 if dtype is zyx.float16 else torch.bfloat16
    a = RNG.uniform(-1, 1, (70001, 5)).astype(np.float32)
    t = torch.from_numpy(a).to(tdt)
    x = zyx.tensor(a).cast(dtype)
    got, kernels = _kernels(lambda: x.sum(0).float())
    assert kernels == 2 and x.sum(0).dtype is dtype
    exact = t.double().sum(0)  # float32 partials: within one 16-bit step of the exact sum
    ulp = torch.finfo(tdt).eps * 2.0 ** torch.floor(torch.log2(exact.abs()))
    assert bool(((torch.from_numpy(got).double() - exact).abs() <= ulp).all()), (got, exact)
    assert np.array_equal(x.amax(0).float().numpy(), t.amax(0).float().numpy())  # 16-bit partials, exact


def test_integers_and_bools():
    a = RNG.integers(-(1 << 20), 1 << 20, (70001, 6)).astype(np.int32)
    x = zyx.tensor(a)
    s = x.sum(0)
    assert s.dtype is zyx.int64 and np.array_equal(s.numpy(), a.astype(np.int64).sum(0))
    assert np.array_equal(x.amax(0).numpy(), a.max(0)) and np.array_equal(x.amin(0).numpy(), a.min(0))
    b = RNG.random((70001, 6)) < 0.3
    assert np.array_equal(zyx.tensor(b).sum(0).numpy(), b.sum(0))


def test_empty():
    assert np.array_equal(zyx.zeros(0, 32).sum(0).numpy(), np.zeros(32, np.float32))
    assert zyx.zeros(50176, 0).sum(0).shape == (0,)
    assert zyx.zeros(0).sum().item() == 0.0


@pytest.mark.parametrize("stored", [None, "nhwc"])
def test_batch_norm_training_forward_backward(stored):
    x, t = _input((64, 32, 28, 28), stored)
    g = RNG.standard_normal((64, 32, 28, 28)).astype(np.float32)
    bn, tbn = zyx.nn.BatchNorm2d(32), torch.nn.BatchNorm2d(32)
    xr, tr = x.detach().requires_grad_(True), t.detach().requires_grad_(True)
    y, ty = bn(xr), tbn(tr)
    y.backward(zyx.tensor(g))
    ty.backward(torch.from_numpy(g))
    np.testing.assert_allclose(y.numpy(), ty.detach().numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(xr.grad.numpy(), tr.grad.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(bn.weight.grad.numpy(), tbn.weight.grad.numpy(), rtol=1e-4, atol=1e-2)
    np.testing.assert_allclose(bn.bias.grad.numpy(), tbn.bias.grad.numpy(), rtol=1e-4, atol=1e-2)
    np.testing.assert_allclose(bn.running_mean.numpy(), tbn.running_mean.numpy(), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(bn.running_var.numpy(), tbn.running_var.numpy(), rtol=1e-4)
