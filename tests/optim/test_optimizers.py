"""zyx.optim against torch.optim: 20 steps on a small MLP, step for step, and state dicts.

The MLP is built from zyx ops on leaf tensors (no nn.Module), the same in both libraries;
after every step each parameter must equal PyTorch's within float32 tolerance.
"""
from __future__ import annotations

import numpy as np
import pytest

import zyx
import zyx.optim

pytestmark = pytest.mark.needs_device

SHAPES = {"w1": (8, 6), "b1": (8,), "w2": (3, 8), "b2": (3,)}

CONFIGS = [
    ("SGD", {"lr": 0.1}),
    ("SGD", {"lr": 0.05, "momentum": 0.9}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "dampening": 0.3, "weight_decay": 0.01}),
    ("SGD", {"lr": 0.05, "momentum": 0.8, "nesterov": True, "weight_decay": 0.02}),
    ("SGD", {"lr": 0.05, "maximize": True}),
    ("Adam", {"lr": 0.01}),
    ("Adam", {"lr": 0.01, "weight_decay": 0.05, "amsgrad": True}),
    ("Adam", {"lr": 0.02, "betas": (0.8, 0.99), "eps": 1e-6}),
    ("AdamW", {"lr": 0.01}),
    ("AdamW", {"lr": 0.01, "weight_decay": 0.1, "amsgrad": True}),
    ("RMSprop", {"lr": 0.01}),
    ("RMSprop", {"lr": 0.01, "momentum": 0.9, "centered": True, "weight_decay": 0.01}),
    ("RMSprop", {"lr": 0.005, "alpha": 0.9, "centered": True}),
    ("Adagrad", {"lr": 0.1}),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.01, "weight_decay": 0.01, "initial_accumulator_value": 0.1}),
]


def _data(seed: int = 0) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    params = {k: (rng.standard_normal(s) * 0.5).astype(np.float32) for k, s in SHAPES.items()}
    x = rng.standard_normal((16, 6)).astype(np.float32)
    y = rng.standard_normal((16, 3)).astype(np.float32)
    return params, x, y


def _loss(p: dict, x, y):
    """The same two-layer MLP and mean squared error in either library."""
    h = (x @ p["w1"].T + p["b1"]).tanh()
    return ((h @ p["w2"].T + p["b2"] - y) ** 2).mean()


def _zyx_model(params):
    return {k: zyx.from_numpy(v.copy()).requires_grad_() for k, v in params.items()}


def _torch_model(torch, params):
    return {k: torch.tensor(v.copy(), requires_grad=True) for k, v in params.items()}


def _check_close(zp: dict, tp: dict, step: int) -> None:
    for k in zp:
        np.testing.assert_allclose(zp[k].numpy(), tp[k].detach().numpy(), rtol=2e-5, atol=2e-6,
                                   err_msg=f"{k} after step {step}")


def _step_both(zo, to, zp, tp, zx, zy, tx, ty) -> None:
    zo.zero_grad()
    to.zero_grad()
    _loss(zp, zx, zy).backward()
    _loss(tp, tx, ty).backward()
    zo.step()
    to.step()


@pytest.mark.parametrize("name,options", CONFIGS, ids=[f"{n}-{'-'.join(o)}" for n, o in CONFIGS])
def test_twenty_steps_match_torch(torch, name, options):
    params, x, y = _data()
    zp, tp = _zyx_model(params), _torch_model(torch, params)
    zo = getattr(zyx.optim, name)(list(zp.values()), **options)
    to = getattr(torch.optim, name)(list(tp.values()), **options)
    zx, zy, tx, ty = zyx.from_numpy(x), zyx.from_numpy(y), torch.from_numpy(x), torch.from_numpy(y)
    for step in range(20):
        _step_both(zo, to, zp, tp, zx, zy, tx, ty)
        _check_close(zp, tp, step)
    for k in zp:  # the parameters stay leaves that require grad, the same objects the optimizer holds
        assert zp[k].requires_grad and zp[k].is_leaf
    # the optimizer state too (momentum buffers, moments, sums)
    zs, ts = zo.state_dict()["state"], to.state_dict()["state"]
    assert sorted(zs) == sorted(ts)
    for i in ts:
        assert set(zs[i]) == set(ts[i]), (zs[i].keys(), ts[i].keys())
        for key, tv in ts[i].items():
            zv = zs[i][key]
            if key == "step":
                assert zv == float(tv)
            elif tv is None:
                assert zv is None
            else:
                scale = float(np.abs(tv.numpy()).max())  # state sums a step's rounding over many elements
                np.testing.assert_allclose(zv.numpy(), tv.numpy(), rtol=2e-5, atol=2e-5 * scale,
                                           err_msg=f"{key} of {i}")


