"""Train an MLP on scikit-learn's bundled 8x8 digits (no download) with zyx.nn and zyx.optim.Adam.

Checks its own result: exits non-zero below 95% test accuracy. Saves the loss curve as a PNG when
matplotlib is installed. Needs the examples extra: ``pip install "zyx[examples]"``.
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from tqdm import tqdm

import zyx
from zyx import nn
from zyx.nn import functional as F
from zyx.utils.data import DataLoader, TensorDataset

TARGET = 0.95


def save_loss_curve(losses: list[float], path: str, title: str) -> None:
    """The per-step training loss as a PNG; skipped silently without matplotlib."""
    try:
        import matplotlib
    except ImportError:
        return
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(losses, lw=1)
    ax.set(xlabel="step", ylabel="cross-entropy loss", title=title, yscale="log")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    print(f"loss curve saved to {path}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--plot", default="train_mlp_loss.png", help="PNG path for the loss curve ('' for none)")
    args = ap.parse_args()

    zyx.manual_seed(0)
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)  # pixel values 0..16
    y = digits.target.astype(np.int64)
    x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.2, random_state=0, stratify=y)

    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Dropout(0.2),
                          nn.Linear(256, 256), nn.ReLU(), nn.Dropout(0.2), nn.Linear(256, 10))
    opt = zyx.optim.Adam(model.parameters(), lr=args.lr)
    sched = zyx.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.epochs)
    print(model)

    losses: list[float] = []
    # full batches only (reshuffled each epoch): one set of kernel shapes to compile; one upload per batch
    loader = DataLoader(TensorDataset(x_train, y_train), batch_size=args.batch_size, shuffle=True, drop_last=True,
                        generator_seed=0)
    start = time.perf_counter()
    model.train()
    for epoch in range(args.epochs):
        bar = tqdm(loader, desc=f"epoch {epoch + 1}/{args.epochs}", leave=False, file=sys.stdout)
        for xb, yb in bar:
            loss = F.cross_entropy(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
            bar.set_postfix(loss=f"{losses[-1]:.4f}", refresh=False)
        sched.step()
    train_s = time.perf_counter() - start

    model.eval()
    with zyx.no_grad():
        pred = model(zyx.tensor(x_test)).numpy().argmax(axis=1)
    acc = float((pred == y_test).mean())
    print(f"trained {args.epochs} epochs ({len(losses)} steps) in {train_s:.1f} s; final loss {losses[-1]:.4f}")
    print(f"test accuracy: {acc:.2%} ({len(y_test)} images)")
    if args.plot:
        save_loss_curve(losses, args.plot, "MLP on digits")
    if acc < TARGET:
        print(f"FAILED: test accuracy {acc:.2%} is below {TARGET:.0%}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
