"""Train the digits CNN of train_cnn.py data-parallel: one process per rank, gradients averaged over ranks.

    torchrun --standalone --nproc_per_node=2 examples/train_ddp.py          # two ranks on this machine
    torchrun --nnodes=2 --node_rank=<0|1> --nproc_per_node=1 \\
        --master_addr=<node 0's address> --master_port=29500 examples/train_ddp.py         # two machines
    python examples/train_ddp.py                                             # one rank, no launcher

Each rank reads its share of every epoch's shuffled samples (``DistributedSampler``), wraps the model in
``zyx.nn.parallel.DistributedDataParallel`` and steps its own Adam on the averaged gradients, so the
ranks' parameters stay equal. Ranks on one machine split its cores (each PoCL gets its share). Rank 0
shows progress; every rank prints the test loss of its final parameters (equal on every rank) and checks
the test accuracy (exits non-zero below ``--target``, 97% by default). Needs ``zyx[examples,distributed]``.
"""
from __future__ import annotations

import argparse
import os
import socket
import sys
import time

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from tqdm import tqdm

import zyx
import zyx.distributed as dist
from zyx import nn
from zyx.nn import functional as F
from zyx.nn.parallel import DistributedDataParallel
from zyx.utils.data import DataLoader, DistributedSampler, TensorDataset


def make_model() -> nn.Module:
    # train_cnn.py's model: one convolution block (a cold run on PoCL is dominated by compiling kernels)
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),  # 32 x 4 x 4
        nn.Flatten(), nn.Linear(32 * 4 * 4, 10),
    )


def join() -> None:
    """The process group: torchrun's environment, or this process alone when started without a launcher."""
    if "RANK" not in os.environ:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        os.environ.update(RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", timeout=300)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--batch-size", type=int, default=64, help="the global batch, split over the ranks")
    ap.add_argument("--lr", type=float, default=1e-2)
    ap.add_argument("--target", type=float, default=0.97, help="the test accuracy to reach (0 checks nothing)")
    args = ap.parse_args()

    join()
    rank, world = dist.get_rank(), dist.get_world_size()
    if args.batch_size % world:
        print(f"--batch-size {args.batch_size} does not split over {world} ranks", file=sys.stderr)
        return 2
    zyx.manual_seed(0)
    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)[:, None]  # (N, 1, 8, 8), pixel values 0..16
    y = digits.target.astype(np.int64)
    x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.2, random_state=0, stratify=y)

    train = TensorDataset(x_train, y_train)
    sampler = DistributedSampler(train, shuffle=True, seed=0)  # this rank's share, reshuffled by set_epoch
    # full batches only: one set of kernel shapes to compile
    loader = DataLoader(train, batch_size=args.batch_size // world, sampler=sampler, drop_last=True)
    model = DistributedDataParallel(make_model())  # rank 0's initial weights on every rank
    opt = zyx.optim.Adam(model.parameters(), lr=args.lr)
    sched = zyx.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.epochs)
    if rank == 0:
        print(model.module)
        print(f"{world} rank(s), {args.batch_size // world} samples each per step")

    start = time.perf_counter()
    model.train()
    loss_value = float("nan")
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        bar = tqdm(loader, desc=f"epoch {epoch + 1}/{args.epochs}", leave=False, file=sys.stdout,
                   disable=rank != 0)
        for xb, yb in bar:
            loss = F.cross_entropy(model(xb), yb)
            opt.zero_grad()
            loss.backward()  # every rank's gradients are the average over the ranks when this returns
            opt.step()
            if rank == 0:
                loss_value = loss.item()
                bar.set_postfix(loss=f"{loss_value:.4f}", refresh=False)
        sched.step()
    train_s = time.perf_counter() - start

    model.eval()  # BatchNorm2d normalizes with its running statistics (rank 0's) from here on
    with zyx.no_grad():
        logits = model(zyx.tensor(x_test))
        test_loss = F.cross_entropy(logits, zyx.tensor(y_test)).item()
        pred = logits.numpy().argmax(axis=1)
    acc = float((pred == y_test).mean())
    if rank == 0:
        print(f"trained {args.epochs} epochs ({args.epochs * len(loader)} steps) in {train_s:.1f} s; "
              f"last batch loss {loss_value:.4f}")
    print(f"rank {rank}: final test loss {test_loss:.6f}, test accuracy: {acc:.2%} ({len(y_test)} images)",
          flush=True)
    dist.barrier()
    dist.destroy_process_group()
    if acc < args.target:
        print(f"FAILED: test accuracy {acc:.2%} is below {args.target:.0%}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
