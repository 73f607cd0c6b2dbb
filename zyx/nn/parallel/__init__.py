"""``zyx.nn.parallel``: data parallelism over processes (``DistributedDataParallel``, on ``zyx.distributed``)."""
from zyx.nn.parallel.distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel"]
