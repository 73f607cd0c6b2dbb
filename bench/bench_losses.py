"""Class-index losses: ``F.cross_entropy`` in zyx vs PyTorch CPU (2 threads) and NumPy on the same inputs.

Rows (float32 logits, int64 class indices drawn uniformly, mean reduction): forward only, and forward +
backward (the logits' gradient realized). zyx picks each target's log-probability with a range-checked
gather (a target outside ``[0, C)`` raises ``IndexOutOfRange`` at readback, as PyTorch) whose gradient
is elementwise. NumPy computes the same with ``log_softmax`` by hand and ``take_along_axis`` (its
gradient ``(softmax - one_hot) / n``). Implementations are timed in alternating blocks of calls (best
and median of each), so load on the shared machine hits them alike. ``run(quick)`` returns the rows;
``python bench/bench_losses.py [--quick]`` prints them as a markdown table.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import zyx
import zyx.nn.functional as F
from zyx.backend.timing import alternating
from zyx.benchmarks import versus_torch


def _np_log_softmax(x: np.ndarray) -> np.ndarray:
    m = x.max(axis=1, keepdims=True)
    s = x - m
    return s - np.log(np.exp(s).sum(axis=1, keepdims=True))


def _np_loss(x: np.ndarray, y: np.ndarray, grad: bool) -> Any:
    lp = _np_log_softmax(x)
    loss = -np.take_along_axis(lp, y[:, None], axis=1).mean()
    if not grad:
        return loss
    g = np.exp(lp)
    np.put_along_axis(g, y[:, None], np.take_along_axis(g, y[:, None], axis=1) - 1.0, axis=1)
    return loss, g / y.size


def _calls(x: np.ndarray, y: np.ndarray, backward: bool) -> dict[str, Callable[[], Any]]:
    """One loss (and the logits' gradient with ``backward``) per library, on the same inputs."""
    import torch

    zx0, zy, ty = zyx.tensor(x).realize(), zyx.tensor(y).realize(), torch.from_numpy(y)
    # NumPy's class dim moved last and flattened: (N * d..., C)
    xf = np.moveaxis(x, 1, -1).reshape(-1, x.shape[1]) if x.ndim > 2 else x
    yf = y.reshape(-1)

    def zyx_call() -> Any:
        zx = zx0.detach()
        zx.requires_grad = backward
        loss = F.cross_entropy(zx, zy)
        if backward:
            loss.backward()
            zx.grad.realize()
        loss.realize()
        zyx.synchronize()
        return loss

    def torch_call() -> Any:
        tx = torch.from_numpy(x).requires_grad_(backward)
        loss = torch.nn.functional.cross_entropy(tx, ty)
        if backward:
            loss.backward()
        return loss

    return {"zyx": zyx_call, "torch": torch_call, "numpy": lambda: _np_loss(xf, yf, backward)}


def run(quick: bool = False) -> list[dict]:
    import torch

    torch.set_num_threads(2)
    reps = 2 if quick else 6
    rng = np.random.default_rng(0)
    out: list[dict] = []
    for shape in [(4096, 50), (2048, 1000), (8, 21, 64, 64)]:
        x = rng.normal(size=shape).astype(np.float32)
        y = rng.integers(0, shape[1], size=shape[:1] + shape[2:]).astype(np.int64)
        for backward in (False, True):
            times = alternating(_calls(x, y, backward), reps)
            op = f"cross_entropy {'fwd+bwd' if backward else 'fwd'}"
            out += versus_torch(op, "x".join(map(str, shape)), times)
    return out


if __name__ == "__main__":
    from zyx.benchmarks import bench_header, markdown_table

    print(bench_header())
    print(markdown_table(run("--quick" in sys.argv)))
