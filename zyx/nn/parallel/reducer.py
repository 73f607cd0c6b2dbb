"""Gradient buckets of data parallelism: packed on the device, summed through gloo while backward runs.

Parameters are cut into buckets in reverse registration order (the order backward finishes them:
the last layer first), one dtype and device per bucket, the first bucket small (1 MiB) so the
first all-reduce starts early and the others up to ``bucket_cap_mb``, as PyTorch's reducer does.
Each parameter's post-accumulate-grad hook marks it ready; when a bucket's last gradient is in,
its gradients are packed into one flat tensor by one fused kernel (each gradient a zero-padded
view, summed), read back once, and handed to gloo as an asynchronous all-reduce; Python goes on
queueing the rest of backward meanwhile, so the reduction runs under the remaining backward
kernels. Buckets start in index order on every rank (the ranks' collectives must match). When
the last bucket has started, each is waited on, divided by the world size on the host, uploaded
once, and its parameters' ``.grad`` become views of that one buffer (no copy kernel).
"""
from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from zyx.distributed.collectives import all_reduce_host
from zyx.distributed.process_group import get_world_size
from zyx.errors import DistributedError
from zyx.frontend.autograd.engine import no_grad, reachable_leaves
from zyx.frontend.creation import from_numpy, zeros_like
from zyx.frontend.movement import pad

FIRST_BUCKET_BYTES = 1 << 20
_HOST_FLOATS = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))


def pack(tensors: Sequence[Any]) -> Any:
    """One flat tensor holding ``tensors`` one after another: each a zero-padded flat view, the views
    summed, which the engine fuses into one kernel (a tensor alone is just its flat view)."""
    total = sum(t.numel() for t in tensors)
    flat, offset = None, 0
    for t in tensors:
        n = t.numel()
        if n == 0:
            continue
        part = t.reshape(-1)
        if n != total:
            part = pad(part, (offset, total - offset - n))
        flat = part if flat is None else flat + part
        offset += n
    if flat is None:
        return zeros_like(tensors[0]).reshape(-1) if tensors else None
    return flat


def unpack(flat: Any, shapes: Sequence[tuple[int, ...]]) -> list[Any]:
    """Views of the flat tensor ``flat`` with ``shapes``, one after another (``pack``'s inverse)."""
    views, offset = [], 0
    for shape in shapes:
        n = int(np.prod(shape, dtype=np.int64))
        views.append(flat.narrow(0, offset, n).reshape(shape))
        offset += n
    return views


class Bucket:
    """Parameters reduced together, with this backward's state: how many gradients are still
    missing, the host copy being summed and its pending all-reduce."""

    def __init__(self, params: list[Any], names: list[str]) -> None:
        self.params, self.names = params, names
        self.shapes = [tuple(p.shape) for p in params]
        self.dtype, self.device = params[0].dtype, params[0].device
        self.nbytes = sum(p.numel() for p in params) * self.dtype.itemsize
        self.reset()

    def reset(self) -> None:
        self.missing = len(self.params)
        self.ready: set[int] = set()
        self.host: np.ndarray | None = None
        self.work: Any = None


def make_buckets(named: Sequence[tuple[str, Any]], cap_bytes: int) -> list[Bucket]:
    """``named`` (name, parameter) pairs cut into buckets: reverse order, one dtype and device each, the
    first up to ``min(cap, 1 MiB)`` bytes and the rest up to ``cap_bytes`` (a larger parameter alone);
    ordered by their first parameter in backward's order, so buckets start as backward fills them."""
    done: list[tuple[int, Bucket]] = []
    open_: dict[tuple, tuple[int, list, list, int]] = {}  # (dtype, device) -> (first position, params, names, bytes)
    for position, (name, p) in enumerate(reversed(list(named))):
        key = (p.dtype.name, id(p.device))
        first, params, names, size = open_.get(key, (position, [], [], 0))
        limit = min(cap_bytes, FIRST_BUCKET_BYTES) if not done else cap_bytes
        nbytes = p.numel() * p.dtype.itemsize
        if params and size + nbytes > limit:
            done.append((first, Bucket(params, names)))
            first, params, names, size = position, [], [], 0
        params.append(p)
        names.append(name)
        open_[key] = (first, params, names, size + nbytes)
    done.extend((first, Bucket(params, names)) for first, params, names, _ in open_.values() if params)
    return [bucket for _, bucket in sorted(done, key=lambda fb: fb[0])]


