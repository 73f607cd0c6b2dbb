"""The optimizer base class: parameter groups, per-parameter state, ``zero_grad`` and state dicts.

An optimizer's ``step()`` updates the parameters and their state tensors in place, one kernel for
all the parameters of a group that step alike (``zyx.kernels.optimizer_step``: a few for a group larger
than one launch takes, one per dtype): the subclass names each parameter's formula, its options and its
run-time numbers.
As in PyTorch, the update is an in-place write (a pending backward that saved the parameter
raises, views of the parameter see the new values) and ``state_dict()`` holds references to
the live state tensors (copy them to keep a snapshot).
"""
from __future__ import annotations

import functools
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from zyx.backend import journal
from zyx.errors import ShapeError
from zyx.frontend import capture
from zyx.frontend.autograd.engine import enable_grad, no_grad
from zyx.frontend.base import check_writable
from zyx.frontend.creation import from_numpy, zeros_like
from zyx.frontend.tensor import Tensor
from zyx.frontend.traced_scalar import TracedScalar, peek
from zyx.kernels import optimizer_step


@dataclass(frozen=True)
class Update:
    """One parameter's step: the formula (``algo``), its options (``flags``), the state tensors it
    updates in place (names in ``state``) and its run-time numbers; parameters with equal updates (and
    dtype and device) share a launch."""

    algo: str
    flags: frozenset[str] | set[str]
    state: tuple[str, ...]
    scalars: dict[str, float]


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
            check_writable(p, f"{type(self).__name__}: params[{i}]")  # step() updates it in place
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
        capturing = capture.active() is not None
        if capturing:  # a replay holds the options' numbers: valid while they stay
            ref = weakref.ref(self)
            capture.note_check(lambda: (o := ref()) is not None and o._options(), self._options())
        stepped: list[tuple[Any, dict[str, Any]]] = []  # (weak parameter, group) of each update, in order
        latest: list[Any] = []  # each update's numbers at a replay (filled by the replay hook)
        with no_grad():
            for group in self.param_groups:
                # the group's parameters that step alike (device, dtype, formula, options and numbers: the same
                # step count) share launches; the first one's update (and index in ``stepped``) stands for all
                batches: dict[tuple, tuple[Update, frozenset[str], int, list[Tensor], list[dict[str, Tensor]]]] = {}
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    state = self.state.get(p, {})
                    fresh = not state
                    _follow(p, state)
                    update = self._kernel(p, group, state)
                    if state:
                        self.state[p] = state
                        if fresh:  # state made by this step: later calls' steps differ (zyx.jit)
                            capture.capture_again()
                    flags = frozenset(update.flags | ({"maximize"} if group.get("maximize", False) else set()))
                    key = (p.device, p.dtype, update.algo, flags, update.state,
                           tuple((k, peek(v)) for k, v in update.scalars.items()))
                    batch = batches.setdefault(key, (update, flags, len(stepped), [], []))
                    batch[3].append(p)
                    batch[4].append({k: state[k] for k in update.state})
                    if capturing:
                        stepped.append((weakref.ref(p), group))
                for update, flags, index, params, states in batches.values():
                    replayed = functools.partial(_latest_scalar, latest, index) if capturing else None
                    step_in_place(update.algo, params, states, flags, update.scalars, replayed)
        if capturing:
            capture.note_replay_hook(self._replay_hook(stepped, latest))
        return loss

    def _kernel(self, p: Tensor, group: dict[str, Any], state: dict[str, Any]) -> Update:
        raise NotImplementedError

    # -- replays of a captured step (zyx.jit) -----------------------------------------
    # A replay does not run step(): its hook redoes the Python bookkeeping (step counts) through
    # _kernel into ``latest``, and each launch takes its fresh numbers (bias corrections) from there.
    def _replay_hook(self, stepped: list[tuple[Any, dict[str, Any]]], latest: list[Any]) -> Callable[[], None]:
        ref = weakref.ref(self)

        def hook() -> None:
            opt = ref()
            if opt is not None:
                latest[:] = [None if (p := p_ref()) is None else opt._kernel(p, group, opt.state.get(p, {}))
                             for p_ref, group in stepped]

        return hook

    def _options(self) -> tuple:
        """Every group's options (a learning-rate scheduler changes them between steps)."""
        return tuple(tuple(sorted((k, _option_key(v)) for k, v in g.items() if k != "params"))
                     for g in self.param_groups)

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


