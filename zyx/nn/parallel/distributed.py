"""``zyx.nn.parallel.DistributedDataParallel``: one model replica per rank, gradients averaged over ranks.

PyTorch's class and behaviour on ``zyx.distributed``'s process group: at wrap every rank checks
that the others hold the same parameter shapes and takes rank 0's parameters and buffers; each
forward first gives every rank rank 0's buffers (``broadcast_buffers``, as PyTorch: BatchNorm's
running statistics are rank 0's); each backward leaves every rank the gradients averaged over the
ranks, reduced in buckets while backward still runs (``reducer.py``). With the same steps on the
same global batch, N ranks hold the parameters one process would (float32 rounding aside), except
where a layer depends on the local batch itself (BatchNorm's batch statistics are per rank, as in
PyTorch).
"""
from __future__ import annotations

import contextlib
import zlib
from collections.abc import Iterator
from typing import Any

import numpy as np

from zyx.distributed.collectives import broadcast_host
from zyx.distributed.process_group import failure, get_rank, get_world_size, is_initialized, torch_distributed
from zyx.errors import DistributedError
from zyx.frontend.autograd.engine import is_grad_enabled, no_grad
from zyx.frontend.base import TensorBase
from zyx.frontend.creation import from_numpy
from zyx.nn.module import Module
from zyx.nn.parallel.reducer import Reducer, pack, unpack


def _tensors_in(value: Any) -> list[Any]:
    """The tensors in a forward's output (a tensor, or tuples, lists and dicts of them)."""
    if isinstance(value, TensorBase):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors_in(v)]
    return []


def broadcast_tensors(tensors: list[Any], src: int = 0, group: Any = None) -> None:
    """Write rank ``src``'s values of ``tensors`` into every rank's (one broadcast per dtype, in place)."""
    by_dtype: dict[str, list[Any]] = {}
    for t in tensors:
        by_dtype.setdefault(t.dtype.name, []).append(t)
    mine = get_rank(group) == src
    for group_tensors in by_dtype.values():
        dtype = group_tensors[0].dtype
        total = sum(t.numel() for t in group_tensors)
        with no_grad():
            host = pack(group_tensors).numpy() if mine else np.zeros(total, dtype=dtype.numpy)
            host = broadcast_host(host, dtype, src, group)
            if mine:
                continue
            flat = from_numpy(np.ascontiguousarray(host), device=group_tensors[0].device)
            for t, value in zip(group_tensors, unpack(flat, [tuple(t.shape) for t in group_tensors])):
                t[...] = value


def _signature(named: list[tuple[str, Any]]) -> int:
    text = ";".join(f"{n}:{tuple(p.shape)}:{p.dtype.name}" for n, p in named)
    return zlib.crc32(text.encode())


class DistributedDataParallel(Module):
    """``DistributedDataParallel(module, bucket_cap_mb=25, broadcast_buffers=True,
    find_unused_parameters=False)`` (PyTorch's names; ``device_ids`` and ``output_device`` must stay None:
    the module is already on its zyx device). ``module`` is the wrapped model and ``state_dict()`` keys
    carry the ``module.`` prefix. Needs an initialized process group (``zyx.distributed``)."""

    def __init__(self, module: Module, device_ids: Any = None, output_device: Any = None, dim: int = 0,
                 broadcast_buffers: bool = True, process_group: Any = None, bucket_cap_mb: float = 25,
                 find_unused_parameters: bool = False) -> None:
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DistributedDataParallel wraps a zyx.nn.Module, got {type(module).__name__}")
        if device_ids is not None or output_device is not None:
            raise ValueError("DistributedDataParallel: device_ids and output_device must be None for zyx (the module "
                             "runs on the device its parameters are on; move it with module.to(device))")
        if dim != 0:
            raise ValueError(f"DistributedDataParallel: dim = {dim}; only 0 (each rank feeds its own batch)")
        if not is_initialized():
            raise DistributedError("DistributedDataParallel needs a process group: call "
                                   "zyx.distributed.init_process_group() first")
        if bucket_cap_mb <= 0:
            raise ValueError(f"DistributedDataParallel: bucket_cap_mb = {bucket_cap_mb}; expected > 0")
        self.module = module
        self.process_group = process_group
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.bucket_cap_mb = bucket_cap_mb
        self.require_backward_grad_sync = True
        self.world_size = get_world_size(process_group)
        named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
        self._check_same_parameters(named)
        state = [p for _, p in module.named_parameters()] + [b for _, b in module.named_buffers()]
        if state:
            broadcast_tensors(state, 0, process_group)
        self.reducer = Reducer(named, int(bucket_cap_mb * 2**20), process_group, find_unused_parameters)

    def _check_same_parameters(self, named: list[tuple[str, Any]]) -> None:
        import torch

        sig = _signature(named)
        both = torch.tensor([sig, -sig], dtype=torch.int64)  # the largest and the smallest signature
        dist = torch_distributed()
        try:
            dist.all_reduce(both, op=dist.ReduceOp.MAX, group=self.process_group)
        except RuntimeError as exc:
            raise failure("DistributedDataParallel (checking the ranks' parameters)", exc, self.process_group) \
                from exc
        if int(both[0]) != sig or int(-both[1]) != sig:
            raise DistributedError(f"DistributedDataParallel: rank {get_rank(self.process_group)}'s parameters "
                                   f"({len(named)} of them) differ in names, shapes or dtypes from another rank's; "
                                   "every rank must wrap the same model")

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        self.reducer.check_finished()
        if self.broadcast_buffers and self.world_size > 1:
            buffers = [b for _, b in self.module.named_buffers()]
            if buffers:
                broadcast_tensors(buffers, 0, self.process_group)
        out = self.module(*inputs, **kwargs)
        if is_grad_enabled() and self.require_backward_grad_sync:
            self.reducer.prepare(_tensors_in(out))
        else:
            self.reducer.disarm()
        return out

    @contextlib.contextmanager
    def no_sync(self) -> Iterator[None]:
        """Forwards inside this block are followed by backwards that only accumulate local gradients;
        the first backward after it averages the accumulated sums (gradient accumulation)."""
        previous = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = previous

    def extra_repr(self) -> str:
        return f"world_size={self.world_size}, buckets={len(self.reducer.buckets)}"
