"""Generate text with a Llama-family model (Llama, Qwen2, Mistral) on zyx: ``zyx.models.llama.Llama``.

The model is a Hugging Face ``save_pretrained`` directory (``config.json`` + safetensors, sharded or not) or a
GGUF file. The prompt is token ids (``--prompt-ids 1,2,3``) or, when the directory holds a ``tokenizer.json``
and the ``tokenizers`` package is installed, text (``--prompt "Once upon a time"``). Prints the tokens (and the
text when there is a tokenizer) and the speed of the prefill and of the decode steps separately: the decode
step is one replayed ``zyx.jit`` plan over ring-buffer KV caches.

    python examples/generate.py MODEL_DIR_OR_GGUF --prompt "Hello" [--max-new-tokens 32] [--temperature 0]
        [--top-k 40] [--top-p 0.9] [--seed 0]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

try:
    import zyx
except ImportError:  # run from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    import zyx
from zyx.models.decoding import Decoder, sample
from zyx.models.llama import Llama


def load_tokenizer(path: Path) -> Any:
    """The directory's ``tokenizer.json`` through the ``tokenizers`` package, or None."""
    file = path / "tokenizer.json" if path.is_dir() else None
    if file is None or not file.is_file():
        return None
    try:
        from tokenizers import Tokenizer
    except ImportError:
        print("tokenizer.json found but the tokenizers package is not installed: give --prompt-ids")
        return None
    return Tokenizer.from_file(str(file))


def generate(model: Llama, prompt: np.ndarray, new: int, temperature: float, top_k: int | None,
             top_p: float | None, seed: int | None, eos: set[int]) -> tuple[list[int], float, float]:
    """``model.generate``'s loop written out so the prefill and the decode steps are timed apart: the new
    tokens, the prefill seconds and the decode seconds."""
    rng = np.random.default_rng(seed)

    def pick(logits: Any, chosen: Any) -> int:
        if temperature == 0:
            return int((chosen if chosen is not None else logits.argmax(-1)).numpy()[0])
        return int(sample(logits.numpy(), temperature, top_k, top_p, rng)[0])

    length = prompt.shape[1]
    start = time.perf_counter()
    dec = Decoder(model, 1, length + new)
    token = pick(dec.prefill(prompt, np.ones_like(prompt)), None)
    prefill = time.perf_counter() - start
    tokens = [token]
    start = time.perf_counter()
    for i in range(new - 1):
        if token in eos:
            break
        logits, chosen = dec(zyx.tensor([[token]]), zyx.tensor([[length + i]]), length + i)
        token = pick(logits, chosen)
        tokens.append(token)
    return tokens, prefill, time.perf_counter() - start


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", type=Path, help="a save_pretrained directory or a .gguf file")
    ap.add_argument("--prompt", help="text (needs tokenizer.json and the tokenizers package)")
    ap.add_argument("--prompt-ids", help="comma-separated token ids, e.g. 1,2,3")
    ap.add_argument("--max-new-tokens", type=int, default=32)
    ap.add_argument("--temperature", type=float, default=0.0, help="0: greedy")
    ap.add_argument("--top-k", type=int)
    ap.add_argument("--top-p", type=float)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    start = time.perf_counter()
    model = Llama.from_pretrained(args.model)
    print(f"loaded {args.model} ({model.config.model_type}, {model.config.num_hidden_layers} layers, hidden "
          f"{model.config.hidden_size}, vocab {model.config.vocab_size}) in {time.perf_counter() - start:.2f} s")
    tokenizer = load_tokenizer(args.model)
    if args.prompt_ids:
        ids = [int(t) for t in args.prompt_ids.split(",") if t.strip()]
    elif args.prompt is not None and tokenizer is not None:
        ids = tokenizer.encode(args.prompt).ids
    else:
        print("give --prompt-ids (or --prompt with a model directory that has tokenizer.json)", file=sys.stderr)
        return 2
    if not ids or max(ids) >= model.config.vocab_size or min(ids) < 0:
        print(f"prompt ids must be in [0, {model.config.vocab_size}), got {ids}", file=sys.stderr)
        return 2
    eos_id = model.config.eos_token_id
    eos = set() if eos_id is None else {int(e) for e in np.atleast_1d(eos_id)}
    prompt = np.array([ids], np.int64)
    new, prefill_s, decode_s = generate(model, prompt, args.max_new_tokens, args.temperature, args.top_k,
                                        args.top_p, args.seed, eos)
    print("prompt ids:", ids)
    print("new ids:   ", new)
    if tokenizer is not None:
        print("text:", tokenizer.decode(ids + new))
    print(f"prefill: {len(ids)} tokens in {prefill_s * 1e3:.1f} ms ({len(ids) / prefill_s:.1f} tokens/s)")
    if len(new) > 1:
        print(f"decode:  {len(new) - 1} tokens in {decode_s * 1e3:.1f} ms ({(len(new) - 1) / decode_s:.1f} tokens/s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
