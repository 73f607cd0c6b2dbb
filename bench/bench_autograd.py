"""Training-step benchmarks (issue 13): forward + backward against PyTorch CPU (2 threads).

Rows (float32, best and median of alternating blocks, the same weights and inputs in both):

* MLP 784-1024-1024-10, batch 256, relu, cross_entropy;
* one transformer encoder block (pre-norm: layer_norm, 4-head causal-free attention, residual,
  layer_norm, 4x gelu MLP, residual), batch 8, sequence 128, d 256, loss = mean of squares.

Each step is loss.backward() with every parameter's ``.grad`` realized and synchronized
(zyx) / the backward call returning (PyTorch). ``python bench/bench_autograd.py [--quick]``.
"""
from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import zyx
import zyx.nn.functional as F


def _weights(rng: np.random.Generator, shapes: list[tuple[int, ...]]) -> list[np.ndarray]:
    return [(rng.standard_normal(s) / np.sqrt(s[-1])).astype(np.float32) for s in shapes]


def _mlp(lib: Any, fn: Any, x: Any, y: Any, p: list[Any]) -> Any:
    h = fn.relu(fn.linear(x, p[0], p[1]))
    h = fn.relu(fn.linear(h, p[2], p[3]))
    return fn.cross_entropy(fn.linear(h, p[4], p[5]), y)


def _block(lib: Any, fn: Any, x: Any, p: list[Any], heads: int) -> Any:
    b, s, d = x.shape
    h = fn.layer_norm(x, (d,) if lib is not zyx else d, p[0], p[1])
    qkv = fn.linear(h, p[2], p[3])
    q, k, v = (qkv[..., i * d:(i + 1) * d].reshape(b, s, heads, d // heads).transpose(1, 2) for i in range(3))
    a = fn.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, s, d)
    x = x + fn.linear(a, p[4], p[5])
    h = fn.layer_norm(x, (d,) if lib is not zyx else d, p[6], p[7])
    x = x + fn.linear(fn.gelu(fn.linear(h, p[8], p[9])), p[10], p[11])
    return (x * x).mean()


def _steps(zyx_loss: Callable[[], Any], zyx_params: list[Any], torch_loss: Callable[[], Any],
           torch_params: list[Any]) -> tuple[Callable[[], None], Callable[[], None]]:
    """One training step's forward + backward in each library (zyx: gradients realized, synchronized)."""

    def zyx_step() -> None:
        zyx_loss().backward()
        for p in zyx_params:
            p.grad.realize()
            p.grad = None
        zyx.synchronize()

    def torch_step() -> None:
        torch_loss().backward()
        for p in torch_params:
            p.grad = None

    return zyx_step, torch_step


def _time(steps: dict[str, Callable[[], None]], rounds: int, block: int = 3) -> dict[str, tuple[float, float]]:
    times: dict[str, list[float]] = {k: [] for k in steps}
    for fn in steps.values():
        fn()
        fn()
    for _ in range(rounds):
        for name, fn in steps.items():
            fn()
            for _ in range(block):
                t0 = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - t0)
    return {k: (min(v) * 1e3, statistics.median(v) * 1e3) for k, v in times.items()}


def run(quick: bool = False) -> list[dict[str, Any]]:
    """The rows: workload, implementation, best and median ms, and zyx's ratio to PyTorch."""
    import torch
    import torch.nn.functional as TF

    torch.set_num_threads(2)
    rng = np.random.default_rng(0)
    rows = []
    batch = 64 if quick else 256
    mlp_w = _weights(rng, [(1024, 784), (1024,), (1024, 1024), (1024,), (10, 1024), (10,)])
    x, y = rng.standard_normal((batch, 784)).astype(np.float32), rng.integers(0, 10, batch)
    zp = [zyx.tensor(w, requires_grad=True) for w in mlp_w]
    tp = [torch.tensor(w, requires_grad=True) for w in mlp_w]
    zx, zy, tx, ty = zyx.tensor(x).realize(), zyx.tensor(y).realize(), torch.tensor(x), torch.tensor(y)

    zyx_mlp, torch_mlp = _steps(lambda: _mlp(zyx, F, zx, zy, zp), zp, lambda: _mlp(torch, TF, tx, ty, tp), tp)
    got = _time({"zyx": zyx_mlp, "torch": torch_mlp}, 2 if quick else 5)
    for impl, (best, med) in got.items():
        rows.append({"workload": f"MLP 784-1024-1024-10 fwd+bwd, batch {batch}", "impl": impl, "ms": round(best, 2),
                     "median_ms": round(med, 2), "x_torch": round(got["torch"][0] / best, 2)})

    b, s, d, heads = (2, 64, 256, 4) if quick else (8, 128, 256, 4)
    shapes = [(d,), (d,), (3 * d, d), (3 * d,), (d, d), (d,), (d,), (d,), (4 * d, d), (4 * d,), (d, 4 * d), (d,)]
    block_w = _weights(rng, shapes)
    block_w[0][:] = 1.0
    block_w[6][:] = 1.0
    xb = rng.standard_normal((b, s, d)).astype(np.float32)
    zb = [zyx.tensor(w, requires_grad=True) for w in block_w]
    tb = [torch.tensor(w, requires_grad=True) for w in block_w]
    zxb, txb = zyx.tensor(xb).realize(), torch.tensor(xb)

    zyx_block, torch_block = _steps(lambda: _block(zyx, F, zxb, zb, heads), zb,
                                    lambda: _block(torch, TF, txb, tb, heads), tb)
    got = _time({"zyx": zyx_block, "torch": torch_block}, 2 if quick else 5)
    for impl, (best, med) in got.items():
        rows.append({"workload": f"encoder block fwd+bwd, batch {b}, seq {s}, d {d}, {heads} heads", "impl": impl,
                     "ms": round(best, 2), "median_ms": round(med, 2), "x_torch": round(got["torch"][0] / best, 2)})
    return rows


if __name__ == "__main__":
    from zyx.benchmarks import bench_header, markdown_table

    print(bench_header())
    print(f"# autograd training steps on {zyx.default_device()}\n")
    print(markdown_table(run("--quick" in sys.argv), floats="", titles={"x_torch": "torch_ms / ms"}))
