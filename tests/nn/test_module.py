"""zyx.nn.Module, Parameter and the containers: registration, names, state dicts, modes, gradients."""
from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest

import zyx
from zyx import nn

pytestmark = pytest.mark.needs_device


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 3)
        self.act = nn.ReLU()
        self.register_buffer("running", zyx.zeros(3))
        self.register_buffer("scratch", zyx.ones(2), persistent=False)

    def forward(self, x):
        return self.act(self.fc(x)) + self.running


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.ModuleList([Block(), Block()])
        self.head = nn.Linear(3, 2, bias=False)
        self.scale = nn.Parameter(zyx.ones(1))

    def forward(self, x):
        for b in self.blocks:
            x = b(x) @ zyx.ones(3, 4)
        return self.head(x @ zyx.ones(4, 3)) * self.scale


def test_parameter_is_a_plain_leaf_tensor():
    t = zyx.randn(3, 2)
    p = nn.Parameter(t)
    assert type(p) is zyx.Tensor and isinstance(p, nn.Parameter)
    assert p.requires_grad and p.is_leaf and p.grad_fn is None
    assert not isinstance(t, nn.Parameter) and not isinstance(p.detach(), nn.Parameter)
    assert not isinstance(p.T, nn.Parameter)
    np.testing.assert_array_equal(p.numpy(), t.numpy())
    frozen = nn.Parameter(zyx.ones(2), requires_grad=False)
    assert isinstance(frozen, nn.Parameter) and not frozen.requires_grad
    with pytest.raises(zyx.DTypeError):
        nn.Parameter(np.ones(3))


def test_names_and_traversal():
    net = Net()
    names = [n for n, _ in net.named_parameters()]
    assert names == ["scale", "blocks.0.fc.weight", "blocks.0.fc.bias", "blocks.1.fc.weight", "blocks.1.fc.bias",
                     "head.weight"]
    assert len(list(net.parameters())) == 6
    assert [n for n, _ in net.named_buffers()] == ["blocks.0.running", "blocks.0.scratch", "blocks.1.running",
                                                   "blocks.1.scratch"]
    assert [n for n, _ in net.named_children()] == ["blocks", "head"]
    assert [n for n, _ in net.named_modules()] == ["", "blocks", "blocks.0", "blocks.0.fc", "blocks.0.act",
                                                   "blocks.1", "blocks.1.fc", "blocks.1.act", "head"]
    assert net.get_submodule("blocks.1.fc") is net.blocks[1].fc
    # a module's own parameters and buffers come before its children's, as in PyTorch
    assert list(net.state_dict()) == ["scale", "blocks.0.running", "blocks.0.fc.weight", "blocks.0.fc.bias",
                                      "blocks.1.running", "blocks.1.fc.weight", "blocks.1.fc.bias", "head.weight"]


def test_shared_parameter_deduplicated():
    a = nn.Linear(3, 3)
    seq = nn.Sequential(a, nn.ReLU(), a)
    assert [n for n, _ in seq.named_parameters()] == ["0.weight", "0.bias"]
    assert list(seq.state_dict()) == ["0.weight", "0.bias", "2.weight", "2.bias"]  # PyTorch keeps both names
    assert len(list(seq.modules())) == 3


def test_setattr_rules():
    m = nn.Linear(2, 2)
    with pytest.raises(TypeError):
        m.weight = zyx.ones(2, 2)  # a parameter slot takes a Parameter or None
    m.bias = None
    assert m.bias is None and [n for n, _ in m.named_parameters()] == ["weight"]
    m.extra = nn.Parameter(zyx.zeros(1))
    assert "extra" in dict(m.named_parameters())
    del m.extra
    assert "extra" not in dict(m.named_parameters())
    with pytest.raises(KeyError):
        m.register_buffer("a.b", zyx.zeros(1))
    with pytest.raises(AttributeError):
        _ = m.missing


def test_state_dict_round_trip_and_detached():
    torch_like = Net()
    sd = torch_like.state_dict()
    assert all(not v.requires_grad for v in sd.values())
    other = Net()
    result = other.load_state_dict({k: v.numpy() for k, v in sd.items()})
    assert result.missing_keys == [] and result.unexpected_keys == []
    for k, v in other.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), sd[k].numpy())
    # loading writes in place: the parameter objects (and an optimizer's references) stay
    w = other.head.weight
    other.load_state_dict(sd)
    assert other.head.weight is w and w.requires_grad and w.is_leaf


