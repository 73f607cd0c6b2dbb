"""Optimizers over parameters on several devices: each parameter's state lives on its device (made
there, and moved with it when ``Module.to`` moves it after a step), and the multi-tensor step runs one
launch group per device. Steps compared with ``torch.optim`` on the default device and another usable
one (``device_pair``, Oclgrind excepted).
"""
from __future__ import annotations

import numpy as np
import pytest

import zyx
import zyx.nn as nn
import zyx.optim

pytestmark = pytest.mark.needs_device


def _pair(torch, rng: np.random.Generator, sizes: tuple[int, ...]):
    """zyx Linear layers of ``sizes`` and PyTorch's with the same weights."""
    mine, theirs = [], []
    for n_in, n_out in zip(sizes, sizes[1:]):
        layer, ref = nn.Linear(n_in, n_out), torch.nn.Linear(n_in, n_out)
        w = (rng.standard_normal((n_out, n_in)) * 0.5).astype(np.float32)
        bias = (rng.standard_normal(n_out) * 0.1).astype(np.float32)
        with zyx.no_grad():
            layer.weight.copy_(zyx.tensor(w))
            layer.bias.copy_(zyx.tensor(bias))
        with torch.no_grad():
            ref.weight.copy_(torch.tensor(w))
            ref.bias.copy_(torch.tensor(bias))
        mine.append(layer)
        theirs.append(ref)
    return mine, theirs


def _forward(layers, x):
    for i, layer in enumerate(layers):
        x = layer(x)
        if i + 1 < len(layers):
            x = x.tanh()
    return (x ** 2).mean()


def _step_both(opt, ref_opt, layers, ref_layers, xs, device, torch) -> None:
    opt.zero_grad()
    ref_opt.zero_grad()
    loss = _forward(layers, zyx.tensor(xs, device=device))
    loss.backward()
    opt.step()
    ref = _forward(ref_layers, torch.tensor(xs))
    ref.backward()
    ref_opt.step()
    np.testing.assert_allclose(loss.item(), ref.item(), rtol=1e-5)


def _same(layers, ref_layers) -> None:
    for layer, ref in zip(layers, ref_layers):
        np.testing.assert_allclose(layer.weight.numpy(), ref.weight.detach().numpy(), rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(layer.bias.numpy(), ref.bias.detach().numpy(), rtol=1e-4, atol=1e-6)


def test_a_model_split_over_two_devices_steps_per_device(device_pair, torch) -> None:
    a, b = device_pair
    rng = np.random.default_rng(0)
    layers, ref_layers = _pair(torch, rng, (6, 8, 8, 3))
    layers[0].to(a)
    layers[1].to(b)
    layers[2].to(b)
    params = [p for layer in layers for p in layer.parameters()]
    opt = zyx.optim.Adam(params, lr=0.02, amsgrad=True)
    ref_opt = torch.optim.Adam([p for layer in ref_layers for p in layer.parameters()], lr=0.02, amsgrad=True)
    for _ in range(3):
        xs = rng.standard_normal((5, 6)).astype(np.float32)
        with zyx.profiler.profile() as prof:
            _step_both(opt, ref_opt, layers, ref_layers, xs, a, torch)
            for p in params:
                p.realize()
        steps = [e.device for e in prof.events() if e.kind == "kernel" and e.name.startswith("zyx_optim_adam")]
        assert sorted(steps) == sorted([a.id, b.id])  # one launch per device for all its parameters
        _same(layers, ref_layers)
    for p in params:
        assert p.grad.device is p.device
        assert {t.device for t in opt.state[p].values() if isinstance(t, zyx.Tensor)} == {p.device}
    assert layers[0].weight.device is a and layers[2].weight.device is b


def test_state_follows_its_parameter_to_another_device(device_pair, torch) -> None:
    a, b = device_pair
    rng = np.random.default_rng(1)
    layers, ref_layers = _pair(torch, rng, (4, 5, 2))
    for layer in layers:
        layer.to(b)
    opt = zyx.optim.AdamW([p for layer in layers for p in layer.parameters()], lr=0.05, weight_decay=0.1)
    ref_opt = torch.optim.AdamW([p for layer in ref_layers for p in layer.parameters()], lr=0.05,
                                weight_decay=0.1)
    for i in range(4):
        if i == 2:  # moved back after two steps: the state made on b moves at the next step
            layers[1].to(a)
        xs = rng.standard_normal((3, 4)).astype(np.float32)
        _step_both(opt, ref_opt, layers, ref_layers, xs, b, torch)
        _same(layers, ref_layers)
    for p in layers[1].parameters():
        assert p.device is a
        assert {t.device for t in opt.state[p].values() if isinstance(t, zyx.Tensor)} == {a}
    for p in layers[0].parameters():
        assert {t.device for t in opt.state[p].values() if isinstance(t, zyx.Tensor)} == {b}
