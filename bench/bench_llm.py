"""Language-model inference: ``zyx.models.llama`` against Hugging Face ``transformers`` on PyTorch CPU (2 threads,
its ``DynamicCache`` KV cache), one run, alternating, on the same random weights.

The model is Llama-shaped (hidden 768, 12 layers, 12 heads / 4 KV heads, SwiGLU 2048, vocab 32000, float32): a
random ``LlamaForCausalLM`` saved with ``save_pretrained`` and loaded by ``Llama.from_pretrained``. Rows:
``prefill``: the prompt (batch 1, ``--prompt`` tokens) through the model (logits of the last position only, in
both), tokens/s; ``decode``: one token at a
time over the KV cache (zyx: the replayed ``zyx.jit`` plan over ring buffers), greedy, the argmax read back each
step as both libraries' generate loops do, tokens/s over ``--new`` tokens. The check column compares the greedy
tokens of the two libraries. ``x_torch``: zyx's tokens/s over PyTorch's (above 1: zyx is faster).

By default the rows come for float32 weights and, with the ``gguf`` package, for Q8_0 and Q4_0 weights (columns:
``x_zyx_float32``, the speed over zyx's own float32; ``weights_gb_s``, the weight bytes a decode step reads times
the decode tokens/s, to hold against the copy ceiling). ``--quantized q8_0|q4_0`` gives only that kind: it replaces
zyx's linear layers (the head too) by ``zyx.nn.QuantizedLinear`` over the
weights quantized by the ``gguf`` package (PyTorch stays float32; the check column then counts how many greedy
tokens still agree); it stops with a message when this build has no ``QuantizedLinear``.

    python bench/bench_llm.py [--quick] [--prompt 128] [--new 32] [--reps 2] [--quantized q8_0]
"""
from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import zyx
from zyx.backend.timing import SETTLE_SECONDS
from zyx.models.decoding import Decoder
from zyx.models.llama import Llama

SHAPE = dict(hidden_size=768, intermediate_size=2048, num_hidden_layers=12, num_attention_heads=12,
             num_key_value_heads=4, vocab_size=32000, max_position_embeddings=2048, bos_token_id=None,
             eos_token_id=None, pad_token_id=None)
QUICK = dict(SHAPE, hidden_size=256, intermediate_size=512, num_hidden_layers=4, num_attention_heads=8,
             num_key_value_heads=4, vocab_size=4096)


def quantized_linear(kind: str) -> Any:
    """``zyx.nn.QuantizedLinear``, or a clear stop when this build does not have it (it comes with the GGUF work)."""
    layer = getattr(zyx.nn, "QuantizedLinear", None)
    if layer is None or not hasattr(layer, "from_weight") or not hasattr(zyx.nn, "QuantizedWeight"):
        raise SystemExit(f"--quantized {kind}: this build has no zyx.nn.QuantizedLinear.from_weight / "
                         "QuantizedWeight (they come with the GGUF work); run without --quantized")
    try:
        import gguf  # noqa: F401 - quantizes the weights as llama.cpp does
    except ImportError:
        raise SystemExit(f"--quantized {kind}: needs the gguf package (pip install 'zyx[gguf]')") from None
    return layer


def quantize(model: Llama, kind: str) -> None:
    """Swap every linear layer of ``model`` (the head too; the embedding stays float32) for a
    ``zyx.nn.QuantizedLinear`` whose weight is the layer's quantized to ``kind`` by the gguf package."""
    import gguf

    layer = quantized_linear(kind)
    qtype = kind.upper()
    for _, module in list(model.named_modules()):
        for name, child in list(module._modules.items()):
            if isinstance(child, zyx.nn.Linear):
                w = child.weight.numpy()
                raw = gguf.quants.quantize(w, gguf.GGMLQuantizationType[qtype])
                blocks = zyx.tensor(np.ascontiguousarray(raw).view(np.uint8).reshape(w.shape[0], -1))
                weight = zyx.nn.QuantizedWeight(blocks.realize(), qtype, tuple(w.shape))
                setattr(module, name, layer.from_weight(weight, child.bias))


def zyx_run(model: Llama, prompt: np.ndarray, new: int) -> tuple[float, float, list[int]]:
    """Seconds of the prefill, seconds of ``new - 1`` decode steps, and the greedy tokens."""
    start = time.perf_counter()
    dec = Decoder(model, 1, prompt.shape[1] + new)
    token = int(dec.prefill(prompt, np.ones_like(prompt)).argmax(-1).numpy()[0])
    prefill = time.perf_counter() - start
    tokens = [token]
    start = time.perf_counter()
    for i in range(new - 1):
        _, chosen = dec(zyx.tensor([[token]]), zyx.tensor([[prompt.shape[1] + i]]), prompt.shape[1] + i)
        token = int(chosen.numpy()[0])
        tokens.append(token)
    return prefill, time.perf_counter() - start, tokens


