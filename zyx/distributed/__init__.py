"""``zyx.distributed``: process groups and collectives on zyx tensors, on ``torch.distributed`` (gloo).

PyTorch's names (API.md "Several devices and several machines"). torch is imported only when one of
these functions runs (the ``distributed`` extra installs it); data parallelism is
``zyx.nn.parallel.DistributedDataParallel``.
"""
from zyx.distributed.collectives import ReduceOp, Work, all_gather, all_reduce, broadcast, reduce_scatter
from zyx.distributed.process_group import (
    barrier,
    destroy_process_group,
    get_rank,
    get_world_size,
    init_process_group,
    is_available,
    is_initialized,
    new_group,
)
from zyx.errors import DistributedError

__all__ = [
    "DistributedError", "ReduceOp", "Work", "all_gather", "all_reduce", "barrier", "broadcast",
    "destroy_process_group", "get_rank", "get_world_size", "init_process_group", "is_available", "is_initialized",
    "new_group", "reduce_scatter",
]
