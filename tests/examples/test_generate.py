"""examples/generate.py on a tiny random checkpoint the test writes (config.json + model.safetensors from a zyx
Llama, and a word-level tokenizer.json): token-id and text prompts, greedy tokens equal to ``Llama.generate``,
prefill and decode speeds printed."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import zyx
from zyx.models.llama import Llama, LlamaConfig

pytestmark = pytest.mark.needs_device

SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "generate.py"
WORDS = ["<unk>", "the", "cat", "sat", "on", "mat", "a", "dog", "ran", "far"]


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    path = tmp_path_factory.mktemp("tiny_llama")
    hf = {"model_type": "llama", "vocab_size": 64, "hidden_size": 32, "intermediate_size": 64,
          "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "rms_norm_eps": 1e-5,
          "rope_theta": 10000.0, "tie_word_embeddings": False, "eos_token_id": None}
    (path / "config.json").write_text(json.dumps(hf))
    model = Llama(LlamaConfig.from_hf(hf))
    zyx.save_file(dict(model.state_dict()), path / "model.safetensors")
    tokenizers = pytest.importorskip("tokenizers")
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel({w: i for i, w in enumerate(WORDS)}, unk_token="<unk>"))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    tok.save(str(path / "tokenizer.json"))
    return path


def _run(*args: str) -> str:
    done = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done.stdout


def _new_ids(out: str) -> list[int]:
    return json.loads(re.search(r"new ids:\s+(\[.*\])", out).group(1))


def test_token_id_prompt_generates_the_models_greedy_tokens(checkpoint):
    out = _run(str(checkpoint), "--prompt-ids", "1,2,3,4", "--max-new-tokens", "12")
    want = Llama.from_pretrained(checkpoint).generate(np.array([[1, 2, 3, 4]]), 12, temperature=0).numpy()[0, 4:]
    assert _new_ids(out) == want.tolist()
    assert re.search(r"prefill: 4 tokens in [\d.]+ ms \([\d.]+ tokens/s\)", out), out
    assert re.search(r"decode:  11 tokens in [\d.]+ ms \([\d.]+ tokens/s\)", out), out


def test_text_prompt_through_the_tokenizer(checkpoint):
    out = _run(str(checkpoint), "--prompt", "the cat sat on", "--max-new-tokens", "4", "--temperature", "0.7",
               "--top-k", "5", "--seed", "1")
    assert "prompt ids: [1, 2, 3, 4]" in out
    assert "text: the cat sat on" in out
    assert len(_new_ids(out)) == 4
