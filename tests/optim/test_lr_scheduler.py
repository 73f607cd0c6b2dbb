"""zyx.optim.lr_scheduler against torch.optim.lr_scheduler: the lr sequences over 30 steps, state dicts."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import zyx
import zyx.optim
from zyx.optim import lr_scheduler as zl

CASES = [
    ("StepLR", {"step_size": 4, "gamma": 0.5}),
    ("MultiStepLR", {"milestones": [3, 7, 7, 20], "gamma": 0.3}),
    ("ExponentialLR", {"gamma": 0.9}),
    ("CosineAnnealingLR", {"T_max": 10, "eta_min": 0.001}),
    ("CosineAnnealingLR", {"T_max": 30}),
    ("LinearLR", {"start_factor": 0.2, "total_iters": 8}),
    ("LinearLR", {"start_factor": 1.0, "end_factor": 0.1, "total_iters": 12}),
    ("LambdaLR", {"lr_lambda": lambda e: 0.95**e / (1 + e)}),
    ("OneCycleLR", {"max_lr": 1.0, "total_steps": 31}),
    ("OneCycleLR", {"max_lr": [0.5, 2.0], "epochs": 3, "steps_per_epoch": 11, "anneal_strategy": "linear",
                    "three_phase": True, "pct_start": 0.25}),
]


def _optimizers(torch, name: str = "SGD"):
    """The same two parameter groups (own lrs) in zyx and torch."""
    za, zb = zyx.zeros(2, requires_grad=True), zyx.zeros(3, requires_grad=True)
    ta, tb = torch.zeros(2, requires_grad=True), torch.zeros(3, requires_grad=True)
    options = {"momentum": 0.9} if name == "SGD" else {}
    zo = getattr(zyx.optim, name)([{"params": [za]}, {"params": [zb], "lr": 0.05}], lr=0.1, **options)
    to = getattr(torch.optim, name)([{"params": [ta]}, {"params": [tb], "lr": 0.05}], lr=0.1, **options)
    return zo, to


def _run(zs, ts, zo, to, steps: int = 30) -> None:
    z, t = [zs.get_last_lr()], [ts.get_last_lr()]
    zm, tm = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns that its optimizer never stepped
        for _ in range(steps):
            zs.step()
            ts.step()
            z.append(zs.get_last_lr())
            t.append(ts.get_last_lr())
            zm.append([g.get("momentum", g.get("betas", (None,))[0]) for g in zo.param_groups])
            tm.append([g.get("momentum", g.get("betas", (None,))[0]) for g in to.param_groups])
    np.testing.assert_allclose(np.array(z), np.array(t), rtol=1e-15, atol=0)
    assert zm == tm  # OneCycleLR cycles momentum (SGD) or beta1 (Adam)


@pytest.mark.parametrize("optimizer", ["SGD", "Adam"])
@pytest.mark.parametrize("name,options", CASES, ids=[f"{n}{i}" for i, (n, _) in enumerate(CASES)])
def test_lr_sequence_matches_torch(torch, name, options, optimizer):
    zo, to = _optimizers(torch, optimizer)
    zs = getattr(zl, name)(zo, **options)
    ts = getattr(torch.optim.lr_scheduler, name)(to, **options)
    _run(zs, ts, zo, to)


def test_sequential_lr_matches_torch(torch):
    zo, to = _optimizers(torch)
    tl = torch.optim.lr_scheduler
    zs = zl.SequentialLR(zo, [zl.LinearLR(zo, 0.1, total_iters=5), zl.ExponentialLR(zo, 0.9),
                              zl.CosineAnnealingLR(zo, T_max=8)], milestones=[6, 15])
    ts = tl.SequentialLR(to, [tl.LinearLR(to, 0.1, total_iters=5), tl.ExponentialLR(to, 0.9),
                              tl.CosineAnnealingLR(to, T_max=8)], milestones=[6, 15])
    _run(zs, ts, zo, to)


def test_step_with_epoch_uses_the_closed_form(torch):
    zo, to = _optimizers(torch)
    zs, ts = zl.StepLR(zo, 3, 0.5), torch.optim.lr_scheduler.StepLR(to, 3, 0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        zs.step(7)
        ts.step(7)
    assert zs.get_last_lr() == ts.get_last_lr()


@pytest.mark.needs_device
def test_onecycle_past_total_steps_raises():
    opt = zyx.optim.SGD([zyx.zeros(1, requires_grad=True)], lr=0.1, momentum=0.9)
    sched = zl.OneCycleLR(opt, max_lr=1.0, total_steps=3)
    for _ in range(3):
        sched.step()
    with pytest.raises(ValueError, match="total steps is 3"):
        sched.step()


@pytest.mark.parametrize("name,options", CASES[:7] + CASES[8:], ids=[f"{n}{i}" for i, (n, _) in
                                                                     enumerate(CASES[:7] + CASES[8:])])
def test_state_dict_resumes_the_sequence(torch, name, options):
    zo, _ = _optimizers(torch)
    sched = getattr(zl, name)(zo, **options)
    for _ in range(9):
        sched.step()
    saved, groups = sched.state_dict(), [dict(g) for g in zo.param_groups]
    expected = []
    for _ in range(10):
        sched.step()
        expected.append(sched.get_last_lr())
    zo2, _ = _optimizers(torch)
    for g, s in zip(zo2.param_groups, groups):
        g.update({k: v for k, v in s.items() if k != "params"})
    resumed = getattr(zl, name)(zo2, **options, last_epoch=8) if name != "OneCycleLR" else \
        getattr(zl, name)(zo2, **options)
    resumed.load_state_dict(saved)
    for g, s in zip(zo2.param_groups, groups):
        g.update({k: v for k, v in s.items() if k != "params"})
    got = []
    for _ in range(10):
        resumed.step()
        got.append(resumed.get_last_lr())
    assert got == expected