def test_param_groups_with_own_options(torch):
    params, x, y = _data(1)
    zp, tp = _zyx_model(params), _torch_model(torch, params)
    zo = zyx.optim.SGD([{"params": [zp["w1"], zp["b1"]]}, {"params": [zp["w2"], zp["b2"]], "lr": 0.01}],
                       lr=0.1, momentum=0.5)
    to = torch.optim.SGD([{"params": [tp["w1"], tp["b1"]]}, {"params": [tp["w2"], tp["b2"]], "lr": 0.01}],
                         lr=0.1, momentum=0.5)
    assert [g["lr"] for g in zo.param_groups] == [0.1, 0.01]
    assert {k for k in zo.param_groups[1] if k != "params"} == {k for k in to.param_groups[1] if k != "params"} - {
        "foreach", "differentiable", "fused"}
    zx, zy, tx, ty = zyx.from_numpy(x), zyx.from_numpy(y), torch.from_numpy(x), torch.from_numpy(y)
    for step in range(5):
        _step_both(zo, to, zp, tp, zx, zy, tx, ty)
        _check_close(zp, tp, step)


@pytest.mark.parametrize("name,options", [
    ("SGD", {"lr": 0.05, "momentum": 0.9}), ("Adam", {"lr": 0.01, "amsgrad": True}),
    ("RMSprop", {"momentum": 0.5, "centered": True}), ("Adagrad", {}),
])
def test_state_dict_round_trip_continues_identically(name, options, tmp_path):
    params, x, y = _data(2)
    zx, zy = zyx.from_numpy(x), zyx.from_numpy(y)

    def run(p, opt, steps):
        for _ in range(steps):
            opt.zero_grad()
            _loss(p, zx, zy).backward()
            opt.step()

    a = _zyx_model(params)
    opt_a = getattr(zyx.optim, name)(list(a.values()), **options)
    run(a, opt_a, 10)
    # a second model resumes from a's parameters and optimizer state, through a file
    zyx.save({"model": a, "optim": opt_a.state_dict()}, tmp_path / "ckpt.safetensors")
    loaded = zyx.load(tmp_path / "ckpt.safetensors")
    b = {k: v.requires_grad_() for k, v in loaded["model"].items()}
    opt_b = getattr(zyx.optim, name)(list(b.values()), **options)
    opt_b.load_state_dict(loaded["optim"])
    run(a, opt_a, 10)
    run(b, opt_b, 10)
    for k in a:
        np.testing.assert_array_equal(a[k].numpy(), b[k].numpy(), err_msg=k)


