"""Whole models against PyTorch CPU (2 threads), in one run (issue 30): the same model code, written once against
the PyTorch API that zyx follows (``lib.nn...`` with ``lib`` = zyx or torch), run by PyTorch, by zyx eagerly and
by zyx through ``@zyx.jit`` (a captured step replayed), on the same initial weights (zyx's ``state_dict`` loaded
into PyTorch) and the same inputs.

Rows (float32):

* ``mlp``: MLP 784-1024-1024-10 (ReLU), Adam, batch 256, train step;
* ``cnn``: two blocks conv3x3 (padding 1)-BatchNorm2d-ReLU-MaxPool2d(2) of 32 and 64 channels, Flatten, Linear to
  10, on 1x28x28, Adam, batch 64, train step;
* ``gpt``: a character-level GPT (4 pre-norm layers, d_model 256, 4 heads, context 128, vocabulary 65, learned
  positions, ``scaled_dot_product_attention(is_causal=True)``, exact GELU MLP of 4x, no weight tying), AdamW,
  batch 16, train step;
* ``encoder``: ``nn.TransformerEncoder`` of 6 ``TransformerEncoderLayer(384, 12, 1536, activation="gelu",
  batch_first=True)``, inference (``eval()``, no_grad), batch 32, sequence 128;
* ``gpt_infer``: the GPT's full forward to the logits, batch 1, sequence 128, inference;
* ``gpt_decode``: the GPT's decode step with a KV cache, one new token at position 64 after a 64-token prefix:
  per layer the cache tensors (1, heads, 128, head_dim) get the token's keys and values written at the position,
  and the token attends over the first 65 slots. PyTorch writes with ``cache[:, :, p:p+1] = k``, zyx with
  ``zyx.write_slice_rotating`` at a bound ``zyx.Variable`` (no wrap below 128), and both attend over
  ``cache.narrow(2, 0, n)`` (n a bound Variable on zyx): the same work, and one zyx plan for every position.

A train step is what a training loop runs: the batch uploaded from NumPy, forward, cross_entropy, zero_grad,
backward, the optimizer's step, the loss read back (the sync point). An inference step is the forward on an
input already on the device, realized and synchronized (zyx) / returned (PyTorch). The jitted train step has its
own model and optimizer with the same weights (a replay updates its own parameters).

Before timing, each row checks that the libraries compute the same thing: the losses of two train steps on the
same batch (the second one after the optimizer's update), or the outputs of an inference step; a row that
disagrees beyond a loose tolerance says so in its ``check`` cell and on a ``# WARNING`` line (a benchmark of a
wrong computation is worthless). The decode row also checks its logits against the full forward of the 65 tokens.

Columns: best and median ms per step of PyTorch, zyx eager and zyx jit (``timing.alternating``: ``--rounds``
rounds, each a block of ``--block`` timed steps per implementation after one untimed one); ``x_torch`` and
``x_torch_jit``: PyTorch's best over zyx's best (above 1: zyx is faster); ``kernels`` / ``kernels_jit``: the
change of ``zyx.kernel_count()`` over one step; ``device_ms`` / ``device_ms_jit``: the device time of one
step's kernels (``zyx.profiler``; the rest of the step's time is the host's: recording, scheduling, launching,
reading back); ``gflops`` / ``gflops_jit``: the model's FLOPs over zyx's best
time. FLOPs are counted analytically, matmuls and convolutions only: 2*M*N*K for each (a convolution: 2 * output
elements * in_channels * kernel area; attention: 2*T*S*head_dim for scores and again for the weighted values, over
every (T, S) pair, the causal half included), a train step 3x its forward (backward = 2x forward); elementwise
ops, norms, softmax and the optimizer are not counted.

    python bench/bench_models.py [--rounds N] [--block N] [--only mlp,cnn,gpt,encoder,gpt_infer,gpt_decode] [--quick]
"""
from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import zyx  # noqa: E402 - after the path insert (runs from a checkout)
from zyx.backend.timing import alternating  # noqa: E402

WORKLOADS = ("mlp", "cnn", "gpt", "encoder", "gpt_infer", "gpt_decode")
LOSS_RTOL = 2e-3  # two train steps' losses, zyx vs PyTorch
OUT_RTOL = 2e-3  # an inference output's largest difference over its largest magnitude
DECODE_PREFIX = 64  # the decode step's position: after a prefix of this many tokens
Steps = dict[str, Callable[[], Any]]  # one step of each implementation: "torch", "zyx", "zyx jit"


