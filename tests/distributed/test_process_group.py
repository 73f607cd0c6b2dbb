"""zyx.distributed in this process as a group of one: how it refuses what it cannot do, views and leaves as
collective targets, and DistributedDataParallel's bookkeeping (two real ranks: test_distributed.py)."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch.distributed", reason="zyx.distributed runs on torch.distributed: pip install "
                    "'zyx[distributed]'")

import zyx
import zyx.distributed as dist
from zyx import nn
from zyx.nn import functional as F
from zyx.nn.parallel import DistributedDataParallel as DDP

pytestmark = pytest.mark.needs_device


@pytest.fixture
def group(tmp_path, monkeypatch):
    for var in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(dist.DistributedError, match="no process group"):
        dist.get_rank()
    with pytest.raises(dist.DistributedError, match="MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE not set"):
        dist.init_process_group()
    with pytest.raises(dist.DistributedError, match="rank and world_size are needed"):
        dist.init_process_group(init_method=f"file://{tmp_path}/store")
    with pytest.raises(ValueError, match="'nccl'"):
        dist.init_process_group("nccl")
    dist.init_process_group(init_method=f"file://{tmp_path}/store", rank=0, world_size=1, timeout=30)
    yield
    dist.destroy_process_group()
    assert not dist.is_initialized()


def test_group_of_one(group):
    assert dist.is_initialized() and dist.get_rank() == 0 and dist.get_world_size() == 1
    with pytest.raises(dist.DistributedError, match="already initialized"):
        dist.init_process_group(init_method="tcp://127.0.0.1:1", rank=0, world_size=1)
    a = zyx.arange(12, dtype=zyx.float32).reshape(3, 4)
    dist.all_reduce(a.T, op=dist.ReduceOp.AVG)  # through a transposed view: written back into a's storage
    np.testing.assert_array_equal(a.numpy(), np.arange(12, dtype=np.float32).reshape(3, 4))
    w = zyx.ones(3, requires_grad=True)
    dist.all_reduce(w, op="max")  # a leaf that requires grad, and the op by name
    assert w.requires_grad and w.numpy().tolist() == [1, 1, 1]
    with pytest.raises(zyx.DTypeError, match="AVG of int64"):
        dist.all_reduce(zyx.arange(3), op=dist.ReduceOp.AVG)
    with pytest.raises(ValueError, match="reduce op 'mean'"):
        dist.all_reduce(zyx.ones(2), op="mean")
    with pytest.raises(zyx.ShapeError, match="one per rank"):
        dist.all_gather([zyx.ones(2), zyx.ones(2)], zyx.ones(2))


def test_ddp_of_one_rank_equals_plain_training(group):
    x = zyx.tensor(np.random.default_rng(0).standard_normal((6, 5)).astype(np.float32))
    y = zyx.tensor(np.array([0, 1, 2, 0, 1, 2]))
    zyx.manual_seed(3)
    model = DDP(nn.Sequential(nn.Linear(5, 7), nn.ReLU(), nn.Linear(7, 3)), bucket_cap_mb=0.0001)
    plain = nn.Sequential(nn.Linear(5, 7), nn.ReLU(), nn.Linear(7, 3))
    plain.load_state_dict({k[len("module."):]: v for k, v in model.state_dict().items()})
    assert repr(model).startswith("DistributedDataParallel(") and model.module is not None
    for net in (model, plain):
        opt = zyx.optim.SGD(net.parameters(), lr=0.1)
        for _ in range(3):
            opt.zero_grad()
            F.cross_entropy(net(x), y).backward()
            opt.step()
    for (name, p), q in zip(model.module.named_parameters(), plain.parameters()):
        np.testing.assert_allclose(p.numpy(), q.numpy(), rtol=1e-6, atol=1e-7, err_msg=name)
    with pytest.raises(ValueError, match="device_ids"):
        DDP(nn.Linear(2, 2), device_ids=[0])
    with pytest.raises(TypeError, match="zyx.nn.Module"):
        DDP(lambda t: t)
