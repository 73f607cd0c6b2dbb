"""Train a small CNN (Conv2d, BatchNorm2d, ReLU, MaxPool2d, Linear) on scikit-learn's bundled 8x8 digits.

The images are 1x8x8; no download. Checks its own result: exits non-zero below 97% test accuracy.
Needs the examples extra: ``pip install "zyx[examples]"``.
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

TARGET = 0.97


def make_model() -> nn.Module:
    # one convolution block: on PoCL a cold run is dominated by compiling each new kernel, not by the steps
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),  # 32 x 4 x 4
        nn.Flatten(), nn.Linear(32 * 4 * 4, 10),
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--lr", type=float, default=1e-2)
    args = ap.parse_args()

    zyx.manual_seed(0)
    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)[:, None]  # (N, 1, 8, 8), pixel values 0..16
    y = digits.target.astype(np.int64)
    x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.2, random_state=0, stratify=y)

    model = make_model()
    opt = zyx.optim.Adam(model.parameters(), lr=args.lr)
    sched = zyx.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.epochs)
    print(model)

    # full batches only (reshuffled each epoch): one set of kernel shapes to compile; one upload per batch
    loader = DataLoader(TensorDataset(x_train, y_train), batch_size=args.batch_size, shuffle=True, drop_last=True,
                        generator_seed=0)
    steps = len(loader)
    start = time.perf_counter()
    model.train()
    loss_value = float("nan")
    for epoch in range(args.epochs):
        bar = tqdm(loader, desc=f"epoch {epoch + 1}/{args.epochs}", leave=False, file=sys.stdout)
        for xb, yb in bar:
            loss = F.cross_entropy(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            loss_value = loss.item()
            bar.set_postfix(loss=f"{loss_value:.4f}", refresh=False)
        sched.step()
    train_s = time.perf_counter() - start

    model.eval()  # BatchNorm2d normalizes with its running statistics from here on
    with zyx.no_grad():
        pred = model(zyx.tensor(x_test)).numpy().argmax(axis=1)
    acc = float((pred == y_test).mean())
    print(f"trained {args.epochs} epochs ({args.epochs * steps} steps) in {train_s:.1f} s; "
          f"final loss {loss_value:.4f}")
    print(f"test accuracy: {acc:.2%} ({len(y_test)} images)")
    if acc < TARGET:
        print(f"FAILED: test accuracy {acc:.2%} is below {TARGET:.0%}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
