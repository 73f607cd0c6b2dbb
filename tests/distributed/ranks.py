"""The program each rank runs in tests/distributed: ``python ranks.py <scenario> <init>``.

``init`` is how the ranks meet: ``env`` (``env://``, as torchrun), ``file`` or ``tcp`` (zyx's
``init_process_group`` with that method), ``torch`` (the process group made by
``torch.distributed.init_process_group`` itself, which zyx adopts). ``RANK``, ``WORLD_SIZE``,
``MASTER_ADDR``, ``MASTER_PORT`` and ``ZYX_TEST_STORE`` come from the test. Each check raises on a
mismatch; the last line printed is a JSON summary the test compares across ranks.
"""
from __future__ import annotations

import datetime
import json
import os
import sys
import time

import numpy as np

import zyx
import zyx.distributed as dist
from zyx import nn
from zyx.nn import functional as F
from zyx.nn.parallel import DistributedDataParallel as DDP

RANK, WORLD = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
# seconds: a collective whose peer is gone fails within this instead of hanging (generous: a rank compiling
# kernels cold may lag the other that long)
TIMEOUT = 60


def init(kind: str) -> None:
    if kind == "env":
        dist.init_process_group("gloo", timeout=TIMEOUT)
    elif kind == "file":
        dist.init_process_group("gloo", init_method="file://" + os.environ["ZYX_TEST_STORE"], rank=RANK,
                                world_size=WORLD, timeout=TIMEOUT)
    elif kind == "tcp":
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{os.environ['MASTER_PORT']}", rank=RANK,
                                world_size=WORLD, timeout=TIMEOUT)
    elif kind == "torch":
        import torch.distributed

        torch.distributed.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    else:
        raise SystemExit(f"unknown init {kind!r}")
    assert dist.is_initialized() and dist.get_rank() == RANK and dist.get_world_size() == WORLD


# -- collectives against NumPy ------------------------------------------------------------------------------

DTYPES = ["float32", "float64", "float16", "bfloat16", "float8_e4m3", "int8", "uint8", "int16", "uint16", "int32",
          "uint32", "int64", "uint64", "bool"]


def values(rank: int, dtype: str, shape: tuple[int, ...] = (3, 5)) -> np.ndarray:
    """Rank ``rank``'s input for ``dtype`` (every rank can make every rank's)."""
    rng = np.random.default_rng([rank, DTYPES.index(dtype)])
    np_dtype = zyx_dtype(dtype).numpy
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if np.issubdtype(np_dtype, np.integer):
        info = np.iinfo(np_dtype)
        return rng.integers(info.min, info.max, shape, dtype=np_dtype, endpoint=True)
    return rng.uniform(-2, 2, shape).astype(np_dtype)


def reference(dtype: str, op: str) -> np.ndarray:
    parts = [values(r, dtype) for r in range(WORLD)]
    if dtype == "bool":
        fn = {"SUM": np.logical_or, "MAX": np.logical_or, "PRODUCT": np.logical_and, "MIN": np.logical_and}[op]
    else:
        fn = {"SUM": np.add, "AVG": np.add, "PRODUCT": np.multiply, "MIN": np.minimum, "MAX": np.maximum}[op]
    wide = dtype.startswith("float8")  # carried as float32: reduced there, rounded once on the way back
    out = parts[0].astype(np.float32) if wide else parts[0]
    with np.errstate(over="ignore"):
        for p in parts[1:]:
            out = fn(out, p.astype(np.float32) if wide else p)
        if op == "AVG":
            out = out / np.asarray(WORLD, dtype=out.dtype)
    return out.astype(parts[0].dtype)


def same(got: np.ndarray, want: np.ndarray, what: str) -> None:
    if got.dtype != want.dtype or got.shape != want.shape:
        raise AssertionError(f"{what}: got {got.dtype}{got.shape}, want {want.dtype}{want.shape}")
    a, b = got.view(np.uint8), want.view(np.uint8)  # bit for bit (NaN included)
    if not np.array_equal(a, b):
        raise AssertionError(f"{what}: got\n{got}\nwant\n{want}")