# ---------------------------------------------------------------- the models, written once for both libraries

def mlp(lib: Any) -> Any:
    nn = lib.nn
    return nn.Sequential(nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10))


def cnn(lib: Any) -> Any:
    nn = lib.nn
    return nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(64 * 7 * 7, 10))


@dataclass(frozen=True)
class GPTConfig:
    vocab: int = 65
    ctx: int = 128
    d: int = 256
    heads: int = 4
    layers: int = 4


def gpt(lib: Any, cfg: GPTConfig = GPTConfig()) -> Any:
    """A character-level GPT built from ``lib``'s modules (see the module docstring)."""
    nn, F = lib.nn, lib.nn.functional
    hd = cfg.d // cfg.heads

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln1 = nn.LayerNorm(cfg.d)
            self.qkv = nn.Linear(cfg.d, 3 * cfg.d)
            self.proj = nn.Linear(cfg.d, cfg.d)
            self.ln2 = nn.LayerNorm(cfg.d)
            self.fc = nn.Linear(cfg.d, 4 * cfg.d)
            self.fc_out = nn.Linear(4 * cfg.d, cfg.d)

        def heads(self, x: Any) -> tuple[Any, Any, Any]:
            """q, k, v of ``x`` (B, T, d), each (B, heads, T, head_dim)."""
            b, t, _ = x.shape
            qkv = self.qkv(self.ln1(x)).reshape(b, t, 3, cfg.heads, hd).permute(2, 0, 3, 1, 4)
            return qkv[0], qkv[1], qkv[2]

        def mix(self, x: Any, y: Any) -> Any:
            """The attention's output ``y`` (B, heads, T, head_dim) added to ``x``, then the MLP."""
            b, t, _ = x.shape
            x = x + self.proj(y.transpose(1, 2).reshape(b, t, cfg.d))
            return x + self.fc_out(F.gelu(self.fc(self.ln2(x))))

        def forward(self, x: Any) -> Any:
            q, k, v = self.heads(x)
            return self.mix(x, F.scaled_dot_product_attention(q, k, v, is_causal=True))

    class GPT(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.tok = nn.Embedding(cfg.vocab, cfg.d)
            self.pos = nn.Embedding(cfg.ctx, cfg.d)
            self.blocks = nn.ModuleList([Block() for _ in range(cfg.layers)])
            self.ln_f = nn.LayerNorm(cfg.d)
            self.head = nn.Linear(cfg.d, cfg.vocab, bias=False)

        def forward(self, idx: Any) -> Any:
            x = self.tok(idx) + self.pos.weight[:idx.shape[1]]
            for block in self.blocks:
                x = block(x)
            return self.head(self.ln_f(x))

        def prefill(self, idx: Any, caches: list[tuple[Any, Any]], write: Callable[[Any, Any, Any], None]) -> None:
            """Write the keys and values of the prefix ``idx`` (1, T) into the caches' first T slots."""
            x = self.tok(idx) + self.pos.weight[:idx.shape[1]]
            for block, (kc, vc) in zip(self.blocks, caches):
                q, k, v = block.heads(x)
                write(kc, k, 0)
                write(vc, v, 0)
                x = block.mix(x, F.scaled_dot_product_attention(q, k, v, is_causal=True))

        def decode(self, token: Any, caches: list[tuple[Any, Any]], pos: Any, n: Any,
                   write: Callable[[Any, Any, Any], None]) -> Any:
            """Logits (1, 1, vocab) of one token (1, 1) at position ``pos``, attending over cache slots [0, n)
            (n = pos + 1; ``pos`` and ``n`` are ints or bound ``zyx.Variable``\\ s)."""
            x = self.tok(token) + self.pos.weight.narrow(0, pos, 1)
            for block, (kc, vc) in zip(self.blocks, caches):
                q, k, v = block.heads(x)
                write(kc, k, pos)
                write(vc, v, pos)
                x = block.mix(x, F.scaled_dot_product_attention(q, kc.narrow(2, 0, n), vc.narrow(2, 0, n)))
            return self.head(self.ln_f(x))

    return GPT()


def encoder(lib: Any) -> Any:
    nn = lib.nn
    layer = nn.TransformerEncoderLayer(384, 12, 1536, dropout=0.0, activation="gelu", batch_first=True)
    return nn.TransformerEncoder(layer, 6, enable_nested_tensor=False)


def _torch_write(cache: Any, x: Any, pos: int) -> None:
    cache[:, :, pos:pos + x.shape[2]] = x


def _zyx_write(cache: Any, x: Any, pos: Any) -> None:
    zyx.write_slice_rotating(cache, x, 2, pos)


# ---------------------------------------------------------------- FLOPs (the rule: module docstring)

def _linear_flops(rows: int, *dims: int) -> int:
    """Forward FLOPs of a chain of Linear layers dims[0] -> dims[1] -> ... applied to ``rows`` rows."""
    return sum(2 * rows * a * b for a, b in zip(dims, dims[1:]))


def _transformer_flops(batch: int, t: int, s: int, d: int, ff: int, layers: int) -> int:
    """Forward FLOPs of ``layers`` attention+MLP layers on ``batch * t`` query rows attending over ``s`` keys."""
    rows = batch * t
    per_layer = 2 * rows * d * 3 * d + 2 * rows * d * d + 2 * rows * d * ff * 2 + 2 * 2 * batch * t * s * d
    return layers * per_layer


def _flops(name: str, cfg: GPTConfig, batch: int) -> int:
    c = cfg
    if name == "mlp":
        return 3 * _linear_flops(batch, 784, 1024, 1024, 10)
    if name == "cnn":
        conv = 2 * batch * 28 * 28 * 32 * 1 * 9 + 2 * batch * 14 * 14 * 64 * 32 * 9
        return 3 * (conv + _linear_flops(batch, 64 * 7 * 7, 10))
    if name == "encoder":
        return _transformer_flops(batch, 128, 128, 384, 1536, 6)
    if name == "gpt_decode":
        s = DECODE_PREFIX + 1
        return _transformer_flops(1, 1, s, c.d, 4 * c.d, c.layers) + _linear_flops(1, c.d, c.vocab)
    forward = (_transformer_flops(batch, c.ctx, c.ctx, c.d, 4 * c.d, c.layers)
               + _linear_flops(batch * c.ctx, c.d, c.vocab))
    return 3 * forward if name == "gpt" else forward


# ---------------------------------------------------------------- the steps of each library

def _same_weights(zyx_model: Any, torch_model: Any) -> None:
    import torch

    torch_model.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in zyx_model.state_dict().items()})


