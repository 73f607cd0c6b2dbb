"""The optimizer base class: parameter groups, per-parameter state, ``zero_grad`` and state dicts.

An optimizer's ``step()`` computes each parameter's new value and new state with lazy
elementwise ops and realizes them at once, state first, so every update is a few fused
kernels (one per value written: the engine's kernels have one output) and nothing of the
step is left pending for the next forward. The parameter keeps its identity: it is rebound
to its new value (``Tensor._assign``), which counts as an in-place write for autograd.
State tensors are replaced, never written into, so a ``state_dict()`` taken earlier is a
snapshot that later steps leave alone.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from zyx.backend import journal
from zyx.errors import ShapeError
from zyx.frontend.autograd import enable_grad, no_grad
from zyx.frontend.creation import from_numpy, zeros_like
from zyx.frontend.tensor import Tensor


class Optimizer:
    """The base of zyx's optimizers (PyTorch's ``torch.optim.Optimizer`` interface).

    ``params``: an iterable of tensors, or of dicts each holding ``params`` and options that
    override ``defaults`` for that group. A subclass implements ``_update(p, grad, group, state)``
    returning the parameter's new value and the state entries that change."""

    def __init__(self, params: Iterable[Any], defaults: dict[str, Any]) -> None:
        self.defaults = dict(defaults)
        self.state: dict[Tensor, dict[str, Any]] = {}
        self.param_groups: list[dict[str, Any]] = []
        groups = list(params)
        if not groups:
            raise ValueError(f"{type(self).__name__} got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def add_param_group(self, group: dict[str, Any]) -> None:
        """Add a group of parameters with its own options (the others from ``defaults``)."""
        if not isinstance(group, dict):
            raise TypeError(f"a parameter group is a dict with a 'params' entry, got {type(group).__name__}")
        params = group["params"]
        params = [params] if isinstance(params, Tensor) else list(params)
        for i, p in enumerate(params):
            if not isinstance(p, Tensor):
                raise TypeError(f"{type(self).__name__}: params[{i}] is a {type(p).__name__}, expected a zyx Tensor")
            if not p.is_leaf:
                raise ValueError(f"{type(self).__name__}: params[{i}] is not a leaf tensor; an optimizer updates "
                                 "leaves (parameters), not computed values")
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if len({id(p) for p in params}) != len(params) or any(id(p) in seen for p in params):
            raise ValueError(f"{type(self).__name__}: a parameter appears twice (in a group or across groups)")
        full = {**self.defaults, **group, "params": params}
        self.param_groups.append(full)

    # -- the step ---------------------------------------------------------------
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Update every parameter that has a gradient; returns ``closure()``'s loss when given."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        with no_grad():
            for group in self.param_groups:
                for p in group["params"]:
                    grad = p.grad
                    if grad is None:
                        continue
                    if group.get("maximize", False):
                        grad = -grad
                    state = self.state.get(p, {})
                    new_value, changed = self._update(p, grad.detach(), group, state)
                    if changed:  # Python-side state a replayed plan would not update (zyx.jit)
                        journal.unreplayable(f"{type(self).__name__} keeps per-parameter state in Python")
                    for key, value in changed.items():  # state first: the parameter's kernel reads it
                        state[key] = value
                        if isinstance(value, Tensor):
                            value.realize()
                    if state:
                        self.state[p] = state
                    p._assign(new_value)
                    p.realize()
        return loss

    def _update(self, p: Tensor, grad: Tensor, group: dict[str, Any],
                state: dict[str, Any]) -> tuple[Tensor, dict[str, Any]]:
        raise NotImplementedError

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Drop every parameter's gradient (or set it to zeros with ``set_to_none=False``)."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    p.grad = zeros_like(p.grad)

    # -- state dicts --------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """``{'state': {index: {name: value}}, 'param_groups': [{option: value, 'params': [index]}]}``, the
        parameters numbered in group order as PyTorch numbers them."""
        index: dict[int, int] = {}
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            packed["params"] = [index.setdefault(id(p), len(index)) for p in group["params"]]
            groups.append(packed)
        state = {index[id(p)]: dict(s) for p, s in self.state.items() if id(p) in index}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore options and state from ``state_dict()``'s result (groups and sizes must match).

        State tensors (zyx tensors or NumPy arrays) move to their parameter's device and floating ones
        to its dtype; ``step`` stays a number."""
        saved_groups = state_dict["param_groups"]
        if len(saved_groups) != len(self.param_groups):
            raise ValueError(f"loaded state dict has {len(saved_groups)} parameter groups; this optimizer has "
                             f"{len(self.param_groups)}")
        by_index: dict[int, Tensor] = {}
        for i, (saved, group) in enumerate(zip(saved_groups, self.param_groups)):
            if len(saved["params"]) != len(group["params"]):
                raise ValueError(f"loaded state dict's group {i} has {len(saved['params'])} parameters; this "
                                 f"optimizer's has {len(group['params'])}")
            for idx, p in zip(saved["params"], group["params"]):
                by_index[int(idx)] = p
        state: dict[Tensor, dict[str, Any]] = {}
        for idx, entries in state_dict["state"].items():
            p = by_index.get(int(idx))
            if p is None:
                continue
            state[p] = {key: _state_value(key, value, p) for key, value in entries.items()}
        self.state = state
        for saved, group in zip(saved_groups, self.param_groups):
            params = group["params"]
            group.clear()
            group.update({k: v for k, v in saved.items() if k != "params"})
            group["params"] = params

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines += [f"    {k}: {v}" for k, v in sorted(group.items()) if k != "params"]
        return "\n".join(lines) + "\n)"


def _state_value(key: str, value: Any, p: Tensor) -> Any:
    """A loaded state entry on ``p``'s device (floating tensors in ``p``'s dtype); ``step`` as a float."""
    if key == "step":
        return float(value.item() if isinstance(value, (Tensor, np.ndarray)) else value)
    if isinstance(value, np.ndarray):
        value = from_numpy(np.ascontiguousarray(value))
    if isinstance(value, Tensor):
        if value.shape != p.shape:
            raise ShapeError(f"loaded optimizer state {key!r} has shape {value.shape}; expected the parameter's "
                             f"{p.shape}")
        if value.device is not p.device:
            value = value.to(p.device)
        if value.dtype.is_float and value.dtype is not p.dtype:
            value = value.cast(p.dtype)
        return value.detach()
    return value


def lerp(start: Tensor, end: Tensor, weight: float) -> Tensor:
    """``start + weight * (end - start)`` with a float weight, in the form PyTorch's ``lerp_`` computes
    (from the nearer end, so weights near 1 lose no precision)."""
    if weight < 0.5:
        return start + weight * (end - start)
    return end - (end - start) * (1.0 - weight)


def check_range(name: str, value: float, low: float = 0.0, high: float | None = None) -> None:
    """Refuse an option outside ``[low, high)`` with PyTorch's ``ValueError``."""
    if not value >= low or (high is not None and not value < high):
        bound = f">= {low}" if high is None else f"in [{low}, {high})"
        raise ValueError(f"Invalid {name}: {value} (expected {bound})")