def torch_run(model: Any, prompt: np.ndarray, new: int) -> tuple[float, float, list[int]]:
    import torch

    with torch.no_grad():
        start = time.perf_counter()
        out = model(torch.tensor(prompt), use_cache=True, logits_to_keep=1)  # the last position, as zyx
        token = int(out.logits[0, -1].argmax())
        prefill = time.perf_counter() - start
        key = "cache" if "cache" in out else "past_key_values"  # transformers 5 renamed the cache argument
        past, tokens = out[key], [token]
        start = time.perf_counter()
        for _ in range(new - 1):
            out = model(torch.tensor([[token]]), use_cache=True, **{key: past})
            past, token = out[key], int(out.logits[0, -1].argmax())
            tokens.append(token)
        return prefill, time.perf_counter() - start, tokens


def weight_bytes(model: Llama) -> int:
    """Bytes a decode step reads from the weights: every parameter and buffer but the embedding table (one row
    of it is read per token), quantized blocks as stored."""
    tensors = {**dict(model.named_parameters()), **dict(model.named_buffers())}
    return sum(t.numel() * t.dtype.itemsize for name, t in tensors.items() if "embed_tokens" not in name)


def run(quick: bool = False, prompt_len: int = 128, new: int = 32, reps: int | None = None,
        quantized: str | None = None) -> list[dict]:
    """Rows for float32 and (with the gguf package) Q8_0 and Q4_0 weights, or for ``quantized`` alone."""
    import torch
    import transformers

    kinds: list[str | None] = [quantized] if quantized else [None, "q8_0", "q4_0"]
    if quantized:
        quantized_linear(quantized)  # before minutes of model building
    elif importlib.util.find_spec("gguf") is None:
        kinds = [None]  # the quantized rows need the gguf package's quantizer
    torch.set_num_threads(2)
    torch.manual_seed(0)
    shape = QUICK if quick else SHAPE
    reps = (1 if quick else 2) if reps is None else reps
    hf = transformers.LlamaForCausalLM(transformers.LlamaConfig(**shape)).eval()
    models: dict[str, Llama] = {}
    with tempfile.TemporaryDirectory() as tmp:
        hf.save_pretrained(tmp)
        for kind in kinds:
            models[kind or "float32"] = model = Llama.from_pretrained(tmp)
            if kind:
                quantize(model, kind)
    prompt = np.random.default_rng(0).integers(0, shape["vocab_size"], (1, prompt_len))
    best = {name: [np.inf, np.inf] for name in (*models, "torch")}
    tokens = {}
    for model in models.values():
        zyx_run(model, prompt, 4)  # warm-up: compiles (the cache makes later processes load binaries instead)
    for _ in range(reps):
        for name in best:
            time.sleep(SETTLE_SECONDS)  # the other library's threads stop spinning before this one runs
            p, d, tokens[name] = torch_run(hf, prompt, new) if name == "torch" else zyx_run(models[name], prompt, new)
            best[name] = [min(best[name][0], p), min(best[name][1], d)]
    rows = []
    for label, model in models.items():
        same = sum(a == b for a, b in zip(tokens[label], tokens["torch"]))
        for phase, count, i in (("prefill", prompt_len, 0), ("decode", new - 1, 1)):
            z, t = count / best[label][i], count / best["torch"][i]
            row = {"workload": f"{phase} ({label}, d{shape['hidden_size']} x{shape['num_hidden_layers']}, "
                               f"prompt {prompt_len})", "zyx_tok_s": z, "torch_tok_s": t, "x_torch": z / t,
                   "x_zyx_float32": z / (count / best["float32"][i]) if "float32" in best else None,
                   "weights_mb": weight_bytes(model) / 2**20,
                   "weights_gb_s": weight_bytes(model) * z / 1e9 if phase == "decode" else None,
                   "check": f"greedy tokens equal to PyTorch's float32: {same}/{new}"}
            rows.append(row)
    return rows


if __name__ == "__main__":
    from zyx.benchmarks import bench_header, markdown_table

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a smaller model (hidden 256, 4 layers, vocab 4096)")
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--new", type=int, default=32)
    ap.add_argument("--reps", type=int, help="alternating rounds (default 2, 1 with --quick)")
    ap.add_argument("--quantized", choices=("q8_0", "q4_0"))
    args = ap.parse_args()
    print(bench_header())
    print(markdown_table(run(args.quick, args.prompt, args.new, args.reps, args.quantized)))