def test_load_state_dict_assign():
    m = nn.Linear(3, 2)
    w = zyx.randn(2, 3)
    res = m.load_state_dict({"weight": w, "bias": np.zeros(2, np.float32)}, assign=True)
    assert res.missing_keys == [] and isinstance(m.weight, nn.Parameter) and m.weight.requires_grad
    np.testing.assert_array_equal(m.weight.numpy(), w.numpy())
    m(zyx.randn(4, 3)).sum().backward()
    assert m.weight.grad.shape == (2, 3)


def test_load_state_dict_reports_keys():
    m = nn.Sequential(nn.Linear(2, 3), nn.Linear(3, 1))
    sd = {k: v.numpy() for k, v in m.state_dict().items()}
    del sd["1.bias"]
    sd["1.extra"] = np.zeros(1, np.float32)
    with pytest.raises(nn.StateDictError, match=r'(?s)Missing key\(s\) in state_dict: "1.bias".*Unexpected '
                                                  r'key\(s\) in state_dict: "1.extra"') as info:
        m.load_state_dict(sd)
    assert isinstance(info.value, RuntimeError)
    before = m[0].weight.numpy().copy()
    sd["0.weight"] = np.full((2, 3), 7, np.float32)  # wrong shape: an error even when not strict
    with pytest.raises(nn.StateDictError, match=r"size mismatch for 0.weight.*\(2, 3\).*\(3, 2\)"):
        m.load_state_dict(sd, strict=False)
    np.testing.assert_array_equal(m[0].weight.numpy(), before)  # nothing half-loaded
    sd["0.weight"] = np.full((3, 2), 7, np.float32)
    res = m.load_state_dict(sd, strict=False)
    assert res.missing_keys == ["1.bias"] and res.unexpected_keys == ["1.extra"]
    assert res == (["1.bias"], ["1.extra"])
    np.testing.assert_array_equal(m[0].weight.numpy(), np.full((3, 2), 7, np.float32))


def test_train_eval_propagate():
    net = Net()
    assert all(m.training for m in net.modules())
    assert net.eval() is net
    assert not any(m.training for m in net.modules())
    net.blocks.train()
    assert net.blocks[1].act.training and not net.training


def test_zero_grad_and_requires_grad_():
    net = nn.Sequential(nn.Linear(4, 3), nn.Tanh(), nn.Linear(3, 1))
    net(zyx.randn(5, 4)).sum().backward()
    assert all(p.grad is not None for p in net.parameters())
    net.zero_grad(set_to_none=False)
    assert all(np.all(p.grad.numpy() == 0) for p in net.parameters())
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())
    net.requires_grad_(False)
    assert not any(p.requires_grad for p in net.parameters())


def test_apply_order_and_init():
    seen = []
    net = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.ReLU()))
    net.apply(lambda m: seen.append(type(m).__name__))
    assert seen == ["Linear", "ReLU", "Sequential", "Sequential"]

    def init_weights(m):
        if isinstance(m, nn.Linear):
            nn.init.constant_(m.weight, 0.5)
    net.apply(init_weights)
    np.testing.assert_array_equal(net[0].weight.numpy(), np.full((2, 2), 0.5, np.float32))
    assert net[0].weight.requires_grad


def test_to_dtype():
    net = Net()
    w = net.head.weight
    net.to(zyx.float64)
    assert all(p.dtype is zyx.float64 for p in net.parameters())
    assert all(b.dtype is zyx.float64 for b in net.buffers())
    assert all(isinstance(p, nn.Parameter) and p.requires_grad and p.is_leaf for p in net.parameters())
    np.testing.assert_array_equal(net.head.weight.numpy(), w.numpy().astype(np.float64))
    out = net(zyx.randn(2, 4, dtype=zyx.float64))
    assert out.dtype is zyx.float64
    out.sum().backward()
    assert net.head.weight.grad.dtype is zyx.float64
    tied = nn.Sequential(nn.Linear(2, 2))
    tied.append(tied[0]).to("float16")
    assert tied[0].weight is tied[1].weight and tied[0].weight.dtype is zyx.float16
    with pytest.raises(zyx.DTypeError):
        net.to(zyx.int32)