def test_zero_grad_and_params_without_grad():
    w = zyx.ones(3, requires_grad=True)
    unused = zyx.ones(2, requires_grad=True)
    opt = zyx.optim.SGD([w, unused], lr=0.5)
    (w * w).sum().backward()
    opt.step()
    np.testing.assert_allclose(w.numpy(), [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(unused.numpy(), [1.0, 1.0])  # no gradient: untouched
    opt.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(w.grad.numpy(), [0.0, 0.0, 0.0])
    opt.zero_grad()
    assert w.grad is None


def test_backward_through_a_graph_saved_before_the_step_raises():
    w = zyx.ones(3, requires_grad=True)
    opt = zyx.optim.SGD([w], lr=0.1)
    y = (w * w).sum()
    y.backward(retain_graph=True)
    opt.step()
    with pytest.raises(zyx.AutogradError, match="in-place"):
        y.backward()


def test_the_step_writes_in_place_and_views_see_it():
    """As in PyTorch: the parameter's storage is updated, so a view taken before the step sees the new
    values; the loaded or saved state is the optimizer's own."""
    w = zyx.ones(4, requires_grad=True)
    before = w.detach()[1:]
    opt = zyx.optim.SGD([w], lr=1.0)
    w.sum().backward()
    opt.step()
    np.testing.assert_array_equal(w.numpy(), [0, 0, 0, 0])
    np.testing.assert_array_equal(before.numpy(), [0, 0, 0])


def test_loaded_state_is_copied():
    w = zyx.ones(3, requires_grad=True)
    opt = zyx.optim.SGD([w], lr=0.5, momentum=0.9)
    buf = zyx.full((3,), 2.0)
    opt.load_state_dict({"state": {0: {"momentum_buffer": buf}}, "param_groups": opt.state_dict()["param_groups"]})
    w.sum().backward()
    opt.step()
    np.testing.assert_array_equal(buf.numpy(), [2.0, 2.0, 2.0])  # the caller's tensor is left alone
    np.testing.assert_allclose(opt.state[w]["momentum_buffer"].numpy(), [2.8, 2.8, 2.8], rtol=1e-6)
    np.testing.assert_allclose(w.numpy(), [-0.4, -0.4, -0.4], rtol=1e-6)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float64"])
def test_other_float_dtypes_step_like_torch(torch, dtype):
    """16-bit parameters round every operation of the formula as PyTorch's op-by-op step does; a
    transposed (non-contiguous) gradient is read through its strides."""
    rng = np.random.default_rng(7)
    w0 = rng.standard_normal((5, 7)).astype(np.float32)
    g0 = rng.standard_normal((7, 5)).astype(np.float32)
    tdt = getattr(torch, dtype)
    zw = zyx.from_numpy(w0).cast(getattr(zyx, dtype)).detach().requires_grad_()
    tw = torch.tensor(w0, dtype=tdt, requires_grad=True)
    zo = zyx.optim.Adam([zw], lr=0.01, weight_decay=0.1)
    to = torch.optim.Adam([tw], lr=0.01, weight_decay=0.1, foreach=False)
    for step in range(3):
        zw.grad = (zyx.from_numpy(g0 * (step + 1)).cast(getattr(zyx, dtype))).T
        tw.grad = torch.tensor(g0 * (step + 1), dtype=tdt).T
        zo.step()
        to.step()
    got = zw.cast(zyx.float32).numpy()
    want = tw.detach().float().numpy()
    tol = {"float16": 2e-3, "bfloat16": 1e-2, "float64": 1e-12}[dtype]
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_closure_returns_the_loss():
    w = zyx.ones(2, requires_grad=True)
    opt = zyx.optim.Adam([w], lr=0.1)

    def closure():
        opt.zero_grad()
        loss = (w * w).sum()
        loss.backward()
        return loss

    assert float(opt.step(closure)) == 2.0


@pytest.mark.parametrize("name,options,states", [
    ("SGD", {"lr": 0.1}, 0), ("SGD", {"lr": 0.1, "momentum": 0.9, "weight_decay": 0.1}, 1),
    ("Adam", {}, 2), ("Adam", {"amsgrad": True}, 3), ("AdamW", {}, 2),
    ("RMSprop", {}, 1), ("RMSprop", {"momentum": 0.9, "centered": True}, 3), ("Adagrad", {}, 1),
])
def test_kernels_per_step(name, options, states):
    """One kernel per parameter group and step updates every parameter and all its state
    (tests/optim/test_group_step.py: groups split by dtype and launch size); the first step also
    fills the new state tensors (at most one kernel each)."""
    params, x, y = _data(3)
    p = _zyx_model(params)
    opt = getattr(zyx.optim, name)(list(p.values()), **options)
    zx, zy = zyx.from_numpy(x), zyx.from_numpy(y)
    for step in range(3):
        opt.zero_grad()
        _loss(p, zx, zy).backward()
        for t in p.values():
            t.grad.realize()
        before = zyx.kernel_count()
        opt.step()
        launched = zyx.kernel_count() - before
        if step == 0:
            assert 1 <= launched <= 1 + len(p) * states, launched
        else:
            assert launched == 1, (step, launched)


def test_bad_options_raise():
    w = zyx.ones(2, requires_grad=True)
    with pytest.raises(ValueError, match="learning rate"):
        zyx.optim.SGD([w], lr=-1)
    with pytest.raises(ValueError, match="beta parameter at index 1"):
        zyx.optim.Adam([w], betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="Nesterov"):
        zyx.optim.SGD([w], lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="empty"):
        zyx.optim.Adam([])
    with pytest.raises(ValueError, match="twice"):
        zyx.optim.Adam([w, w])
    with pytest.raises(ValueError, match="leaf"):
        zyx.optim.Adam([w * 2])


@pytest.mark.parametrize("name", ["SGD", "Adam", "RMSprop"])
def test_steps_hold_no_extra_buffers(name):
    """Steps write in place: live buffers stay flat, and dropping the model and optimizer returns them
    to the start."""
    import gc

    gc.collect()
    start = zyx.memory_stats()["live_buffers"]
    params, x, y = _data(4)
    p = _zyx_model(params)
    opt = getattr(zyx.optim, name)(list(p.values()), lr=0.01, **({"momentum": 0.9} if name != "Adam" else {}))
    zx, zy = zyx.from_numpy(x), zyx.from_numpy(y)
    counts = []
    for _ in range(6):
        opt.zero_grad()
        _loss(p, zx, zy).backward()
        opt.step()
        counts.append(zyx.memory_stats()["live_buffers"])
    assert counts[2:] == [counts[2]] * 4, counts
    del p, opt, zx, zy
    gc.collect()
    assert zyx.memory_stats()["live_buffers"] == start


def test_load_a_torch_optimizer_state(torch):
    """torch.optim's state_dict, its tensors as NumPy arrays, resumes in zyx as it resumes in torch."""
    params, x, y = _data(5)
    tp = _torch_model(torch, params)
    to = torch.optim.Adam(list(tp.values()), lr=0.01, amsgrad=True)
    tx, ty, zx, zy = torch.from_numpy(x), torch.from_numpy(y), zyx.from_numpy(x), zyx.from_numpy(y)
    for _ in range(5):
        to.zero_grad()
        _loss(tp, tx, ty).backward()
        to.step()
    sd = to.state_dict()
    sd = {"state": {i: {k: v.numpy() for k, v in s.items()} for i, s in sd["state"].items()},
          "param_groups": sd["param_groups"]}
    zp = {k: zyx.from_numpy(v.detach().numpy().copy()).requires_grad_() for k, v in tp.items()}
    zo = zyx.optim.Adam(list(zp.values()), lr=0.01, amsgrad=True)
    zo.load_state_dict(sd)
    assert zo.state[zp["w1"]]["step"] == 5.0
    for step in range(5):
        _step_both(zo, to, zp, tp, zx, zy, tx, ty)
        _check_close(zp, tp, step)


@pytest.mark.parametrize("name", ["Adagrad", "Adam"])
def test_add_param_group_after_construction_steps_like_torch(torch, name):
    """A group added later gets its state as in PyTorch (Adagrad creates it eagerly: was a KeyError)."""
    params, x, y = _data(2)
    zp, tp = _zyx_model(params), _torch_model(torch, params)
    options = {"lr": 0.05, "initial_accumulator_value": 0.2} if name == "Adagrad" else {"lr": 0.01}
    zo = getattr(zyx.optim, name)([zp["w1"], zp["b1"]], **options)
    to = getattr(torch.optim, name)([tp["w1"], tp["b1"]], **options)
    zo.add_param_group({"params": [zp["w2"], zp["b2"]], "lr": 0.02})
    to.add_param_group({"params": [tp["w2"], tp["b2"]], "lr": 0.02})
    zx, zy, tx, ty = zyx.from_numpy(x), zyx.from_numpy(y), torch.from_numpy(x), torch.from_numpy(y)
    for step in range(3):
        _step_both(zo, to, zp, tp, zx, zy, tx, ty)
        _check_close(zp, tp, step)
