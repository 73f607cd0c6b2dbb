"""Running an FX graph of Core ATen ops on zyx.

``ZyxGraph`` resolves every node once (its zyx implementation from ``ATEN``, a Python operator on sizes,
or a PyTorch fallback) and, per call, turns the torch inputs into zyx tensors (``convert.UploadCache``),
records the nodes lazily, and hands the outputs back as torch tensors. The zyx graph of a call is
realized when its outputs are read back, so it fuses and schedules like native zyx code; a graph seen
again replays its recorded schedule.
"""
from __future__ import annotations

import operator
from collections import Counter
from collections.abc import Callable
from typing import Any

from zyx.backend.device import default_device
from zyx.dtype import DType
from zyx.frontend.autograd import engine
from zyx.frontend.base import tensor_class
from zyx.ir.variable import BoundExpr, BoundVariable
from zyx.torch_backend import aten_nn  # noqa: F401 - registers the network ops in ATEN
from zyx.torch_backend.aten_ops import ATEN
from zyx.torch_backend.convert import UploadCache, to_torch, zyx_dtype
from zyx.torch_backend.dynamic import DynamicDims, symbolic_inputs

#: ATen ops that ran in PyTorch (no zyx mapping) since the process started, with their counts
FALLBACKS: Counter[str] = Counter()
_DROPPED_KWARGS = ("device", "layout", "pin_memory", "memory_format", "requires_grad")


def op_name(target: Any) -> str:
    """``add.Tensor`` for ``torch.ops.aten.add.Tensor``; other namespaces keep theirs (``prims.xxx.default``)."""
    name = str(target)
    return name.removeprefix("aten.")


def _static(value: Any) -> Any:
    """A node argument with torch's dtype objects named as zyx dtypes (nodes left for the call to fill)."""
    import torch

    if isinstance(value, torch.dtype):
        return zyx_dtype(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_static(v) for v in value)
    return value


def _torch_fallback(target: Any, name: str, cache: UploadCache) -> Callable[..., Any]:
    """Run ``target`` in PyTorch on host copies of its zyx arguments, noting it in ``FALLBACKS``."""
    import torch

    from zyx.torch_backend.convert import _TORCH_TO_ZYX

    by_zyx = {v: k for k, v in _TORCH_TO_ZYX.items()}

    def to_host(v: Any) -> Any:
        if isinstance(v, tensor_class()):
            return to_torch(v, cache)
        if isinstance(v, (list, tuple)):
            return type(v)(to_host(x) for x in v)
        if isinstance(v, DType):
            return getattr(torch, by_zyx[v])
        return v

    def to_zyx(v: Any) -> Any:
        if isinstance(v, torch.Tensor):
            return cache.to_zyx(v, default_device())
        if isinstance(v, (list, tuple)):
            return type(v)(to_zyx(x) for x in v)
        return v

    def run(*args: Any, **kwargs: Any) -> Any:
        FALLBACKS[name] += 1
        return to_zyx(target(*to_host(args), **{k: to_host(v) for k, v in kwargs.items()}))

    return run


def resolve(target: Any, cache: UploadCache) -> Callable[..., Any]:
    """What runs a call_function node's ``target`` on zyx values."""
    import torch

    if isinstance(target, torch._ops.OpOverload):
        name = op_name(target)
        fn = ATEN.get(name) or ATEN.get(name.rsplit(".", 1)[0])
        if fn is not None:
            return fn
        if target._schema.is_mutable:  # writes into an input: a run on host copies would lose the write
            raise NotImplementedError(f"the zyx backend has no mapping for the in-place ATen op {name}")
        return _torch_fallback(target, name, cache)
    if getattr(target, "__module__", None) in ("_operator", "operator", "math", "builtins") or \
            target is operator.getitem:
        return target  # arithmetic on sizes, tuple indexing
    raise NotImplementedError(f"the zyx backend cannot run {target!r} (not an ATen op)")


class ZyxGraph:
    """An FX GraphModule of ATen ops made callable on torch tensors through zyx."""

    def __init__(self, gm: Any, cache: UploadCache) -> None:
        from torch.fx import Node

        self.cache = cache
        self.device = default_device()
        self.placeholders: list[Node] = []
        self.steps: list[tuple[Node, Callable[..., Any], tuple, dict]] = []
        self.constants: dict[Node, Any] = {}
        self.output: Any = None
        for node in gm.graph.nodes:
            if node.op == "placeholder":
                self.placeholders.append(node)
            elif node.op == "get_attr":
                self.constants[node] = getattr(gm, node.target)
            elif node.op == "call_function":
                kwargs = {k: _static(v) for k, v in node.kwargs.items() if k not in _DROPPED_KWARGS}
                self.steps.append((node, resolve(node.target, cache), _static(node.args), kwargs))
            elif node.op == "output":
                self.output = node.args[0]
            else:
                raise NotImplementedError(f"the zyx backend cannot run FX node kind {node.op!r} ({node.target})")
        self.names = [op_name(n.target) for n, *_ in self.steps if hasattr(n.target, "_schema")]
        self.dynamic = DynamicDims(symbolic_inputs(self.placeholders))

    def _input(self, value: Any) -> Any:
        import torch

        if isinstance(value, torch.Tensor):
            return self.cache.to_zyx(value, self.device)
        if isinstance(value, torch.SymInt):
            return int(value)
        return value

    def __call__(self, *args: Any) -> Any:
        from torch.fx.node import map_arg

        from zyx.torch_backend import aten_ops

        aten_ops.DEVICE[0] = self.device
        env: dict[Any, Any] = self._dynamic_inputs(args) if self.dynamic else \
            {p: self._input(a) for p, a in zip(self.placeholders, args)}
        for node, value in self.constants.items():
            env[node] = self._input(value)
        with engine.no_grad():  # the graphs are functional and come with their own backward graph
            for node, fn, a, kw in self.steps:
                env[node] = fn(*map_arg(a, env.__getitem__), **map_arg(kw, env.__getitem__))
        outs = map_arg(self.output, env.__getitem__)
        return self._outputs(outs)

    def _dynamic_inputs(self, args: tuple) -> dict[Any, Any]:
        """The placeholders' values when some sizes are symbolic: bound Variables for size arguments and
        variable-size tensors for tensors with symbolic dims (a value zyx handed out comes back as it was)."""
        import torch

        bound = self.dynamic.bind(args)
        by_position = {s.position: bound[s.symbol] for s in self.dynamic.inputs if s.axis is None}
        env: dict[Any, Any] = {}
        for i, (p, a) in enumerate(zip(self.placeholders, args)):
            if i in by_position:
                env[p] = by_position[i]
            elif isinstance(a, torch.Tensor):
                env[p] = self.cache.get(a)
                if env[p] is None:
                    env[p] = self.dynamic.upload(a, i, bound, lambda t: self.cache.to_zyx(t, self.device))
            else:
                env[p] = self._input(a)
        return env

    def _outputs(self, outs: Any) -> Any:
        if isinstance(outs, (list, tuple)):
            return type(outs)(self._outputs(o) for o in outs)
        if isinstance(outs, tensor_class()):
            return to_torch(outs, self.cache)
        if isinstance(outs, (BoundVariable, BoundExpr)):
            return int(outs)  # a size the graph hands back (saved for backward): torch takes plain ints
        return outs