def scenario_collectives() -> dict:
    checked = 0
    for dtype in DTYPES:
        ops = ["SUM", "PRODUCT", "MIN", "MAX"] + (["AVG"] if zyx_dtype(dtype).is_float else [])
        for op in ops:
            t = zyx.from_numpy(values(RANK, dtype))
            dist.all_reduce(t, op=getattr(dist.ReduceOp, op))
            same(t.numpy(), reference(dtype, op), f"all_reduce {op} {dtype}")
            checked += 1
        t = zyx.from_numpy(values(RANK, dtype))
        dist.broadcast(t, src=1)
        same(t.numpy(), values(1, dtype), f"broadcast {dtype}")
        outs = [zyx.zeros(3, 5, dtype=dtype) for _ in range(WORLD)]
        dist.all_gather(outs, zyx.from_numpy(values(RANK, dtype)))
        for r, o in enumerate(outs):
            same(o.numpy(), values(r, dtype), f"all_gather {dtype} [{r}]")
        checked += 2
    try:  # AVG of an integer dtype is refused before anything is sent
        dist.all_reduce(zyx.zeros(2, dtype="int32"), op=dist.ReduceOp.AVG)
    except zyx.DTypeError:
        pass
    else:
        raise AssertionError("AVG of int32 was not refused")
    # reduce_scatter: rank r gets the sum over ranks of everyone's input_list[r]
    inputs = [zyx.from_numpy(np.full(4, 10.0 * RANK + i, dtype=np.float32)) for i in range(WORLD)]
    out = zyx.zeros(4)
    dist.reduce_scatter(out, inputs)
    same(out.numpy(), np.full(4, sum(10.0 * r + RANK for r in range(WORLD)), dtype=np.float32), "reduce_scatter")
    # async: the result lands in the tensor at wait()
    t = zyx.full((6,), float(RANK + 1))
    work = dist.all_reduce(t, op="max", async_op=True)
    work.wait()
    same(t.numpy(), np.full(6, float(WORLD), dtype=np.float32), "all_reduce async MAX")
    dist.barrier()
    # a peer that lives on but never joins: a group with a 3 s timeout ends rank 0's wait
    quick = dist.new_group(timeout=3)
    if RANK == 1:
        time.sleep(6)
        os._exit(0)
    start = time.perf_counter()
    try:
        dist.all_reduce(zyx.ones(4), group=quick)
    except zyx.distributed.DistributedError as exc:
        return {"checked": checked + 2, "failed_after_s": time.perf_counter() - start, "message": str(exc)[:500]}
    raise AssertionError("all_reduce with a silent peer did not fail")


def zyx_dtype(name: str):
    return getattr(zyx, "bool" if name == "bool" else name)


# -- data parallelism -----------------------------------------------------------------------------------------

def mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 4))


def global_batch(n: int = 16) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    return rng.standard_normal((n, 8)).astype(np.float32), rng.integers(0, 4, n)


def params_of(model: nn.Module) -> dict[str, np.ndarray]:
    return {n: p.numpy() for n, p in model.named_parameters()}


def close(got: dict, want: dict, what: str, atol: float = 2e-5) -> float:
    worst = 0.0
    for name, w in want.items():
        g = got[name]
        err = float(np.max(np.abs(g - w))) if g.size else 0.0
        worst = max(worst, err)
        if not np.allclose(g, w, rtol=1e-4, atol=atol):
            raise AssertionError(f"{what}: {name} differs by {err:.3g}\n{g}\n{w}")
    return worst


def train(model: nn.Module, x: np.ndarray, y: np.ndarray, steps: int) -> float:
    opt = zyx.optim.Adam(model.parameters(), lr=1e-2)
    loss = None
    for _ in range(steps):
        loss = F.cross_entropy(model(zyx.tensor(x)), zyx.tensor(y))
        opt.zero_grad()
        loss.backward()
        opt.step()
    return float(loss.item())