class Reducer:
    """Averages the gradients of ``named`` parameters over the ranks of ``group`` during each backward
    that follows a ``prepare()``; ``wait_s`` and ``reduced_bytes`` add up the time backward waited on
    all-reduces that had not finished and the bytes reduced (the bench's hidden-communication share)."""

    def __init__(self, named: Sequence[tuple[str, Any]], cap_bytes: int, group: Any = None,
                 find_unused_parameters: bool = False) -> None:
        self.group = group
        self.find_unused = find_unused_parameters
        self.buckets = make_buckets(named, cap_bytes)
        self.where = {id(p): b for b in self.buckets for p in b.params}
        self.names = {id(p): n for n, p in named}
        self.armed = False
        self.next_bucket = 0
        self.used: Any = None  # find_unused_parameters: (host counts, work) of which ranks used each parameter
        self.wait_s = 0.0
        self.reduced_bytes = 0
        self.handles = [p.register_post_accumulate_grad_hook(self._on_grad) for b in self.buckets for p in b.params]

    # -- each iteration ---------------------------------------------------------------------------------
    def check_finished(self) -> None:
        """Raise if the last prepared backward started reducing but did not reach every parameter."""
        if not self.armed or not any(b.ready for b in self.buckets):
            return
        missing = [self.names[id(p)] for b in self.buckets for p in b.params if id(p) not in b.ready]
        self.disarm()
        raise DistributedError(
            "DistributedDataParallel: expected to have finished reduction in the prior iteration before starting "
            f"a new one; these parameters received no gradient: {', '.join(missing[:20])}"
            f"{' ...' if len(missing) > 20 else ''}. Pass find_unused_parameters=True when the forward does not "
            "use every parameter, and make sure every rank runs the same backward.")

    def disarm(self) -> None:
        self.armed = False
        for b in self.buckets:
            b.reset()

    def prepare(self, outputs: Sequence[Any]) -> None:
        """Reduce during the next backward (from the forward's ``outputs``). With ``find_unused_parameters``
        the parameters those outputs do not reach are ready at once (their gradient stays what it is)."""
        self.disarm()
        self.armed = True
        self.next_bucket = 0
        if not self.find_unused:
            return
        reached = {id(t) for t in reachable_leaves(outputs)}
        order = [p for b in self.buckets for p in b.params]
        counts = np.array([id(p) in reached for p in order], dtype=np.float32)
        self.used = (counts, all_reduce_host(counts, self.group))
        for p in order:
            if id(p) not in reached:
                self._ready(p)

    def _on_grad(self, p: Any) -> None:
        if self.armed:
            self._ready(p)

    def _ready(self, p: Any) -> None:
        bucket = self.where[id(p)]
        if id(p) in bucket.ready:
            raise DistributedError(f"DistributedDataParallel: parameter {self.names[id(p)]} got a second gradient "
                                   "in one backward (a reentrant or repeated backward); reduce once per forward")
        bucket.ready.add(id(p))
        bucket.missing -= 1
        while self.next_bucket < len(self.buckets) and not self.buckets[self.next_bucket].missing:
            self._start(self.buckets[self.next_bucket])
            self.next_bucket += 1
        if self.next_bucket == len(self.buckets):
            self._finish()

    def _start(self, bucket: Bucket) -> None:
        with no_grad():
            grads = [p.grad.detach() if p.grad is not None else zeros_like(p) for p in bucket.params]
            host = pack(grads).numpy()  # the one read-back (it waits for the kernels queued so far: one queue)
        if host.dtype not in _HOST_FLOATS:  # bfloat16 and float8 are summed in float32
            host = host.astype(np.float32)
        bucket.host = np.ascontiguousarray(host)
        bucket.work = all_reduce_host(bucket.host, self.group)

    def _finish(self) -> None:
        world = get_world_size(self.group)
        used = None
        if self.used is not None:
            start = time.perf_counter()
            self.used[1].wait()
            self.wait_s += time.perf_counter() - start
            used, self.used = self.used[0], None
        index = 0
        for bucket in self.buckets:
            start = time.perf_counter()
            bucket.work.wait()
            self.wait_s += time.perf_counter() - start
            self.reduced_bytes += bucket.nbytes
            host = bucket.host / np.asarray(world, dtype=bucket.host.dtype)
            flat = from_numpy(host.astype(bucket.dtype.numpy, copy=False), device=bucket.device)
            for p, view in zip(bucket.params, unpack(flat, bucket.shapes)):
                if used is None or used[index] > 0:  # a parameter no rank used keeps its gradient, as in PyTorch
                    p.grad = view
                index += 1
        self.disarm()
