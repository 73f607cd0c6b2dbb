"""``torch.compile(model, backend="zyx")``: PyTorch's graphs run on zyx.

Dynamo captures the model's Python into FX graphs; AOTAutograd turns each into Core ATen forward and
backward graphs (PyTorch's decompositions applied); ``graph_runner.ZyxGraph`` records their ops as zyx ops,
so a graph fuses and schedules like native zyx code. Parameters are uploaded once and again only when
torch changed them (their version counters). An ATen op with no zyx form runs in PyTorch on host copies
and is listed by ``fallbacks()``. Registered as the ``zyx`` backend through the ``torch_dynamo_backends``
entry point of the ``torch`` extra.
"""
from __future__ import annotations

from typing import Any

from zyx.torch_backend.aten_ops import ATEN
from zyx.torch_backend.convert import UploadCache
from zyx.torch_backend.graph_runner import FALLBACKS, ZyxGraph

_cache = UploadCache()  # one per process: a parameter shared by several graphs crosses once


def fallbacks() -> dict[str, int]:
    """The ATen ops that ran in PyTorch instead of zyx since the process started, with how often."""
    return dict(FALLBACKS)


def release() -> None:
    """Forget the uploaded parameters and saved values: their device memory is freed once no compiled graph
    call holds them (a later call uploads what it needs again)."""
    _cache.clear()


def supported_ops() -> list[str]:
    """The ATen ops (packet names, or ``packet.overload``) the backend maps onto zyx ops."""
    return sorted(ATEN)


def _compile(gm: Any, example_inputs: Any) -> Any:
    from torch._functorch.aot_autograd import make_boxed_func

    return make_boxed_func(ZyxGraph(gm, _cache))


def zyx_backend(gm: Any, example_inputs: Any, **kwargs: Any) -> Any:
    """The dynamo backend: AOTAutograd with Core ATen decompositions, each graph compiled for zyx."""
    from torch._decomp import core_aten_decompositions
    from torch._dynamo.backends.common import aot_autograd

    backend = aot_autograd(fw_compiler=_compile, bw_compiler=_compile, inference_compiler=_compile,
                           decompositions=core_aten_decompositions())
    return backend(gm, example_inputs, **kwargs)


__all__ = ["fallbacks", "release", "supported_ops", "zyx_backend"]
