"""Llama-family GGUF checkpoints (llama.cpp's ``convert_hf_to_gguf``) as a Hugging Face config and state dict.

``load_gguf_checkpoint`` maps the file's metadata (``llama.*`` / ``qwen2.*`` keys; Mistral is written as
``llama``) to ``transformers``' ``config.json`` keys and its tensors (``blk.N.attn_q.weight``, ...) to
Hugging Face parameter names (``model.layers.N.self_attn.q_proj.weight``, ...).

llama.cpp stores the Q and K projections of the ``llama`` architecture with their rows permuted for its
rotary embedding, which rotates adjacent pairs where Hugging Face rotates the two halves of each head:
per head of ``D`` rows, HF row ``(half, i)`` (``half`` in 0..1, ``i`` < D/2) is stored at row ``2 i + half``
(K uses the key/value head count). The inverse gathers rows back on the host before upload; a row of blocks
moves whole, so quantized weights are un-permuted in their blocks, never expanded. Qwen2 is stored unpermuted.
"""
from __future__ import annotations

import os
import re
from typing import Any

import numpy as np

from zyx.io.gguf import GGUFError, read_gguf

__all__ = ["load_gguf_checkpoint", "unpermute_rows"]

ARCHITECTURES = {"llama": ("llama", "LlamaForCausalLM"), "qwen2": ("qwen2", "Qwen2ForCausalLM")}
PERMUTED = {"llama"}  # architectures whose Q/K rows llama.cpp permutes
TOP = {"token_embd.weight": "model.embed_tokens.weight", "output_norm.weight": "model.norm.weight",
       "output.weight": "lm_head.weight"}
LAYER = {"attn_norm": "input_layernorm", "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj",
         "attn_v": "self_attn.v_proj", "attn_output": "self_attn.o_proj", "ffn_norm": "post_attention_layernorm",
         "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj"}
# derived data with no Hugging Face parameter (llama 3's rope frequency factors, from its rope_scaling)
SKIPPED = {"rope_freqs.weight"}
_BLOCK = re.compile(r"blk\.(\d+)\.(\w+)\.(weight|bias)")


def unpermute_rows(rows: int, n_head: int) -> np.ndarray:
    """The row order that undoes llama.cpp's Q/K permutation of a (``rows``, ...) projection of ``n_head``
    heads: ``hf = gguf[unpermute_rows(rows, n_head)]``."""
    if rows % (2 * n_head):
        raise GGUFError(f"a Q/K projection of {rows} rows does not split into {n_head} heads of an even size")
    return np.arange(rows).reshape(n_head, rows // n_head // 2, 2).swapaxes(1, 2).reshape(-1)


def _config(path: str, meta: dict[str, Any], names: set[str]) -> tuple[dict[str, Any], str]:
    arch = meta.get("general.architecture")
    if arch not in ARCHITECTURES:
        raise GGUFError(f"{path}: general.architecture {arch!r} is not a Llama-family model; "
                        f"expected one of {', '.join(ARCHITECTURES)}")

    def key(name: str, default: Any = None, kind: type = int) -> Any:
        value = meta.get(f"{arch}.{name}", default)
        if value is None:
            raise GGUFError(f"{path}: metadata key {arch}.{name} is missing")
        if isinstance(value, list) and value and all(v == value[0] for v in value):
            value = value[0]  # a per-layer list of one value
        try:
            return kind(value)
        except (TypeError, ValueError):
            raise GGUFError(f"{path}: metadata key {arch}.{name} = {value!r} is not one {kind.__name__} "
                            "(per-layer values that differ are not supported)") from None

    heads = key("attention.head_count")
    hidden = key("embedding_length")
    if heads <= 0 or hidden <= 0:
        raise GGUFError(f"{path}: {arch}.attention.head_count = {heads} and {arch}.embedding_length = {hidden}; "
                        "expected positive counts")
    tokens = meta.get("tokenizer.ggml.tokens")
    vocab = meta.get(f"{arch}.vocab_size", len(tokens) if tokens else None)
    config: dict[str, Any] = {
        "model_type": ARCHITECTURES[arch][0], "architectures": [ARCHITECTURES[arch][1]],
        "vocab_size": vocab, "hidden_size": hidden, "intermediate_size": key("feed_forward_length"),
        "num_hidden_layers": key("block_count"), "num_attention_heads": heads,
        "num_key_value_heads": key("attention.head_count_kv", heads),
        "head_dim": key("attention.key_length", hidden // heads),
        "rms_norm_eps": key("attention.layer_norm_rms_epsilon", kind=float),
        "rope_theta": key("rope.freq_base", 10000.0, float),
        "max_position_embeddings": key("context_length"),
        "tie_word_embeddings": "output.weight" not in names,
        "attention_bias": "blk.0.attn_q.bias" in names, "torch_dtype": "float32",
    }
    for name in ("bos", "eos", "padding"):
        token = meta.get(f"tokenizer.ggml.{name}_token_id")
        if isinstance(token, int):
            config[f"{'pad' if name == 'padding' else name}_token_id"] = token
    return config, arch


def _hf_name(path: str, name: str) -> str:
    if name in TOP:
        return TOP[name]
    m = _BLOCK.fullmatch(name)
    if m is None or m.group(2) not in LAYER:
        raise GGUFError(f"{path}: tensor {name!r} has no Hugging Face Llama counterpart")
    return f"model.layers.{m.group(1)}.{LAYER[m.group(2)]}.{m.group(3)}"


def load_gguf_checkpoint(path: str | os.PathLike, device: Any = None,
                         dequantize: bool = True) -> tuple[dict[str, Any], dict[str, Any]]:
    """(config, state_dict) of a Llama / Qwen2 / Mistral GGUF file: ``config`` with ``transformers``'
    ``config.json`` keys, ``state_dict`` with Hugging Face parameter names, Q/K rows in Hugging Face's order,
    every tensor float32 on ``device`` (with ``dequantize=False`` the 2-D block tensors stay
    ``zyx.nn.QuantizedWeight``). A tied head (no ``output.weight``) gives ``lm_head.weight`` as the
    embedding's tensor itself."""
    f = read_gguf(path)
    config, arch = _config(f.path, f.metadata, set(f.tensors))
    if config["vocab_size"] is None:
        config["vocab_size"] = f.tensors["token_embd.weight"].shape[0] if "token_embd.weight" in f.tensors else None
    heads = {"attn_q": config["num_attention_heads"], "attn_k": config["num_key_value_heads"]}
    state: dict[str, Any] = {}
    for name, t in f.tensors.items():
        if name in SKIPPED:
            continue
        hf = _hf_name(f.path, name)
        m = _BLOCK.fullmatch(name)
        rows = None
        if arch in PERMUTED and m is not None and m.group(2) in heads:
            rows = unpermute_rows(t.shape[0], heads[m.group(2)])
        state[hf] = t.load(device, dequantize, rows)
    if config["tie_word_embeddings"] and "model.embed_tokens.weight" in state:
        state["lm_head.weight"] = state["model.embed_tokens.weight"]
    return config, state