def _models(make: Callable[[Any], Any]) -> tuple[Any, Any, Any]:
    """zyx's model, PyTorch's and a second zyx model for the jitted step, all with zyx's initial weights."""
    import torch

    zyx.manual_seed(0)
    zm, tm, jm = make(zyx), make(torch), make(zyx)
    _same_weights(zm, tm)
    jm.load_state_dict(zm.state_dict())
    return zm, tm, jm


def _train_steps(make: Callable[[Any], Any], opt: str, lr: float, x: np.ndarray, y: np.ndarray,
                 flat: bool = False) -> tuple[dict[str, Callable[[], float]], Any]:
    """One optimizer step on the batch (x, y) in each library; ``flat``: the logits (B, T, V) and targets
    (B, T) are flattened for cross_entropy (the GPT)."""
    import torch

    zm, tm, jm = _models(make)
    for m in (zm, tm, jm):
        m.train()
    zopt = getattr(zyx.optim, opt)(zm.parameters(), lr=lr)
    jopt = getattr(zyx.optim, opt)(jm.parameters(), lr=lr)
    topt = getattr(torch.optim, opt)(tm.parameters(), lr=lr)

    def loss_of(lib: Any, model: Any, xb: Any, yb: Any) -> Any:
        out = model(xb)
        if flat:
            out, yb = out.reshape(-1, out.shape[-1]), yb.reshape(-1)
        return lib.nn.functional.cross_entropy(out, yb)

    @zyx.jit
    def jitted(xb: Any, yb: Any) -> Any:  # forward, backward and the optimizer replayed as one plan
        loss = loss_of(zyx, jm, xb, yb)
        jopt.zero_grad()
        loss.backward()
        jopt.step()
        return loss

    def zyx_step() -> float:
        loss = loss_of(zyx, zm, zyx.tensor(x), zyx.tensor(y))
        zopt.zero_grad()
        loss.backward()
        zopt.step()
        return loss.item()

    def jit_step() -> float:
        return jitted(zyx.tensor(x), zyx.tensor(y)).item()

    def torch_step() -> float:
        loss = loss_of(torch, tm, torch.from_numpy(x), torch.from_numpy(y))
        topt.zero_grad()
        loss.backward()
        topt.step()
        return loss.item()

    return {"torch": torch_step, "zyx": zyx_step, "zyx jit": jit_step}, jitted