def _option_key(v: Any) -> Any:
    """An option's value as the replay check compares it: a jitted function's traced number (an ``lr``
    argument) by identity, as a replay gives it its new value (``frontend.traced_scalar``)."""
    return ("traced", id(v)) if type(v) is TracedScalar else repr(v)


def _latest_scalar(latest: list[Any], index: int, name: str) -> float:
    """Scalar ``name`` of update ``index`` as the replay hook recomputed it."""
    return latest[index].scalars[name]


def _follow(p: Tensor, state: dict[str, Any]) -> None:
    """Move ``p``'s state tensors to its device when it moved since they were made (``Module.to``
    after a step), as the step's kernel runs there and updates them in place."""
    for k, v in state.items():
        if isinstance(v, Tensor) and v.device is not p.device:
            state[k] = v.to(p.device)


def _state_value(key: str, value: Any, p: Tensor) -> Any:
    """A loaded state entry on ``p``'s device (floating tensors in ``p``'s dtype), a copy of its own (steps
    write state in place; the loaded dict stays as it was, as PyTorch copies it); ``step`` as a float."""
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
        return value.detach().clone().realize()
    return value


def lerp_scalars(weight: float) -> tuple[set[str], dict[str, float]]:
    """The flag and number of a running average ``lerp(avg, new, weight)`` as PyTorch's ``lerp_`` computes
    it: from the nearer end, so weights near 1 lose no precision."""
    if weight < 0.5:
        return set(), {"avg_weight": weight}
    return {"lerp_from_end"}, {"avg_keep": 1.0 - weight}


def check_range(name: str, value: float, low: float = 0.0, high: float | None = None) -> None:
    """Refuse an option outside ``[low, high)`` with PyTorch's ``ValueError``."""
    if not value >= low or (high is not None and not value < high):
        bound = f">= {low}" if high is None else f"in [{low}, {high})"
        raise ValueError(f"Invalid {name}: {value} (expected {bound})")


def make_dense_in_place(t: Tensor) -> None:
    """Rebind ``t`` to a dense copy of its values when it is not dense already, so the step's kernel
    can write it element by element (a parameter that is a strided view of a larger buffer)."""
    if not t._view.is_contiguous:
        t._assign(t.contiguous().realize())


def step_in_place(algo: str, params: list[Tensor], states: list[dict[str, Tensor]], flags: frozenset[str],
                  scalars: dict[str, float], replayed: Callable[[str], float] | None = None) -> None:
    """Run ``algo``'s update on each of ``params`` (one device and dtype) and its ``states`` tensors (same
    shape and dtype, updated in place) from its gradient by ``zyx.kernels.optimizer_step``, in as few
    launches as it allows; ``flags`` pick the formula's options, ``scalars`` are its run-time numbers, the
    same for every parameter (in the compute type of the dtype: double for float64, float otherwise).
    Under a capture, ``replayed(name)`` gives scalar ``name``'s value at each replay (``journal.note_host_param``)."""
    work = [(p, s) for p, s in zip(params, states) if p.numel()]
    if not work:
        return
    grads = []
    for p, s in work:
        make_dense_in_place(p)
        for t in s.values():
            make_dense_in_place(t)
        grad = p.grad.detach()
        if grad.device is not p.device:  # a gradient assigned from another device
            grad = grad.to(p.device)
        grads.append(grad if grad.dtype is p.dtype else grad.cast(p.dtype))
    dtype = work[0][0].dtype
    number = np.float64 if dtype.name == "float64" else np.float32
    grad_bufs = [g._realized() for g in grads]
    # a traced number (a jitted function's lr) is peeked, not read: the replay recomputes it (below)
    numbers = [number(peek(v) if replayed is not None else v) for v in scalars.values()]
    if replayed is not None:
        for name, arg in zip(scalars, numbers):
            journal.note_host_param(arg, lambda name=name: number(replayed(name)))
    # _buf: the writes' own buffers, after every pending reader of their old values has run
    slots = [optimizer_step.Slot(p.numel(), g._view, p._buf, gb, tuple(t._buf for t in s.values()))
             for (p, s), g, gb in zip(work, grads, grad_bufs)]
    optimizer_step.step(work[0][0].device, algo, dtype, flags, tuple(work[0][1]), tuple(scalars), slots, numbers)
