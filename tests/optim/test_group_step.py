"""The multi-tensor step (zyx.kernels.optimizer_step): one launch updates every parameter of a group that
steps alike, a few when the group exceeds one launch's arguments, one per dtype in a mixed group; against
torch.optim step for step, with the launches counted."""
from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

import zyx
import zyx.optim
from zyx.backend.program import BuildStats
from zyx.frontend.tape import plan_stats
from zyx.kernels import optimizer_step
from zyx.nn import functional as F

pytestmark = pytest.mark.needs_device

CONFIGS = [
    ("SGD", {"lr": 0.1}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "nesterov": True, "weight_decay": 0.01}),
    ("Adam", {"lr": 0.01, "weight_decay": 0.05}),
    ("AdamW", {"lr": 0.01, "amsgrad": True, "maximize": True}),
    ("RMSprop", {"lr": 0.01, "momentum": 0.5, "centered": True}),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.01}),
]
IDS = [f"{n}-{'-'.join(o)}" for n, o in CONFIGS]
# odd sizes: one element, a few, ragged work-groups, none; 2-D weights whose gradients are transposed views
# (two of one shape: they share the kernel's loop for that gradient read)
ODD_SHAPES = [(1,), (3,), (1000,), (4097,), (0,), (33, 65), (2, 0, 3), (65, 33), (33, 65)]
TRANSPOSED = (5, 7, 8)


def _pair(torch, shapes, seed=0, dtypes=None):
    rng = np.random.default_rng(seed)
    dtypes = dtypes or ["float32"] * len(shapes)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    zp = [zyx.from_numpy(a).cast(getattr(zyx, d)).detach().requires_grad_() for a, d in zip(arrays, dtypes)]
    tp = [torch.tensor(a, dtype=getattr(torch, d), requires_grad=True) for a, d in zip(arrays, dtypes)]
    return zp, tp


def _set_grads(torch, zp, tp, rng, transposed=()):
    for i, (z, t) in enumerate(zip(zp, tp)):
        g = rng.standard_normal(tuple(t.shape)).astype(np.float32)
        if i in transposed:  # the gradient a matmul leaves: a transposed view, read through its strides
            z.grad = zyx.from_numpy(np.ascontiguousarray(g.T)).cast(z.dtype).T
        else:
            z.grad = zyx.from_numpy(g).cast(z.dtype)
        t.grad = torch.tensor(g, dtype=t.dtype)


def _steps(zo, to, zp, tp, torch, steps, seed=1, transposed=(), check=None):
    """``steps`` steps of both optimizers on the same random gradients; the launches of each zyx step."""
    rng = np.random.default_rng(seed)
    launches = []
    for _ in range(steps):
        _set_grads(torch, zp, tp, rng, transposed)
        for z in zp:
            if z.grad is not None:
                z.grad.realize()
        before = zyx.kernel_count()
        zo.step()
        launches.append(zyx.kernel_count() - before)
        to.step()
        if check is not None:
            check()
    return launches


def _close(zp, tp, tol=None):
    for i, (z, t) in enumerate(zip(zp, tp)):
        want = t.detach().float().numpy()
        got = z.detach().cast(zyx.float32).numpy()
        rtol = tol or {"float16": 2e-3, "bfloat16": 1e-2, "float64": 1e-12}.get(z.dtype.name, 2e-5)
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol / 10, err_msg=f"parameter {i} ({z.dtype.name})")


@pytest.mark.parametrize("name,options", CONFIGS, ids=IDS)
def test_a_group_of_odd_sizes_steps_like_torch_in_one_launch(torch, name, options):
    zp, tp = _pair(torch, ODD_SHAPES)
    zo = getattr(zyx.optim, name)(zp, **options)
    to = getattr(torch.optim, name)(tp, **options, foreach=False)
    launches = _steps(zo, to, zp, tp, torch, 5, transposed=TRANSPOSED, check=lambda: _close(zp, tp))
    assert launches[1:] == [1] * 4, launches  # the first step also fills the new state tensors
    assert launches[0] >= 1


def test_mixed_dtypes_in_one_group_launch_once_per_dtype(torch):
    """PyTorch allows parameters of several dtypes in one group: each dtype steps in its own launch."""
    if not zyx.default_device().supports(zyx.float64):
        pytest.skip("the default device has no float64")
    dtypes = ["float32", "float64", "bfloat16", "float32", "float16", "float64"]
    zp, tp = _pair(torch, [(5, 7), (4,), (3, 3), (1,), (9,), (2, 2)], seed=2, dtypes=dtypes)
    zo = zyx.optim.Adam(zp, lr=0.01, weight_decay=0.1)
    to = torch.optim.Adam(tp, lr=0.01, weight_decay=0.1, foreach=False)
    launches = _steps(zo, to, zp, tp, torch, 3, check=lambda: _close(zp, tp))
    assert launches[1:] == [len(set(dtypes))] * 2, launches


