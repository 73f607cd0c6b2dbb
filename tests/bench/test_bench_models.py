"""bench/bench_models.py's model code computes the same thing in zyx (eager and jitted) and in PyTorch, at tiny
sizes: the losses of two train steps, the inference outputs, and the KV-cache decode step (against PyTorch's
decode and PyTorch's full forward). The benchmark runs these same checks before it times a row."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.needs_device

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "bench_models.py"


@pytest.fixture(scope="module")
def bench():
    pytest.importorskip("torch")
    spec = importlib.util.spec_from_file_location("bench_models", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # (dataclasses look their module up while the class is made)
    try:
        spec.loader.exec_module(mod)
    finally:
        del sys.modules[spec.name]
    return mod


@pytest.fixture(scope="module")
def tiny(bench):
    return bench.GPTConfig(vocab=11, ctx=16, d=32, heads=2, layers=2)


def _train(bench, tiny, name):
    rng = np.random.default_rng(0)
    if name == "gpt":
        idx = rng.integers(0, tiny.vocab, (2, tiny.ctx + 1))
        return bench._train_steps(lambda lib: bench.gpt(lib, tiny), "AdamW", 3e-4, idx[:, :-1], idx[:, 1:],
                                  flat=True)
    x = rng.standard_normal((4, 784) if name == "mlp" else (4, 1, 28, 28), dtype=np.float32)
    return bench._train_steps(getattr(bench, name), "Adam", 1e-3, x, rng.integers(0, 10, 4))


# the GPT step (an Embedding backward, attention, AdamW): the MLP and CNN steps are checked by bench_models itself
# before it times them, and their ops by tests/nn and tests/optim
@pytest.mark.parametrize("name", ["gpt"])
def test_train_steps_agree_and_the_jitted_one_replays(bench, tiny, name):
    steps, jitted = _train(bench, tiny, name)
    assert bench._check_train(steps) == "ok"
    steps["zyx jit"]()
    assert bench._jit_note(jitted) == ""


def test_inference_agrees(bench, tiny):
    rng = np.random.default_rng(1)
    _, jitted, check = bench._infer_steps(lambda lib: bench.gpt(lib, tiny), rng.integers(0, tiny.vocab, (1, tiny.ctx)))
    assert check == "ok" and bench._jit_note(jitted) == ""
    _, jitted, check = bench._infer_steps(bench.encoder, rng.standard_normal((2, 8, 384), dtype=np.float32))
    assert check == "ok" and bench._jit_note(jitted) == ""


def test_decode_step_agrees_with_torch_and_the_full_forward(bench, tiny):
    steps, jitted, check = bench._decode_steps(tiny, prefix=8)
    assert check == "ok"
    for _ in range(2):
        steps["zyx jit"]()
    assert bench._jit_note(jitted) == ""  # the decode step replays a plan


def test_a_disagreement_is_reported(bench):
    import torch

    outs = {"torch": torch.ones(3), "zyx": torch.tensor([1.0, 1.0, 1.5])}
    assert bench._check_outputs(outs).startswith("MISMATCH: zyx off by 5.00e-01")


def test_flops_follow_the_stated_rule(bench):
    assert bench._flops("mlp", bench.GPTConfig(), 256) == 3 * 2 * 256 * (784 * 1024 + 1024 * 1024 + 1024 * 10)
    c = bench.GPTConfig()
    layer = 2 * 128 * c.d * (3 * c.d + c.d + 8 * c.d) + 4 * 128 * 128 * c.d
    assert bench._flops("gpt_infer", c, 1) == c.layers * layer + 2 * 128 * c.d * c.vocab