def _check_train(steps: dict[str, Callable[[], float]], label: str = "") -> str:
    """Two steps of each implementation on the same batch: their losses agree within LOSS_RTOL."""
    losses = {name: [fn(), fn()] for name, fn in steps.items()}
    ref = losses["torch"]
    bad = [f"{name} {a:.6g}/{b:.6g} vs torch {ref[0]:.6g}/{ref[1]:.6g}" for name, (a, b) in losses.items()
           if not all(math.isclose(u, v, rel_tol=LOSS_RTOL) for u, v in zip((a, b), ref))]
    print(f"# {label}losses of steps 1/2: " + ", ".join(f"{n} {a:.6g}/{b:.6g}" for n, (a, b) in losses.items()))
    return "MISMATCH: " + "; ".join(bad) if bad else "ok"


def _infer_steps(make: Callable[[Any], Any], x: np.ndarray, label: str = "") -> tuple[Steps, Any, str]:
    """The forward on ``x`` in each library (eval, no grad), and the check of zyx's outputs against PyTorch's."""
    import torch

    zm, tm, _ = _models(make)
    zm.eval()
    tm.eval()
    zx, tx = zyx.tensor(x).realize(), torch.from_numpy(x)

    @zyx.jit
    def jitted(xb: Any) -> Any:
        return zm(xb)

    def zyx_step() -> Any:
        with zyx.no_grad():
            out = zm(zx).realize()
        zyx.synchronize()
        return out

    def jit_step() -> Any:
        with zyx.no_grad():
            out = jitted(zx).realize()
        zyx.synchronize()
        return out

    def torch_step() -> Any:
        with torch.inference_mode():
            return tm(tx)

    steps = {"torch": torch_step, "zyx": zyx_step, "zyx jit": jit_step}
    return steps, jitted, _check_outputs({name: fn() for name, fn in steps.items()}, label=label)


def _check_outputs(outs: dict[str, Any], ref_name: str = "PyTorch", label: str = "") -> str:
    """Each output against ``outs["torch"]``: the largest difference over the largest magnitude, within
    OUT_RTOL."""
    ref = outs["torch"].numpy()
    scale = float(np.abs(ref).max())
    errs = {name: float(np.abs(out.numpy() - ref).max()) / scale for name, out in outs.items() if name != "torch"}
    print(f"# {label}largest difference to {ref_name} over its largest magnitude: "
          + ", ".join(f"{n} {e:.2e}" for n, e in errs.items()))
    bad = [f"{n} off by {e:.2e} of the largest magnitude" for n, e in errs.items() if not e <= OUT_RTOL]
    return "MISMATCH: " + "; ".join(bad) if bad else "ok"


