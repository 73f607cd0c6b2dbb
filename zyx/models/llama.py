"""The Llama family (Llama, Qwen2, Mistral) built from ``zyx.nn``: RMSNorm, rotary embeddings, grouped-query
attention, SwiGLU. Module and parameter names are Hugging Face ``transformers``' (``model.layers.N.self_attn.
q_proj.weight``, ...), so a ``save_pretrained`` directory's state dict loads as it is (``from_pretrained``).

Checkpoints are data: safetensors or GGUF only (pickle files are refused), and a config asking for remote code
(``auto_map``) is refused. Generation with a ring-buffer KV cache lives in ``zyx.models.decoding``.
"""
from __future__ import annotations

import json
import math
import os
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from zyx.errors import ShapeError, ZyxError
from zyx.frontend.creation import tensor
from zyx.frontend.tensor import Tensor
from zyx.io.safetensors import load_file
from zyx.models.positions import apply_rotary, as_ids, as_mask, causal_masks, position_ids, rotary
from zyx.nn import functional as F
from zyx.nn.containers import ModuleList
from zyx.nn.functional_attention import decode_attention
from zyx.nn.linear import Embedding, Linear
from zyx.nn.module import Module, StateDictError
from zyx.nn.normalization import RMSNorm
from zyx.nn.quantized import QuantizedLinear, QuantizedWeight, quantized_linears

MODEL_TYPES = ("llama", "qwen2", "mistral")
ROPE_TYPES = ("default", "linear", "llama3")
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl")


class CheckpointError(ZyxError, ValueError):
    """A checkpoint or config zyx will not load: a pickle file, remote code, an unsupported architecture."""


