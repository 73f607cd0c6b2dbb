"""torch.compile(model, backend="zyx") against eager PyTorch: outputs, gradients, training steps, and the
promises around them (registration, no fallbacks for the listed models, parameters uploaded once,
changing batch sizes, fallbacks reported)."""
from __future__ import annotations

import copy
import gc
import importlib.util
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import zyx

torch = pytest.importorskip("torch")
nn = torch.nn

from zyx import torch_backend  # noqa: E402 - after the skip
from zyx.torch_backend.graph_runner import FALLBACKS  # noqa: E402

pytestmark = pytest.mark.needs_device


@pytest.fixture(autouse=True)
def fresh_dynamo() -> Any:
    torch._dynamo.reset()
    FALLBACKS.clear()
    torch.manual_seed(0)
    yield
    torch._dynamo.reset()
    torch_backend.release()
    gc.collect()  # compiled graphs in reference cycles free their zyx buffers now, not inside a later test


def _close(a: Any, b: Any, tol: float = 1e-5) -> None:
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=tol, atol=tol)


def _mlp() -> Any:
    return nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 32), nn.GELU(), nn.Linear(32, 5))


def _cnn() -> Any:
    # no bias before a BatchNorm: its gradient is zero up to rounding, which Adam would blow up to +-lr steps
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1, bias=False), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(4, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(8 * 2 * 2, 10))


def _resnet18(width: int, classes: int) -> Any:
    """bench/bench_torch_compile.py's ResNet-18 layout (one definition for the benchmark and the test)."""
    path = Path(__file__).resolve().parents[2] / "bench" / "bench_torch_compile.py"
    spec = importlib.util.spec_from_file_location("bench_torch_compile", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.resnet18(width, classes)


def test_registered_as_a_dynamo_backend() -> None:
    assert "zyx" in torch._dynamo.list_backends()


@pytest.mark.parametrize("make, shape", [(_mlp, (6, 12)), (_cnn, (3, 1, 8, 8))], ids=["mlp", "cnn"])
def test_forward_and_gradients_equal_eager(make: Any, shape: tuple[int, ...]) -> None:
    model = make()
    ref = copy.deepcopy(model)
    compiled = torch.compile(model, backend="zyx")
    x = torch.randn(*shape)
    got, want = compiled(x), ref(x)
    _close(got, want)
    (got * torch.arange(got.numel()).reshape(got.shape)).sum().backward()
    (want * torch.arange(want.numel()).reshape(want.shape)).sum().backward()
    for p, q in zip(model.parameters(), ref.parameters()):
        _close(p.grad, q.grad, 1e-4)
    for b, c in zip(model.buffers(), ref.buffers()):  # BatchNorm's running statistics
        _close(b.float(), c.float())
    assert torch_backend.fallbacks() == {}


@pytest.mark.parametrize("opt", ["sgd", "adam"])
@pytest.mark.parametrize("make, shape", [(_mlp, (8, 12)), (_cnn, (4, 1, 8, 8))], ids=["mlp", "cnn"])
def test_twenty_training_steps_equal_eager_step_for_step(make: Any, shape: tuple[int, ...], opt: str) -> None:
    model = make()
    ref = copy.deepcopy(model)

    def optimizer(m: Any) -> Any:
        return torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9) if opt == "sgd" else \
            torch.optim.Adam(m.parameters(), lr=1e-2)

    o1, o2 = optimizer(model), optimizer(ref)
    compiled = torch.compile(model, backend="zyx")
    rng = torch.Generator().manual_seed(1)
    for _ in range(20):
        x = torch.randn(*shape, generator=rng)
        y = torch.randint(0, 5, (shape[0],), generator=rng)
        for m, o in ((compiled, o1), (ref, o2)):
            o.zero_grad()
            nn.functional.cross_entropy(m(x), y).backward()
            o.step()
        for p, q in zip(model.parameters(), ref.parameters()):
            _close(p, q, 2e-4)
    assert torch_backend.fallbacks() == {}