def _decode_steps(cfg: GPTConfig, prefix: int = DECODE_PREFIX, label: str = "") -> tuple[Steps, Any, str]:
    """One decode step at position ``prefix`` after a prefix of ``prefix`` tokens, in each library."""
    import torch

    zm, tm, _ = _models(lambda lib: gpt(lib, cfg))
    zm.eval()
    tm.eval()
    hd = cfg.d // cfg.heads
    tokens = np.random.default_rng(3).integers(0, cfg.vocab, (1, prefix + 1))
    shape = (1, cfg.heads, cfg.ctx, hd)
    zcaches = [(zyx.zeros(*shape).realize(), zyx.zeros(*shape).realize()) for _ in range(cfg.layers)]
    jcaches = [(zyx.zeros(*shape).realize(), zyx.zeros(*shape).realize()) for _ in range(cfg.layers)]
    tcaches = [(torch.zeros(shape), torch.zeros(shape)) for _ in range(cfg.layers)]
    with zyx.no_grad():
        for caches in (zcaches, jcaches):
            zm.prefill(zyx.tensor(tokens[:, :prefix]), caches, _zyx_write)
            for kc, vc in caches:
                kc.realize()
                vc.realize()
    with torch.inference_mode():
        tm.prefill(torch.from_numpy(tokens[:, :prefix]), tcaches, _torch_write)
    p_var, n_var = zyx.Variable("pos", 0, cfg.ctx - 1), zyx.Variable("n", 1, cfg.ctx)
    ztok, ttok = zyx.tensor(tokens[:, prefix:]).realize(), torch.from_numpy(tokens[:, prefix:])

    @zyx.jit
    def jitted(token: Any, caches: list[tuple[Any, Any]], pos: Any, n: Any) -> Any:
        return zm.decode(token, caches, pos, n, _zyx_write)

    def zyx_step() -> Any:
        with zyx.no_grad():
            out = zm.decode(ztok, zcaches, p_var.bind(prefix), n_var.bind(prefix + 1), _zyx_write).realize()
        zyx.synchronize()
        return out

    def jit_step() -> Any:
        with zyx.no_grad():
            out = jitted(ztok, jcaches, p_var.bind(prefix), n_var.bind(prefix + 1)).realize()
        zyx.synchronize()
        return out

    def torch_step() -> Any:
        with torch.inference_mode():
            return tm.decode(ttok, tcaches, prefix, prefix + 1, _torch_write)

    steps = {"torch": torch_step, "zyx": zyx_step, "zyx jit": jit_step}
    check = _check_outputs({name: fn() for name, fn in steps.items()}, label=label)
    with torch.inference_mode():  # the KV-cache code itself: the full forward's logits at the position
        full = tm(torch.from_numpy(tokens))[:, prefix:]
    full_check = _check_outputs({"torch": full, "torch decode": torch_step()}, "the full forward", label)
    if full_check != "ok":
        check = f"{'' if check == 'ok' else check + '; '}decode vs the full forward: {full_check}"
    return steps, jitted, check


def _device_time_per_step(step: Callable[[], Any]) -> float:
    """Device time (ms) of the kernels of one call of ``step``, from ``zyx.profiler`` (the step's wall time
    beside it shows how much of it is host time: recording, scheduling, launching)."""
    with zyx.profiler.profile() as prof:
        step()
        zyx.synchronize()
    return prof.device_time_total() / 1e3


def _kernels_per_step(step: Callable[[], Any]) -> int:
    before = zyx.kernel_count()
    step()
    zyx.synchronize()
    return zyx.kernel_count() - before


# ---------------------------------------------------------------- the rows

@dataclass
class Workload:
    title: str
    batch: int
    steps: Steps
    jitted: Any  # the zyx.jit function behind "zyx jit"
    check: str  # "ok", or what disagreed


def _workload(name: str, cfg: GPTConfig, rng: np.random.Generator) -> Workload:
    label = f"{name}: "
    if name == "mlp":
        x, y = rng.standard_normal((256, 784), dtype=np.float32), rng.integers(0, 10, 256)
        steps, jitted = _train_steps(mlp, "Adam", 1e-3, x, y)
        return Workload("MLP 784-1024-1024-10 train step (Adam), batch 256", 256, steps, jitted,
                        _check_train(steps, label))
    if name == "cnn":
        x, y = rng.standard_normal((64, 1, 28, 28), dtype=np.float32), rng.integers(0, 10, 64)
        steps, jitted = _train_steps(cnn, "Adam", 1e-3, x, y)
        return Workload("CNN 2x(conv3x3-BN-ReLU-pool) 32/64 ch + linear, train step (Adam), batch 64, 1x28x28", 64,
                        steps, jitted, _check_train(steps, label))
    if name == "gpt":
        idx = rng.integers(0, cfg.vocab, (16, cfg.ctx + 1))
        steps, jitted = _train_steps(lambda lib: gpt(lib, cfg), "AdamW", 3e-4, idx[:, :-1], idx[:, 1:], flat=True)
        return Workload(f"GPT {cfg.layers}L d{cfg.d} {cfg.heads}h ctx {cfg.ctx} train step (AdamW), batch 16", 16,
                        steps, jitted, _check_train(steps, label))
    if name == "encoder":
        steps, jitted, check = _infer_steps(encoder, rng.standard_normal((32, 128, 384), dtype=np.float32), label)
        return Workload("TransformerEncoder 6L d384 12h ff1536 gelu, inference, batch 32, seq 128", 32, steps, jitted,
                        check)
    if name == "gpt_infer":
        steps, jitted, check = _infer_steps(lambda lib: gpt(lib, cfg), rng.integers(0, cfg.vocab, (1, cfg.ctx)), label)
        return Workload(f"GPT forward (logits), inference, batch 1, seq {cfg.ctx}", 1, steps, jitted, check)
    if name == "gpt_decode":
        steps, jitted, check = _decode_steps(cfg, label=label)
        return Workload(f"GPT decode step, KV cache, 1 token at position {DECODE_PREFIX}", 1, steps, jitted, check)
    raise ValueError(f"unknown workload {name!r}; choose from {', '.join(WORKLOADS)}")