def test_to_converts_parameters_in_place_so_an_earlier_optimizer_keeps_training():
    """PyTorch keeps parameter identity through ``Module.to``: an optimizer made before ``to`` must still
    update the module (replaced parameters left it stepping stale tensors: silently no training)."""
    net = nn.Linear(3, 2)
    w, b = net.weight, net.bias
    w0 = w.numpy().astype(np.float64)
    opt = zyx.optim.SGD(net.parameters(), lr=0.5)
    net(zyx.ones(1, 3)).sum().backward()
    net.to(zyx.float64)
    assert net.weight is w and net.bias is b and isinstance(w, nn.Parameter) and w.requires_grad and w.is_leaf
    assert w.dtype is zyx.float64 and w.grad.dtype is zyx.float64
    np.testing.assert_array_equal(w.numpy(), w0)
    opt.zero_grad()
    net(zyx.ones(1, 3, dtype=zyx.float64)).sum().backward()
    opt.step()
    np.testing.assert_allclose(net.weight.numpy(), w0 - 0.5, rtol=1e-12)


def test_repr_nested():
    net = nn.Sequential(nn.Linear(4, 3), nn.ModuleDict({"act": nn.GELU()}), nn.Dropout(0.2))
    assert repr(net) == (
        "Sequential(\n"
        "  (0): Linear(in_features=4, out_features=3, bias=True)\n"
        "  (1): ModuleDict(\n"
        "    (act): GELU(approximate='none')\n"
        "  )\n"
        "  (2): Dropout(p=0.2, inplace=False)\n"
        ")"
    )


def test_sequential_and_lists():
    a, b, c = nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1)
    seq = nn.Sequential(a, b)
    seq.append(c)
    assert len(seq) == 3 and seq[0] is a and seq[-1] is c
    assert isinstance(seq[1:], nn.Sequential) and list(seq[1:]) == [b, c]
    x = zyx.randn(4, 2)
    np.testing.assert_allclose(seq(x).numpy(), c(b(a(x))).numpy(), rtol=1e-6)
    del seq[1]
    assert [n for n, _ in seq.named_children()] == ["0", "1"] and seq[1] is c
    named = nn.Sequential(OrderedDict([("first", a), ("second", c)]))
    assert list(named.state_dict()) == ["first.weight", "first.bias", "second.weight", "second.bias"]
    with pytest.raises(IndexError):
        seq[5]
    ml = nn.ModuleList([a])
    ml += [b]
    ml.insert(0, c)
    assert list(ml) == [c, a, b] and len(ml) == 3
    assert [n for n, _ in ml.named_parameters()] == ["0.weight", "0.bias", "1.weight", "1.bias"]
    md = nn.ModuleDict({"x": a})
    md["y"] = c
    assert list(md.keys()) == ["x", "y"] and "y" in md and md["x"] is a
    assert [n for n, _ in md.named_parameters()] == ["x.weight", "x.bias", "y.weight", "y.bias"]
    assert md.pop("x") is a and len(md) == 1


def test_deepcopy():
    import copy

    a = nn.Linear(3, 3)
    net = nn.Sequential(a, nn.ReLU(), a)
    net.register_buffer("count", zyx.zeros(1))
    net(zyx.randn(4, 3)).sum().backward()
    c = copy.deepcopy(net)
    assert c[0] is c[2] and c[0] is not a  # sharing kept inside the copy
    assert isinstance(c[0].weight, nn.Parameter) and c[0].weight.requires_grad and c[0].weight.is_leaf
    np.testing.assert_array_equal(c[0].weight.numpy(), a.weight.numpy())
    np.testing.assert_array_equal(c[0].weight.grad.numpy(), a.weight.grad.numpy())
    with zyx.no_grad():
        c[0].weight[...] = 0
    assert np.all(a.weight.numpy() != 0)  # the copy has its own storage
    assert c.count is not net.count and [n for n, _ in c.named_buffers()] == ["count"]
