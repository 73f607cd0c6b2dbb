"""The process group zyx's collectives run on: ``torch.distributed``'s default group with the gloo backend.

zyx builds no transport of its own (DESIGN.md "Several devices, several processes"): ranks meet
through PyTorch's rendezvous (``env://`` as ``torchrun`` sets it, ``file://``, ``tcp://``), and a
group that someone else made (the user with ``torch.distributed.init_process_group``, Ray Train) is
used as is. torch is imported only inside these functions, so ``import zyx`` never loads it.
"""
from __future__ import annotations

import datetime
import os
from typing import Any

from zyx.errors import DistributedError

INSTALL_HINT = "zyx.distributed runs on torch.distributed: pip install 'zyx[distributed]'"


def torch_distributed() -> Any:
    """``torch.distributed``, or an ImportError saying which extra installs it."""
    try:
        import torch.distributed as dist
    except ImportError as exc:
        raise ImportError(INSTALL_HINT) from exc
    if not dist.is_available():
        raise ImportError(f"this torch build has no torch.distributed; {INSTALL_HINT}")
    return dist


def is_available() -> bool:
    """Whether ``torch.distributed`` can be imported (the ``distributed`` extra is installed)."""
    try:
        torch_distributed()
    except ImportError:
        return False
    return True


def is_initialized() -> bool:
    """Whether a default process group exists (made by zyx or by anyone else in this process)."""
    if not is_available():
        return False
    return bool(torch_distributed().is_initialized())


def _timedelta(timeout: Any) -> datetime.timedelta | None:
    if timeout is None or isinstance(timeout, datetime.timedelta):
        return timeout
    if isinstance(timeout, (int, float)) and timeout > 0:
        return datetime.timedelta(seconds=float(timeout))
    raise ValueError(f"init_process_group: timeout = {timeout!r}; expected seconds > 0 or a datetime.timedelta")


def init_process_group(backend: str | None = "gloo", init_method: str | None = None, rank: int | None = None,
                       world_size: int | None = None, timeout: Any = None, **kwargs: Any) -> None:
    """Join the default process group (PyTorch's signature). ``init_method`` None means ``env://``:
    ``MASTER_ADDR``, ``MASTER_PORT``, and ``RANK`` / ``WORLD_SIZE`` unless given, as ``torchrun`` sets
    them; ``file:///path`` and ``tcp://host:port`` need ``rank`` and ``world_size``. ``timeout`` (seconds
    or a ``timedelta``) bounds every collective: a peer that died or never comes makes the call raise
    ``DistributedError`` after at most that long instead of hanging. Only gloo: zyx reduces on the host."""
    if backend is not None and str(backend).lower() != "gloo":
        raise ValueError(f"init_process_group: backend = {backend!r}; zyx runs collectives on the host through "
                         "'gloo' (NCCL and MPI reduce torch's device tensors, not zyx's)")
    dist = torch_distributed()
    if dist.is_initialized():
        raise DistributedError("init_process_group: the default process group is already initialized (zyx uses a "
                               "group made elsewhere as is; call destroy_process_group() first to make a new one)")
    method = init_method or "env://"
    if method.startswith("env://"):
        missing = [v for v, given in (("MASTER_ADDR", False), ("MASTER_PORT", False), ("RANK", rank is not None),
                                      ("WORLD_SIZE", world_size is not None)) if not given and v not in os.environ]
        if missing:
            raise DistributedError(f"init_process_group(init_method='env://'): {', '.join(missing)} not set; launch "
                                   "with torchrun, or set them (or pass rank= and world_size=)")
    elif rank is None or world_size is None:
        raise DistributedError(f"init_process_group(init_method={method!r}): rank and world_size are needed "
                               "(only env:// reads them from the environment)")
    args: dict[str, Any] = {"backend": "gloo", "init_method": method}
    if rank is not None:
        args["rank"] = int(rank)
    if world_size is not None:
        args["world_size"] = int(world_size)
    delta = _timedelta(timeout)
    if delta is not None:
        args["timeout"] = delta
    try:
        dist.init_process_group(**args, **kwargs)
    except (RuntimeError, ValueError) as exc:
        raise DistributedError(f"init_process_group({method!r}, rank={rank}, world_size={world_size}) failed: "
                               f"{exc}") from exc


def new_group(ranks: list[int] | None = None, timeout: Any = None) -> Any:
    """A process group of ``ranks`` (every rank by default) with its own ``timeout``, to pass as ``group=``
    (PyTorch's; every rank of the default group must call it, in the same order)."""
    dist = _default_group()
    return dist.new_group(ranks=ranks, timeout=_timedelta(timeout), backend="gloo")


def _default_group() -> Any:
    dist = torch_distributed()
    if not dist.is_initialized():
        raise DistributedError("no process group: call zyx.distributed.init_process_group() first (or "
                               "torch.distributed.init_process_group; zyx uses the default group either way)")
    return dist


def get_rank(group: Any = None) -> int:
    """This process's rank in ``group`` (the default group)."""
    return int(_default_group().get_rank(group))


def get_world_size(group: Any = None) -> int:
    """How many ranks ``group`` (the default group) has."""
    return int(_default_group().get_world_size(group))


def barrier(group: Any = None) -> None:
    """Return once every rank of ``group`` has called ``barrier``."""
    dist = _default_group()
    try:
        dist.barrier(group)
    except RuntimeError as exc:
        raise failure("barrier", exc, group) from exc


def destroy_process_group(group: Any = None) -> None:
    """Leave the default group (or ``group``); ``is_initialized()`` is False afterwards."""
    _default_group().destroy_process_group(group)


def failure(what: str, exc: BaseException, group: Any = None) -> DistributedError:
    """The error a failed collective raises: which call, which rank, and the usual cause."""
    dist = torch_distributed()
    where = ""
    if dist.is_initialized():
        where = f" on rank {dist.get_rank(group)} of {dist.get_world_size(group)}"
    return DistributedError(f"{what}{where} failed: {str(exc).strip()[:1000]}\n(a peer rank died, called a "
                            "different collective or tensor shape, or did not answer within the process group's "
                            "timeout)")
