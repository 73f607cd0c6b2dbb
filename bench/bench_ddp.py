"""Data parallelism on one machine (issue 32): 2 ranks x 1 core against 1 process x 1 core and 1 process x 2 cores.

The MLP and CNN train steps of bench_models.py (MLP 784-1024-1024-10, batch 256; CNN of two conv-BN-ReLU-pool
blocks on 1x28x28, batch 64; Adam), the same global batch in every configuration:

* ``1 proc x 1 core``: one process whose PoCL has one core (``os.sched_setaffinity`` + ``POCL_MAX_PTHREAD_COUNT``,
  as a rank's share is set);
* ``1 proc x 2 cores``: one process with the whole machine;
* ``2 ranks x 1 core``: ``DistributedDataParallel`` over gloo on localhost, each rank half the batch and one core
  (``LOCAL_RANK``/``LOCAL_WORLD_SIZE``, as torchrun sets them);
* ``2 ranks x 1 core, 1 MiB buckets`` (the MLP only: the CNN's 0.19 MiB are one bucket either way):
  ``bucket_cap_mb=1``, so the second layer's 4 MiB weight gradient is reduced while the first layer's is
  computed, where the default 25 MiB puts it in the last bucket with the first layer's.

Columns: best and median ms per step (rank 0's, which includes waiting for rank 1), samples per second from the
best, the speed-up over one core; for the ranks: the gradient MiB all-reduced per step, ``local_ms`` (the best
step of the wrapped model alone on a rank's half batch: no reduction, no buffers sent), ``allreduce_ms`` (the
step's buckets all-reduced alone, blocking, between the same two ranks: the communication a step has to do),
``added_ms`` = best DDP step - best local step (all data parallelism cost: the reduction, the buffer
broadcast, the read-back and upload, and lock-step with the slower rank), ``wait_ms`` (what backward waited at
its end for buckets not yet reduced, per step; it includes waiting for the slower rank to send) and
``hidden`` = 1 - wait / allreduce, the share of the all-reduce that ran under the rest of backward (0 where
the wait is longer than the reduction alone). Each configuration is its own processes (a process's cores are
fixed before PoCL starts).

    python bench/bench_ddp.py [--steps N] [--rounds N] [--only mlp,cnn] [--quick]
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MODES = ("1 proc x 1 core", "1 proc x 2 cores", "2 ranks x 1 core", "2 ranks x 1 core, 1 MiB buckets")
BATCH = {"mlp": 256, "cnn": 64}


def _model(name: str) -> Any:
    from zyx import nn

    if name == "mlp":
        return nn.Sequential(nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10))
    return nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(64 * 7 * 7, 10))


def worker(name: str, mode: str, steps: int) -> None:
    """One process of one configuration: times ``steps`` train steps and prints a JSON line (rank 0)."""
    import numpy as np

    if mode == "1 proc x 1 core":  # before zyx starts PoCL, as a rank's share is set
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
        os.environ["POCL_MAX_PTHREAD_COUNT"] = "1"
    sys.path.insert(0, str(ROOT))
    import zyx
    from zyx.nn import functional as F

    ddp = mode.startswith("2 ranks")
    rank, world = 0, 1
    if ddp:
        import zyx.distributed as dist
        from zyx.distributed.collectives import all_reduce_host
        from zyx.nn.parallel import DistributedDataParallel

        dist.init_process_group("gloo", timeout=300)
        rank, world = dist.get_rank(), dist.get_world_size()
    zyx.manual_seed(0)
    model = _model(name)
    if ddp:
        model = DistributedDataParallel(model, bucket_cap_mb=1 if "1 MiB" in mode else 25)
    opt = zyx.optim.Adam(model.parameters(), lr=1e-3)
    rng = np.random.default_rng(rank)
    per_rank = BATCH[name] // world
    shape = (per_rank, 784) if name == "mlp" else (per_rank, 1, 28, 28)
    x = rng.standard_normal(shape).astype(np.float32)
    y = rng.integers(0, 10, per_rank)

    def step(net: Any) -> float:
        loss = F.cross_entropy(net(zyx.tensor(x)), zyx.tensor(y))
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.item()

    def timed(net: Any) -> list[float]:
        for _ in range(3):  # compile and settle
            step(net)
        if ddp:
            dist.barrier()
            model.reducer.wait_s = 0.0
        times = []
        for _ in range(steps):
            start = time.perf_counter()
            step(net)
            times.append(time.perf_counter() - start)
        return times

    times = timed(model)
    row: dict[str, Any] = {"best_ms": min(times) * 1e3, "median_ms": statistics.median(times) * 1e3}
    if ddp:
        row["wait_ms"] = model.reducer.wait_s / steps * 1e3
        row["local_ms"] = min(timed(model.module)) * 1e3  # the wrapped model alone: no reduction, no buffers sent
        buckets = [np.zeros(b.nbytes // b.dtype.itemsize, dtype=b.dtype.numpy) for b in model.reducer.buckets]
        row["grad_mb"] = sum(b.nbytes for b in buckets) / 2**20
        dist.barrier()
        comm = []
        for _ in range(steps):  # the same buckets reduced alone: what the step's communication costs
            start = time.perf_counter()
            for work in [all_reduce_host(b) for b in buckets]:
                work.wait()
            comm.append(time.perf_counter() - start)
        row["allreduce_ms"] = statistics.median(comm) * 1e3
        dist.barrier()
    if rank == 0:
        print(json.dumps(row), flush=True)
    sys.stdout.flush()
    os._exit(0)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _measure(name: str, mode: str, steps: int) -> dict[str, Any]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", name, mode, "--steps", str(steps)]
    env = {k: v for k, v in os.environ.items() if k not in ("POCL_MAX_PTHREAD_COUNT", "POCL_AFFINITY")}
    ranks = 2 if mode.startswith("2 ranks") else 1
    port = _free_port()
    procs = []
    for r in range(ranks):
        e = dict(env)
        if ranks > 1:
            e.update(RANK=str(r), WORLD_SIZE=str(ranks), LOCAL_RANK=str(r), LOCAL_WORLD_SIZE=str(ranks),
                     MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        procs.append(subprocess.Popen(cmd, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outs = [p.communicate(timeout=600) for p in procs]
    for p, (_, err) in zip(procs, outs):
        if p.returncode != 0:
            raise RuntimeError(f"bench_ddp {name} / {mode}: a process exited {p.returncode}:\n{err[-3000:]}")
    return json.loads([ln for ln in outs[0][0].splitlines() if ln.startswith("{")][-1])


def run(quick: bool = False, steps: int | None = None, only: tuple[str, ...] = ("mlp", "cnn"),
        rounds: int | None = None) -> list[dict]:
    """The table's rows (see the module docstring): ``rounds`` passes over every configuration in turn (so a
    change of the machine's load hits them alike), each configuration's best pass kept; ``quick``: one round
    of 5 timed steps (default: 2 rounds of 10)."""
    steps = steps or (5 if quick else 10)
    rounds = rounds or (1 if quick else 2)
    modes = MODES if importlib.util.find_spec("torch") is not None else MODES[:2]  # ranks need the distributed extra
    configs = [(name, mode) for name in only for mode in modes if name == "mlp" or "1 MiB" not in mode]
    best: dict[tuple[str, str], dict[str, Any]] = {}
    for _ in range(rounds):
        for config in configs:
            got = _measure(*config, steps)
            if config not in best or got["best_ms"] < best[config]["best_ms"]:
                best[config] = got
    rows = []
    for name, mode in configs:
        got = best[name, mode]
        one_core = best[name, MODES[0]]["best_ms"]
        row = {"model": name, "config": mode, "best_ms": got["best_ms"], "median_ms": got["median_ms"],
               "samples/s": BATCH[name] / got["best_ms"] * 1e3, "speedup": one_core / got["best_ms"]}
        if "allreduce_ms" in got:
            row.update(grad_mb=got["grad_mb"], local_ms=got["local_ms"], allreduce_ms=got["allreduce_ms"],
                       added_ms=got["best_ms"] - got["local_ms"], wait_ms=got["wait_ms"],
                       hidden=min(1.0, max(0.0, 1 - got["wait_ms"] / got["allreduce_ms"])))
        rows.append(row)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="one round of 5 timed steps")
    ap.add_argument("--only", default="mlp,cnn")
    ap.add_argument("--worker", nargs=2, metavar=("MODEL", "MODE"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.worker[0], args.worker[1], args.steps)
        return
    sys.path.insert(0, str(ROOT))
    from zyx.benchmarks import machine_line, markdown_table

    rows = run(args.quick, None if args.quick else args.steps, tuple(args.only.split(",")),
               None if args.quick else args.rounds)
    print(markdown_table(rows))
    print(f"\n{machine_line()}")


if __name__ == "__main__":
    main()