class Branchy(nn.Module):
    """A model whose ``extra`` layer the forward never uses."""

    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Linear(8, 4)
        self.extra = nn.Linear(8, 4)

    def forward(self, x):
        return self.body(x)


def scenario_ddp_mlp() -> dict:
    x, y = global_batch()
    lo, hi = RANK * len(x) // WORLD, (RANK + 1) * len(x) // WORLD
    # 1. Adam steps on each rank's shard equal one process's on the whole batch. Ranks start from different
    #    weights: the wrap must give them rank 0's. A tiny bucket cap makes several buckets.
    zyx.manual_seed(100 + RANK)
    model = DDP(mlp(), bucket_cap_mb=0.0005)
    assert len(model.reducer.buckets) >= 3, model.reducer.buckets
    start = {n: v.copy() for n, v in params_of(model.module).items()}
    assert all(k.startswith("module.") for k in model.state_dict())
    loss = train(model, x[lo:hi], y[lo:hi], 10)
    single = mlp()
    single.load_state_dict(start)
    train(single, x, y, 10)
    err = close(params_of(model.module), params_of(single), "10 Adam steps, DDP vs one process")

    # 2. no_sync: local gradients inside, the sum of the micro-batches' averaged after
    zyx.manual_seed(5)
    acc = DDP(mlp())
    start = params_of(acc.module)
    mid = (lo + hi) // 2
    with acc.no_sync():
        F.cross_entropy(acc(zyx.tensor(x[lo:mid])), zyx.tensor(y[lo:mid])).backward()
    local = mlp()
    local.load_state_dict(start)
    F.cross_entropy(local(zyx.tensor(x[lo:mid])), zyx.tensor(y[lo:mid])).backward()
    close({n: p.grad.numpy() for n, p in acc.module.named_parameters()},
          {n: p.grad.numpy() for n, p in local.named_parameters()}, "inside no_sync (local gradients)")
    F.cross_entropy(acc(zyx.tensor(x[mid:hi])), zyx.tensor(y[mid:hi])).backward()
    whole = mlp()
    whole.load_state_dict(start)
    (2 * F.cross_entropy(whole(zyx.tensor(x)), zyx.tensor(y))).backward()  # two micro-batch means per rank
    close({n: p.grad.numpy() for n, p in acc.module.named_parameters()},
          {n: p.grad.numpy() for n, p in whole.named_parameters()}, "no_sync accumulation vs one big step")

    # 3. an unused parameter: without find_unused_parameters the next forward says so; with it, the
    #    used ones are averaged and the unused one keeps no gradient
    zyx.manual_seed(9)
    strict = DDP(Branchy())
    F.cross_entropy(strict(zyx.tensor(x[lo:hi])), zyx.tensor(y[lo:hi])).backward()
    try:
        strict(zyx.tensor(x[lo:hi]))
    except zyx.distributed.DistributedError as exc:
        assert "find_unused_parameters" in str(exc) and "extra.weight" in str(exc), str(exc)
    else:
        raise AssertionError("an unfinished reduction was not reported")
    zyx.manual_seed(9)
    loose = DDP(Branchy(), find_unused_parameters=True)
    start = params_of(loose.module)
    F.cross_entropy(loose(zyx.tensor(x[lo:hi])), zyx.tensor(y[lo:hi])).backward()
    assert loose.module.extra.weight.grad is None
    whole = Branchy()
    whole.load_state_dict(start)
    F.cross_entropy(whole(zyx.tensor(x)), zyx.tensor(y)).backward()
    close({"w": loose.module.body.weight.grad.numpy()}, {"w": whole.body.weight.grad.numpy()},
          "find_unused_parameters")
    final = {k: v.tolist() for k, v in params_of(model.module).items()}
    dist.barrier()
    dist.destroy_process_group()
    assert not dist.is_initialized()
    return {"loss": loss, "err": err, "params": final}