def _jit_note(jitted: Any) -> str:
    """Why the jitted step ran eagerly (its captures found no plan), or "" when it replays a plan."""
    reasons = {e.reason for entries in jitted.cache.values() for e in entries if e.plan is None}
    return "jit ran eagerly: " + "; ".join(sorted(map(str, reasons))) if reasons else ""


def run(quick: bool = False, rounds: int | None = None, block: int | None = None,
        only: Collection[str] = WORKLOADS) -> list[dict[str, Any]]:
    """One row per workload (the columns: module docstring); ``quick``: one round of one step each."""
    import torch

    torch.set_num_threads(2)
    rounds = rounds or (1 if quick else 5)
    block = block or (1 if quick else 3)
    cfg = GPTConfig()
    rows = []
    for name in (w for w in WORKLOADS if w in only):
        w = _workload(name, cfg, np.random.default_rng(0))
        if w.check != "ok":
            print(f"# WARNING {name}: zyx and PyTorch disagree: {w.check}")
        kernels = {impl: _kernels_per_step(w.steps[impl]) for impl in ("zyx", "zyx jit")}
        device = {impl: _device_time_per_step(w.steps[impl]) for impl in ("zyx", "zyx jit")}
        note = _jit_note(w.jitted)
        if note:
            print(f"# WARNING {name}: {note}")
        t = alternating(w.steps, rounds, block)
        flops = _flops(name, cfg, w.batch)
        row = {"workload": w.title, "torch_ms": t["torch"][0] * 1e3, "torch_median": t["torch"][1] * 1e3,
               "zyx_ms": t["zyx"][0] * 1e3, "zyx_median": t["zyx"][1] * 1e3,
               "jit_ms": t["zyx jit"][0] * 1e3, "jit_median": t["zyx jit"][1] * 1e3,
               "x_torch": t["torch"][0] / t["zyx"][0], "x_torch_jit": t["torch"][0] / t["zyx jit"][0],
               "kernels": kernels["zyx"], "kernels_jit": kernels["zyx jit"],
               "device_ms": device["zyx"], "device_ms_jit": device["zyx jit"],
               "gflops": flops / t["zyx"][0] / 1e9, "gflops_jit": flops / t["zyx jit"][0] / 1e9,
               "torch_gflops": flops / t["torch"][0] / 1e9}
        row["check"] = w.check + (f"; {note}" if note else "")
        rows.append(row)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=None, help="alternating rounds (default 5, --quick 1)")
    ap.add_argument("--block", type=int, default=None, help="timed steps per block (default 3, --quick 1)")
    ap.add_argument("--only", default=",".join(WORKLOADS))
    ap.add_argument("--quick", action="store_true", help="one round of one step each")
    args = ap.parse_args()
    from zyx.benchmarks import bench_header, markdown_table

    print(bench_header())
    print(f"# whole models on {zyx.default_device()}; PyTorch CPU at 2 threads\n")
    rows = run(args.quick, args.rounds, args.block, [w.strip() for w in args.only.split(",")])
    print(markdown_table(rows, titles={"x_torch": "torch_ms / zyx_ms", "x_torch_jit": "torch_ms / jit_ms"}))


if __name__ == "__main__":
    main()