def test_batchnorm_eval_and_train_mode_and_the_resnet18_shape() -> None:
    model = _resnet18(4, 10).eval()
    with torch.no_grad():
        for m in model.modules():  # running statistics that are not the initial ones
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
    compiled = torch.compile(model, backend="zyx")
    x = torch.randn(2, 3, 32, 32)
    with torch.no_grad():
        _close(compiled(x), model(x), 1e-4)
    model.train()  # batch statistics (more than 2 values a channel: the last stage is 2x2 at 48 pixels)
    ref = copy.deepcopy(model)
    x = torch.randn(2, 3, 48, 48)
    with torch.no_grad():
        _close(compiled(x), ref(x), 1e-4)
    for b, c in zip(model.buffers(), ref.buffers()):
        _close(b.float(), c.float())
    assert torch_backend.fallbacks() == {}


@pytest.mark.parametrize("train", [True, False], ids=["train-mode", "eval-fast-path"])
def test_transformer_encoder_layer(train: bool) -> None:
    layer = nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True)
    layer.train(train)
    compiled = torch.compile(layer, backend="zyx")
    x = torch.randn(2, 6, 16)
    with torch.no_grad():
        _close(compiled(x), layer(x), 1e-5)
    assert torch_backend.fallbacks() == {}


@pytest.mark.parametrize("family", ["bert", "gpt2", "llama"])
def test_hugging_face_models_from_tiny_random_configs(family: str) -> None:
    transformers = pytest.importorskip("transformers")
    if family == "bert":
        model = transformers.BertModel(transformers.BertConfig(
            vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
            max_position_embeddings=32))
    elif family == "gpt2":
        model = transformers.GPT2LMHeadModel(transformers.GPT2Config(
            vocab_size=50, n_embd=16, n_layer=2, n_head=2, n_positions=32, bos_token_id=0, eos_token_id=0))
    else:
        model = transformers.LlamaForCausalLM(transformers.LlamaConfig(
            vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1,
            intermediate_size=32, max_position_embeddings=32))
    model.eval()
    ids = torch.randint(0, 50, (2, 7))
    compiled = torch.compile(model, backend="zyx")
    with torch.no_grad():
        got, want = compiled(ids), model(ids)
    out = "last_hidden_state" if family == "bert" else "logits"
    _close(getattr(got, out), getattr(want, out), 1e-5)
    assert torch_backend.fallbacks() == {}


def test_parameters_are_uploaded_once_and_again_after_torch_changes_them() -> None:
    model = _mlp()
    compiled = torch.compile(model, backend="zyx")
    with torch.no_grad():
        compiled(torch.randn(4, 12))
        with zyx.profiler.profile() as prof:
            compiled(torch.randn(4, 12))
        uploads = [e for e in prof.events() if e.name == "host_to_device"]
        assert len(uploads) == 1  # the new input only
        x = torch.randn(4, 12)
        compiled(x)
        with zyx.profiler.profile() as prof:
            compiled(x)  # the same input tensor, unchanged: nothing crosses
        assert not [e for e in prof.events() if e.name == "host_to_device"]
        model[0].weight.mul_(2)  # bumps its version counter
        with zyx.profiler.profile() as prof:
            got = compiled(x)
        assert len([e for e in prof.events() if e.name == "host_to_device"]) == 1  # that weight only
        _close(got, model(x))


def test_changing_batch_sizes() -> None:
    model = _mlp()
    compiled = torch.compile(model, backend="zyx")
    with torch.no_grad():
        for n in (3, 5, 9, 2):
            x = torch.randn(n, 12)
            _close(compiled(x), model(x))


def test_an_op_without_a_zyx_form_runs_in_pytorch_and_is_reported() -> None:
    def f(x: Any) -> Any:
        return torch.special.erfinv(torch.tanh(x) * 0.9) + 1

    compiled = torch.compile(f, backend="zyx")
    x = torch.randn(10)
    _close(compiled(x), f(x))
    assert torch_backend.fallbacks() == {"erfinv.default": 1}
    assert "addmm" in torch_backend.supported_ops()
