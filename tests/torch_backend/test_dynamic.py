"""Dynamic shapes through torch.compile(backend="zyx"): a dim dynamo marks dynamic becomes a zyx Variable, so
the kernels compiled for one size serve every size of its bucket (values against eager PyTorch, compiles
counted by ``zyx.build_stats()``)."""
from __future__ import annotations

import gc
from typing import Any

import numpy as np
import pytest

import zyx

torch = pytest.importorskip("torch")
nn = torch.nn

from zyx import torch_backend  # noqa: E402 - after the skip
from zyx.torch_backend import dynamic  # noqa: E402


@pytest.fixture(autouse=True)
def fresh_dynamo() -> Any:
    torch._dynamo.reset()
    torch.manual_seed(0)
    yield
    torch._dynamo.reset()
    torch_backend.release()
    gc.collect()


def _programs() -> int:
    """Programs compiled or loaded from the disk cache so far (a kernel new to this process)."""
    s = zyx.build_stats()
    return s["source_builds"] + s["binary_loads"]


def _close(a: Any, b: Any, tol: float = 1e-5) -> None:
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=tol, atol=tol)


# ------------------------------------------------------------------ no device needed

def test_buckets_are_powers_of_two_from_sixteen() -> None:
    assert [dynamic._bucket(n) for n in (0, 1, 2, 15, 16, 17, 32, 33, 1000)] == [16, 16, 16, 16, 16, 32, 32, 64, 1024]


def test_size_expressions_are_evaluated_over_bound_variables() -> None:
    import sympy
    from torch.utils._sympy.functions import FloorDiv, Mod

    s0, s1 = sympy.symbols("s0 s1", integer=True, positive=True)
    a, b = zyx.Variable("a", 0, 64).bind(6), zyx.Variable("b", 0, 64).bind(5)
    bound = {"s0": a, "s1": b}
    assert int(dynamic.evaluate(2 * s0 + 3, bound)) == 15
    assert int(dynamic.evaluate(FloorDiv(s0, 4), bound)) == 1
    assert int(dynamic.evaluate(Mod(s0 + 1, 4), bound)) == 3
    assert int(dynamic.evaluate(s0 * s1, bound)) == 30
    assert dynamic.evaluate(s0 + sympy.Symbol("s9"), bound) is None  # a symbol this graph does not bind
    assert dynamic.evaluate(sympy.sqrt(s0), bound) is None  # not a size expression dynamo writes


# ------------------------------------------------------------------ on the device

needs_device = pytest.mark.needs_device


def _mlp() -> Any:
    return nn.Sequential(nn.Linear(12, 32), nn.GELU(), nn.LayerNorm(32), nn.Linear(32, 5))


@needs_device
def test_a_dynamic_batch_compiles_once_per_bucket() -> None:
    model = _mlp().eval()
    compiled = torch.compile(model, backend="zyx", dynamic=True)
    builds = []
    with torch.no_grad():
        for n in (5, 7, 2, 16, 17, 30):
            x = torch.randn(n, 12)
            before = _programs()
            _close(compiled(x), model(x))
            builds.append(_programs() - before)
    assert builds[1:4] == [0, 0, 0], builds  # 5, 7, 2 and 16 share the first bucket's kernels
    assert builds[5] == 0, builds  # 30 runs on the kernels 17 compiled for the bucket up to 32


@needs_device
def test_a_dynamic_batch_trains_with_equal_gradients_and_no_new_kernels() -> None:
    model = _mlp()
    reference = _mlp()
    reference.load_state_dict(model.state_dict())
    compiled = torch.compile(model, backend="zyx", dynamic=True)
    builds = []
    for n in (6, 9, 4):
        x = torch.randn(n, 12)
        before = _programs()
        compiled(x).square().mean().backward()
        builds.append(_programs() - before)
        reference(x).square().mean().backward()
        for p, q in zip(model.parameters(), reference.parameters()):
            _close(p.grad, q.grad)
            p.grad, q.grad = None, None
    assert builds[1:] == [0, 0], builds


@needs_device
def test_a_dynamic_sequence_length_through_an_encoder_layer() -> None:
    layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True).eval()
    compiled = torch.compile(layer, backend="zyx")
    builds = []
    with torch.no_grad():
        for t in (5, 11, 3):
            x = torch.randn(2, t, 32)
            torch._dynamo.mark_dynamic(x, 1)
            before = _programs()
            _close(compiled(x), layer(x), tol=1e-4)
            builds.append(_programs() - before)
    assert builds[1:] == [0, 0], builds


@needs_device
def test_ops_without_a_variable_form_take_the_value() -> None:
    # convolutions are specialized on shapes: a dynamic batch is right, compiled per size
    model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 6 * 6, 3)).eval()
    compiled = torch.compile(model, backend="zyx", dynamic=True)
    with torch.no_grad():
        for n in (3, 5):
            x = torch.randn(n, 3, 6, 6)
            _close(compiled(x), model(x), tol=1e-4)