@pytest.mark.parametrize("cap", [None, 4])
def test_a_group_beyond_one_launch_is_split(torch, monkeypatch, cap):
    """More parameters than one launch takes (the device's parameter size, or a cap of 4): a few launches."""
    if cap is not None:
        monkeypatch.setattr(optimizer_step, "MAX_TENSORS", cap)
    per = optimizer_step.per_launch(zyx.default_device(), 3, 6 * 4)  # 3 state buffers, 6 float scalars
    assert per == (cap or per) <= optimizer_step.MAX_TENSORS
    count = 2 * per + 3
    zp, tp = _pair(torch, [(i % 7 + 1, 3) for i in range(count)], seed=3)
    zo = zyx.optim.Adam(zp, lr=0.01, amsgrad=True)
    to = torch.optim.Adam(tp, lr=0.01, amsgrad=True, foreach=False)
    launches = _steps(zo, to, zp, tp, torch, 3, check=lambda: _close(zp, tp))
    assert launches[1:] == [math.ceil(count / per)] * 2, (launches, per)


def test_per_launch_keeps_the_arguments_within_the_device_limit():
    for limit, want in ((1024, 24), (4352, optimizer_step.MAX_TENSORS), (256, 5), (40, 1)):
        device = SimpleNamespace(info=SimpleNamespace(max_parameter_bytes=limit))
        got = optimizer_step.per_launch(device, 3, 24)  # 5 buffers of 8 bytes a tensor, 24 scalar bytes
        assert got == want, (limit, got)
        assert got == 1 or got * 40 + 24 + 8 <= limit


def test_parameters_at_different_step_counts_step_apart(torch):
    """A parameter without a gradient at first is at an earlier step than the rest of its group afterwards:
    its bias corrections differ, so it steps in a launch of its own, and both match PyTorch."""
    zp, tp = _pair(torch, [(6,), (5, 3), (4,)], seed=4)
    zo, to = zyx.optim.Adam(zp, lr=0.05), torch.optim.Adam(tp, lr=0.05, foreach=False)
    rng = np.random.default_rng(5)
    _set_grads(torch, zp[:2], tp[:2], rng)
    zo.step()
    to.step()
    launches = _steps(zo, to, zp, tp, torch, 3, seed=6, check=lambda: _close(zp, tp))
    assert launches[1:] == [2, 2], launches  # the first also fills the late parameter's new state
    assert [zo.state[p]["step"] for p in zp] == [4.0, 4.0, 3.0]


def test_a_non_contiguous_parameter_steps_like_torch(torch):
    rng = np.random.default_rng(7)
    a, b = rng.standard_normal((4, 6)).astype(np.float32), rng.standard_normal(5).astype(np.float32)
    zp = [zyx.from_numpy(a).T.detach().requires_grad_(), zyx.from_numpy(b).requires_grad_()]
    tp = [torch.tensor(a).T.detach().requires_grad_(), torch.tensor(b, requires_grad=True)]
    zo = zyx.optim.SGD(zp, lr=0.1, momentum=0.9)
    to = torch.optim.SGD(tp, lr=0.1, momentum=0.9, foreach=False)
    launches = _steps(zo, to, zp, tp, torch, 3, check=lambda: _close(zp, tp))
    assert launches[1:] == [1, 1]


def test_a_schedule_and_the_step_count_compile_nothing_new(torch):
    """The learning rate and the bias corrections are run-time arguments: after the first two steps (the
    first fills the state) a changing rate steps without a new program."""
    zp, tp = _pair(torch, [(8, 3), (8,), (2, 8)], seed=8)
    zo, to = zyx.optim.Adam(zp, lr=0.05), torch.optim.Adam(tp, lr=0.05, foreach=False)
    zs = zyx.optim.lr_scheduler.ExponentialLR(zo, gamma=0.7)
    ts = torch.optim.lr_scheduler.ExponentialLR(to, gamma=0.7)
    rng = np.random.default_rng(9)
    for step in range(6):
        if step == 2:
            programs = BuildStats.programs()
        _set_grads(torch, zp, tp, rng)
        zo.step()
        to.step()
        zs.step()
        ts.step()
        _close(zp, tp)
    assert BuildStats.programs() == programs


def test_a_jitted_training_step_replays_the_group_step():
    """A jitted step of a several-parameter model with Adam (one launch for its group) equals the eager one."""
    zyx.manual_seed(11)

    def model():
        return zyx.nn.Sequential(zyx.nn.Linear(6, 8), zyx.nn.Tanh(), zyx.nn.Linear(8, 3))

    m1, m2 = model(), model()
    m2.load_state_dict({k: v.numpy() for k, v in m1.state_dict().items()})
    o1, o2 = zyx.optim.Adam(m1.parameters(), lr=0.05), zyx.optim.Adam(m2.parameters(), lr=0.05)

    def step(m, opt, x, y):
        opt.zero_grad()
        loss = F.cross_entropy(m(x), y)
        loss.backward()
        opt.step()
        return loss

    jstep = zyx.jit(step)
    rng = np.random.default_rng(12)
    r0 = plan_stats["replays"]
    for i in range(6):
        x, y = zyx.from_numpy(rng.standard_normal((4, 6)).astype(np.float32)), zyx.tensor(rng.integers(0, 3, 4))
        want = step(m1, o1, x, y).item()
        assert jstep(m2, o2, x, y).item() == pytest.approx(want, rel=1e-5), i
    assert plan_stats["replays"] - r0 == 4  # the first call makes the state, the second captures again
    for (k, a), b in zip(m1.state_dict().items(), m2.state_dict().values()):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-5, atol=1e-6, err_msg=k)