def cnn() -> nn.Module:
    # no convolution bias before BatchNorm: its true gradient is 0, and Adam would blow rounding noise up
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1, bias=False), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(4 * 4 * 4, 3))


def scenario_ddp_cnn() -> dict:
    """The BatchNorm CNN against PyTorch's DDP on the same process group: BatchNorm normalizes with each
    rank's own batch statistics (so no single process on the whole batch matches), and the running
    statistics are rank 0's, broadcast before each forward; both libraries promise exactly that."""
    import torch

    rng = np.random.default_rng(3)
    x = rng.standard_normal((16, 1, 8, 8)).astype(np.float32)
    y = rng.integers(0, 3, 16)
    lo, hi = RANK * 8, RANK * 8 + 8
    zyx.manual_seed(20 + RANK)
    model = DDP(cnn())
    start = {k: v.numpy().copy() for k, v in model.module.state_dict().items()}
    opt = zyx.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(10):
        loss = F.cross_entropy(model(zyx.tensor(x[lo:hi])), zyx.tensor(y[lo:hi]))
        opt.zero_grad()
        loss.backward()
        opt.step()
    ours = {k: v.numpy() for k, v in model.module.state_dict().items()}

    tnn = torch.nn
    tmodel = tnn.Sequential(tnn.Conv2d(1, 4, 3, padding=1, bias=False), tnn.BatchNorm2d(4), tnn.ReLU(),
                            tnn.MaxPool2d(2), tnn.Flatten(), tnn.Linear(4 * 4 * 4, 3))
    tmodel.load_state_dict({k: torch.from_numpy(v) for k, v in start.items()})
    tddp = torch.nn.parallel.DistributedDataParallel(tmodel)
    topt = torch.optim.Adam(tddp.parameters(), lr=1e-2)
    for _ in range(10):
        tloss = torch.nn.functional.cross_entropy(tddp(torch.from_numpy(x[lo:hi])), torch.from_numpy(y[lo:hi]))
        topt.zero_grad()
        tloss.backward()
        topt.step()
    theirs = {k: v.detach().numpy() for k, v in tmodel.state_dict().items()}
    err = close({k: v.astype(np.float64) for k, v in ours.items()},
                {k: v.astype(np.float64) for k, v in theirs.items()}, "BatchNorm CNN, zyx DDP vs torch DDP", 1e-4)
    return {"loss": float(loss.item()), "torch_loss": float(tloss.item()), "err": err}


def scenario_adopt_cnn_and_die() -> dict:
    """On a group torch made (used as is): the CNN against torch's DDP; then rank 1 dies and rank 0's next
    collective fails at once instead of hanging."""
    try:
        dist.init_process_group("gloo")
    except zyx.distributed.DistributedError as exc:
        assert "already initialized" in str(exc)
    else:
        raise AssertionError("a second init_process_group was not refused")
    t = zyx.full((4,), float(RANK))
    dist.all_reduce(t)
    same(t.numpy(), np.full(4, float(sum(range(WORLD))), dtype=np.float32), "all_reduce on an adopted group")
    result = scenario_ddp_cnn()
    dist.barrier()
    if RANK == 1:
        os._exit(3)  # dies without a word
    time.sleep(0.5)
    start = time.perf_counter()
    try:
        dist.all_reduce(zyx.ones(4))
    except zyx.distributed.DistributedError as exc:
        return {**result, "failed_after_s": time.perf_counter() - start, "message": str(exc)[:500]}
    raise AssertionError("all_reduce with a dead peer did not fail")


def main() -> None:
    scenario, kind = sys.argv[1], sys.argv[2]
    init(kind)
    result = globals()[f"scenario_{scenario}"]()
    print(json.dumps({"rank": RANK, **result}), flush=True)
    sys.stdout.flush()
    os._exit(0)  # no teardown races between the ranks' gloo threads


if __name__ == "__main__":
    main()