@dataclass(frozen=True)
class LlamaConfig:
    """The hyperparameters of one model, named as Hugging Face's ``LlamaConfig``. ``sliding_windows`` holds each
    layer's attention window (None: full causal attention), from Mistral's ``sliding_window`` or Qwen2's
    ``layer_types``; ``qkv_bias`` / ``o_bias`` are Qwen2's and Llama's ``attention_bias``."""

    vocab_size: int = 32000
    hidden_size: int = 4096
    intermediate_size: int = 11008
    num_hidden_layers: int = 32
    num_attention_heads: int = 32
    num_key_value_heads: int = 32
    head_dim: int = 128
    rms_norm_eps: float = 1e-6
    rope_theta: float = 10000.0
    rope_scaling: dict | None = None
    max_position_embeddings: int = 2048
    tie_word_embeddings: bool = False
    qkv_bias: bool = False
    o_bias: bool = False
    mlp_bias: bool = False
    sliding_windows: tuple = ()
    bos_token_id: Any = None
    eos_token_id: Any = None
    pad_token_id: Any = None
    model_type: str = "llama"
    extra: dict = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not self.sliding_windows:
            object.__setattr__(self, "sliding_windows", (None,) * self.num_hidden_layers)
        if len(self.sliding_windows) != self.num_hidden_layers:
            raise CheckpointError(f"LlamaConfig: {len(self.sliding_windows)} sliding windows for "
                                  f"{self.num_hidden_layers} layers")
        if self.num_attention_heads % self.num_key_value_heads:
            raise CheckpointError(f"LlamaConfig: num_attention_heads ({self.num_attention_heads}) must be a multiple "
                                  f"of num_key_value_heads ({self.num_key_value_heads})")
        rope_type = (self.rope_scaling or {}).get("rope_type", "default")
        if rope_type not in ROPE_TYPES:
            raise NotImplementedError(f"LlamaConfig: rope type {rope_type!r} is not supported (zyx implements "
                                      f"{', '.join(ROPE_TYPES)})")

    @classmethod
    def from_hf(cls, config: dict) -> LlamaConfig:
        """The config of a Hugging Face ``config.json`` (``LlamaConfig``, ``Qwen2Config``, ``MistralConfig``; the
        rope settings as ``rope_parameters`` (transformers 5) or ``rope_theta`` + ``rope_scaling`` (before))."""
        if config.get("auto_map") or config.get("trust_remote_code"):
            raise CheckpointError("config names remote code (auto_map / trust_remote_code); zyx runs no code from "
                                  "checkpoints: only the built-in llama, qwen2 and mistral architectures load")
        model_type = config.get("model_type", "llama")
        if model_type not in MODEL_TYPES:
            raise CheckpointError(f"model_type {model_type!r} is not one of {', '.join(MODEL_TYPES)}")
        if config.get("hidden_act", "silu") != "silu":
            raise CheckpointError(f"hidden_act {config['hidden_act']!r}: the Llama family uses 'silu'")
        layers = int(config["num_hidden_layers"])
        heads = int(config["num_attention_heads"])
        hidden = int(config["hidden_size"])
        rope = dict(config.get("rope_parameters") or config.get("rope_scaling") or {})
        theta = float(rope.pop("rope_theta", config.get("rope_theta", 10000.0)))
        rope_type = rope.pop("rope_type", rope.pop("type", "default"))
        if rope_type == "llama3":
            rope.setdefault("original_max_position_embeddings", config.get("max_position_embeddings", 2048))
        scaling = None if rope_type == "default" else {"rope_type": rope_type, **rope}
        window = config.get("sliding_window")
        if model_type == "qwen2":
            types = config.get("layer_types") or ["full_attention"] * layers
            use = config.get("use_sliding_window", False) and window
            windows = tuple(int(window) if use and t == "sliding_attention" else None for t in types)
        elif model_type == "mistral" and window:
            windows = (int(window),) * layers
        else:
            windows = (None,) * layers
        attention_bias = bool(config.get("attention_bias", False))
        return cls(vocab_size=int(config["vocab_size"]), hidden_size=hidden,
                   intermediate_size=int(config["intermediate_size"]), num_hidden_layers=layers,
                   num_attention_heads=heads, num_key_value_heads=int(config.get("num_key_value_heads") or heads),
                   head_dim=int(config.get("head_dim") or hidden // heads),
                   rms_norm_eps=float(config.get("rms_norm_eps", 1e-6)), rope_theta=theta, rope_scaling=scaling,
                   max_position_embeddings=int(config.get("max_position_embeddings", 2048)),
                   tie_word_embeddings=bool(config.get("tie_word_embeddings", False)),
                   # Qwen2 has q/k/v biases and never an o_proj bias (its GGUF config still says attention_bias)
                   qkv_bias=model_type == "qwen2" or attention_bias, o_bias=attention_bias and model_type != "qwen2",
                   mlp_bias=bool(config.get("mlp_bias", False)), sliding_windows=windows,
                   bos_token_id=config.get("bos_token_id"), eos_token_id=config.get("eos_token_id"),
                   pad_token_id=config.get("pad_token_id"), model_type=model_type, extra=dict(config))

    def inv_freq(self) -> np.ndarray:
        """The rotary inverse frequencies (head_dim/2,) in float32, scaled as ``rope_scaling`` says; computed
        as transformers computes them so positions rotate by the same angles."""
        d = self.head_dim
        inv = (1.0 / (np.float32(self.rope_theta) ** (np.arange(0, d, 2, dtype=np.float32) / np.float32(d))))
        inv = inv.astype(np.float32)
        scaling = self.rope_scaling or {}
        kind = scaling.get("rope_type", "default")
        if kind == "linear":
            inv = inv / np.float32(scaling["factor"])
        elif kind == "llama3":
            factor = scaling["factor"]
            low, high = scaling["low_freq_factor"], scaling["high_freq_factor"]
            old = scaling["original_max_position_embeddings"]
            wavelen = 2 * math.pi / inv
            scaled = np.where(wavelen > old / low, inv / factor, inv)
            smooth = (old / wavelen - low) / (high - low)
            smoothed = (1 - smooth) * scaled / factor + smooth * scaled
            medium = ~(wavelen < old / high) & ~(wavelen > old / low)
            inv = np.where(medium, smoothed, scaled)
        return np.asarray(inv, np.float32)


# False while from_pretrained builds a model: the checkpoint replaces every weight, so the random ones are skipped
_RANDOM_INIT: ContextVar[bool] = ContextVar("zyx_llama_random_init", default=True)


class LlamaLinear(Linear):
    """``nn.Linear`` (same parameters and names) whose random initialization is skipped while a checkpoint is
    loaded: computing a model's worth of random weights only to replace them costs seconds per 100M weights."""

    def reset_parameters(self) -> None:
        if _RANDOM_INIT.get():
            super().reset_parameters()


class LlamaEmbedding(Embedding):
    """``nn.Embedding`` with ``LlamaLinear``'s skipped initialization."""

    def reset_parameters(self) -> None:
        if _RANDOM_INIT.get():
            super().reset_parameters()


class LlamaAttention(Module):
    """Grouped-query attention: ``num_key_value_heads`` key/value heads each shared by a group of query heads."""

    def __init__(self, c: LlamaConfig) -> None:
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = c.num_attention_heads, c.num_key_value_heads, c.head_dim
        self.q_proj = LlamaLinear(c.hidden_size, c.num_attention_heads * c.head_dim, bias=c.qkv_bias)
        self.k_proj = LlamaLinear(c.hidden_size, c.num_key_value_heads * c.head_dim, bias=c.qkv_bias)
        self.v_proj = LlamaLinear(c.hidden_size, c.num_key_value_heads * c.head_dim, bias=c.qkv_bias)
        self.o_proj = LlamaLinear(c.num_attention_heads * c.head_dim, c.hidden_size, bias=c.o_bias)

    def project(self, x: Tensor, cos: Tensor, sin: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Queries (batch, heads, seq, head_dim), keys and values (batch, kv_heads, seq, head_dim), rotated."""
        b, s = x.shape[0], x.shape[1]
        q, k, v = linears(x, (self.q_proj, self.k_proj, self.v_proj))
        q = q.reshape(b, s, self.heads, self.head_dim).permute(0, 2, 1, 3)
        k = k.reshape(b, s, self.kv_heads, self.head_dim).permute(0, 2, 1, 3)
        v = v.reshape(b, s, self.kv_heads, self.head_dim).permute(0, 2, 1, 3)
        return apply_rotary(q, cos, sin), apply_rotary(k, cos, sin), v

    def attend(self, q: Tensor, k: Tensor, v: Tensor, mask: Tensor) -> Tensor:
        """``o_proj`` of the attention of ``q`` over ``k``/``v``; ``mask`` bool (keep) or additive, broadcast to
        (batch, 1, q_len, k_len)."""
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=self.heads != self.kv_heads)
        b, _, s, _ = out.shape
        return self.o_proj(out.permute(0, 2, 1, 3).reshape(b, s, self.heads * self.head_dim))

    def attend_one(self, q: Tensor, ring: Tensor, mask: Tensor, n: Any) -> Tensor:
        """``attend`` for one query position over a KV cache: ``q`` (batch, heads, 1, head_dim); ``ring``
        (rows, batch, 2 x kv_heads, head_dim), the keys' heads then the values', of which the first ``n`` rows
        (a bound variable) hold positions; ``mask`` additive (rows, batch, 1, 1). One kernel
        (``decode_attention``) reading both halves of the ring in place."""
        b, rows = q.shape[0], ring.shape[0]
        out = decode_attention(q.reshape(b, self.heads, self.head_dim), ring[:, :, :self.kv_heads],
                               ring[:, :, self.kv_heads:], mask.reshape(rows, b), n)
        return self.o_proj(out.reshape(b, 1, self.heads * self.head_dim))


def linears(x: Tensor, layers: tuple[Module, ...]) -> list[Tensor]:
    """Each of ``layers`` applied to ``x``; ``QuantizedLinear`` layers of one block type (a model whose weights
    stay in GGUF blocks) in one kernel launch."""
    if all(isinstance(m, QuantizedLinear) for m in layers) and len({m.qtype for m in layers}) == 1:
        return quantized_linears(x, [m.weight for m in layers], [m.bias for m in layers])
    return [m(x) for m in layers]


class LlamaMLP(Module):
    """SwiGLU: ``down(silu(gate(x)) * up(x))``."""

    def __init__(self, c: LlamaConfig) -> None:
        super().__init__()
        self.gate_proj = LlamaLinear(c.hidden_size, c.intermediate_size, bias=c.mlp_bias)
        self.up_proj = LlamaLinear(c.hidden_size, c.intermediate_size, bias=c.mlp_bias)
        self.down_proj = LlamaLinear(c.intermediate_size, c.hidden_size, bias=c.mlp_bias)

    def forward(self, x: Tensor) -> Tensor:
        gate, up = linears(x, (self.gate_proj, self.up_proj))
        return self.down_proj(F.silu(gate) * up)


class LlamaDecoderLayer(Module):
    """Pre-norm block: ``x + attn(norm(x))`` then ``x + mlp(norm(x))``."""

    def __init__(self, c: LlamaConfig, window: int | None) -> None:
        super().__init__()
        self.window = window
        self.self_attn = LlamaAttention(c)
        self.mlp = LlamaMLP(c)
        self.input_layernorm = RMSNorm(c.hidden_size, eps=c.rms_norm_eps)
        self.post_attention_layernorm = RMSNorm(c.hidden_size, eps=c.rms_norm_eps)


class LlamaModel(Module):
    """The embedding, the decoder layers and the final norm (HF's ``model.`` prefix)."""

    def __init__(self, c: LlamaConfig) -> None:
        super().__init__()
        self.embed_tokens = LlamaEmbedding(c.vocab_size, c.hidden_size)
        self.layers = ModuleList([LlamaDecoderLayer(c, w) for w in c.sliding_windows])
        self.norm = RMSNorm(c.hidden_size, eps=c.rms_norm_eps)


class Llama(Module):
    """A causal language model of the Llama family (``LlamaForCausalLM`` and its Qwen2 / Mistral relatives).
    ``model(input_ids, attention_mask=None)`` returns logits (batch, seq, vocab)."""

    def __init__(self, config: LlamaConfig) -> None:
        super().__init__()
        self.config = config
        self.model = LlamaModel(config)
        self.lm_head = LlamaLinear(config.hidden_size, config.vocab_size, bias=False)
        if config.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight
        self.register_buffer("inv_freq", tensor(config.inv_freq()), persistent=False)
        self._decoder: Any = None

    def hidden(self, ids: np.ndarray, attention_mask: np.ndarray, keep_kv: bool = False
               ) -> tuple[Tensor, list[tuple[Tensor, Tensor]]]:
        """The final-norm hidden states (batch, seq, hidden) of a whole sequence, and (with ``keep_kv``) each
        layer's rotated keys and values (batch, kv_heads, seq, head_dim) for a KV cache."""
        dev = self.inv_freq.device
        masks = {w: tensor(m, device=dev) for w, m in causal_masks(attention_mask, self.config.sliding_windows).items()}
        cos, sin = rotary(tensor(position_ids(attention_mask), device=dev), self.inv_freq)
        x = self.model.embed_tokens(tensor(ids, device=dev))
        kv = []
        for layer in self.model.layers:
            q, k, v = layer.self_attn.project(layer.input_layernorm(x), cos, sin)
            if keep_kv:
                kv.append((k, v))
            x = x + layer.self_attn.attend(q, k, v, masks[layer.window])
            x = x + layer.mlp(layer.post_attention_layernorm(x))
        return self.model.norm(x), kv

    def forward(self, input_ids: Any, attention_mask: Any = None) -> Tensor:
        ids = as_ids(input_ids)
        mask = np.ones_like(ids) if attention_mask is None else as_mask(attention_mask, ids.shape)
        return self.lm_head(self.hidden(ids, mask)[0])

    def generate(self, input_ids: Any, max_new_tokens: int, temperature: float = 1.0, top_k: int | None = None,
                 top_p: float | None = None, seed: int | None = None, eos_token_id: Any = None,
                 attention_mask: Any = None) -> Tensor:
        """The prompt followed by up to ``max_new_tokens`` new tokens (int64 (batch, seq + new)); see
        ``zyx.models.decoding.generate``."""
        from zyx.models.decoding import generate

        return generate(self, input_ids, max_new_tokens, temperature=temperature, top_k=top_k, top_p=top_p,
                        seed=seed, eos_token_id=eos_token_id, attention_mask=attention_mask)

    @classmethod
    def from_pretrained(cls, path: str | os.PathLike, device: Any = None, dequantize: bool = True) -> Llama:
        """A model from a Hugging Face ``save_pretrained`` directory (``config.json`` with ``model.safetensors``
        or a sharded ``model.safetensors.index.json``) or a ``.gguf`` file. Every key and shape is checked
        against the config before the model is built; float16/bfloat16 weights are cast to float32. With
        ``dequantize=False`` a GGUF file's block-quantized projections and head stay in their blocks as
        ``zyx.nn.QuantizedLinear`` layers (the embedding table is expanded to float32)."""
        path = Path(path)
        if path.suffix in PICKLE_SUFFIXES:
            raise CheckpointError(f"{path}: pickle checkpoints (.bin/.pt/.pth) can run code when loaded; zyx reads "
                                  "safetensors (save with save_pretrained(safe_serialization=True)) or GGUF")
        if path.suffix == ".gguf":
            from zyx.models.llama_gguf import load_gguf_checkpoint

            hf_config, weights = load_gguf_checkpoint(path, device=device, dequantize=dequantize)
        else:
            hf_config, weights = _read_hf_dir(path, device)
        config = LlamaConfig.from_hf(hf_config)
        if config.tie_word_embeddings and "lm_head.weight" not in weights and "model.embed_tokens.weight" in weights:
            weights["lm_head.weight"] = weights["model.embed_tokens.weight"]
        check_weights(config, weights)
        blocks = {k: w for k, w in weights.items() if isinstance(w, QuantizedWeight)}
        if "model.embed_tokens.weight" in blocks:  # an embedding reads a row a token: its table is expanded
            weights["model.embed_tokens.weight"] = blocks.pop("model.embed_tokens.weight").dequantize()
        # half-precision checkpoints compute in float32 (zyx emulates 16-bit arithmetic op by op on most devices)
        weights = {k: t.float() if t.dtype.is_float and t.dtype.itemsize < 4 else t for k, t in weights.items()
                   if k not in blocks}
        skip = _RANDOM_INIT.set(False)
        try:
            model = cls(config)
        finally:
            _RANDOM_INIT.reset(skip)
        if device is not None:
            model.to(device)
        for name, weight in blocks.items():  # each such linear layer becomes a QuantizedLinear over the blocks
            owner = name.removesuffix(".weight")
            parent, _, child = owner.rpartition(".")
            setattr(model.get_submodule(parent), child,
                    QuantizedLinear.from_weight(weight, weights.pop(f"{owner}.bias", None)))
        model.load_state_dict(weights, assign=True, strict=not blocks)
        if config.tie_word_embeddings and not isinstance(model.lm_head, QuantizedLinear):
            model.lm_head.weight = model.model.embed_tokens.weight
        return model.eval()


def expected_shapes(c: LlamaConfig) -> dict[str, tuple[int, ...]]:
    """Every parameter name of the model and its shape, from the config alone."""
    h, kv, qd = c.hidden_size, c.num_key_value_heads * c.head_dim, c.num_attention_heads * c.head_dim
    shapes = {"model.embed_tokens.weight": (c.vocab_size, h), "model.norm.weight": (h,),
              "lm_head.weight": (c.vocab_size, h)}
    for i in range(c.num_hidden_layers):
        p = f"model.layers.{i}."
        proj = {"q_proj": (qd, c.qkv_bias), "k_proj": (kv, c.qkv_bias), "v_proj": (kv, c.qkv_bias)}
        for name, (out, bias) in proj.items():
            shapes[f"{p}self_attn.{name}.weight"] = (out, h)
            if bias:
                shapes[f"{p}self_attn.{name}.bias"] = (out,)
        shapes[f"{p}self_attn.o_proj.weight"] = (h, qd)
        if c.o_bias:
            shapes[f"{p}self_attn.o_proj.bias"] = (h,)
        for name, shape in (("gate_proj", (c.intermediate_size, h)), ("up_proj", (c.intermediate_size, h)),
                            ("down_proj", (h, c.intermediate_size))):
            shapes[f"{p}mlp.{name}.weight"] = shape
            if c.mlp_bias:
                shapes[f"{p}mlp.{name}.bias"] = (shape[0],)
        shapes[f"{p}input_layernorm.weight"] = (h,)
        shapes[f"{p}post_attention_layernorm.weight"] = (h,)
    return shapes


def check_weights(config: LlamaConfig, weights: dict[str, Any]) -> None:
    """Raise before anything is built: ``StateDictError`` listing missing and unexpected keys (as
    ``load_state_dict(strict=True)``), ``ShapeError`` listing every weight whose shape the config contradicts."""
    want = expected_shapes(config)
    # rotary tables some exporters keep: recomputed from the config, so not an unexpected key
    extra = [k for k in weights if k not in want and not k.endswith("rotary_emb.inv_freq")]
    missing = [k for k in want if k not in weights]
    errors = []
    if missing:
        errors.append("Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in missing) + ".")
    if extra:
        errors.append("Unexpected key(s) in state_dict: " + ", ".join(f'"{k}"' for k in extra) + ".")
    if errors:
        raise StateDictError("Error(s) in loading state_dict for Llama:\n\t" + "\n\t".join(errors))
    for k in [k for k in weights if k.endswith("rotary_emb.inv_freq")]:
        del weights[k]
    bad = [f"{k}: checkpoint {tuple(weights[k].shape)}, config gives {s}" for k, s in want.items()
           if tuple(weights[k].shape) != s]
    if bad:
        raise ShapeError(f"Llama: the config ({config.model_type}, hidden {config.hidden_size}, "
                         f"{config.num_attention_heads} heads / {config.num_key_value_heads} kv heads, head_dim "
                         f"{config.head_dim}, vocab {config.vocab_size}) does not match the weights:\n\t"
                         + "\n\t".join(bad))


def _read_hf_dir(path: Path, device: Any) -> tuple[dict, dict[str, Tensor]]:
    if not path.is_dir():
        raise CheckpointError(f"{path}: expected a save_pretrained directory (config.json + safetensors) or a "
                              ".gguf file")
    config_file = path / "config.json"
    if not config_file.is_file():
        raise CheckpointError(f"{path}: no config.json")
    with open(config_file, encoding="utf-8") as f:
        config = json.load(f)
    for name in ("model.safetensors", "model.safetensors.index.json"):
        if (path / name).is_file():
            return config, load_file(path / name, device)
    pickles = sorted(p.name for p in path.iterdir() if p.suffix in PICKLE_SUFFIXES)
    hint = (f"; found only pickle files ({', '.join(pickles)}), which zyx refuses: they can run code when loaded. "
            "Re-save them as safetensors (save_pretrained(safe_serialization=True))" if pickles else "")
    raise CheckpointError(f"{path}: no model.safetensors or model.safetensors.index.json{hint}")
