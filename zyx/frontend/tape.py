"""Capture and replay (API.md "Tapes and variables"): ``Tape``, ``jit`` and ``Variable``.

``jit(fn)``: the first call with a given signature (tensor shapes, dtypes, devices and views;
bools and other Python values; which variables) runs ``fn`` under a capture
(``frontend.capture``) and builds a plan (``graph.plan``) from its launches; later calls with that
signature skip the Python function altogether and replay the plan on the new tensors' buffers,
the new variables' values and the new call's floats and ints (``frontend.traced_scalar``: plan
arguments unless Python code read them, which keys the plan by their values). A function whose
launches cannot stand for it (it read values back to the host, ...) runs eagerly on every call
instead. Python bookkeeping that a call must redo (an optimizer's step counts, the random
generator's counter) is registered during the capture as
replay hooks whose results the launches take (``capture.note_replay_hook``,
``journal.note_host_param``).

What a replay reproduces: the results (fresh tensors), in-place writes into argument tensors'
buffers, and ``Tensor._assign`` rebindings (the optimizers' update) of argument tensors and of
tensors the function reached otherwise (a closed-over parameter). Tensors the function reads
without getting them as arguments are found again at each replay through the tensors that
held them at capture (a weight rebound by an eager optimizer step is read fresh; one replaced
by another object makes the call capture again). What it does not reproduce: Python side
effects (``p.grad`` objects, optimizer state dictionaries, prints, closed-over Python values,
which stay as they were at capture) and autograd history (replayed results do not require
grad). A tensor passed as an argument that the capture also read through a closure is read as
that argument on replays. A plan keeps the buffers it read from outside alive while its
function keeps the plan (at most ``SIGNATURES`` signatures per function).

``Tape(*leaves)``: ``tape.realize(*outputs)`` keys the outputs' pending graph by structure
(``graph.schedule.graph_key_of``) and replays a plan of that structure on the graph's buffers
and scalar arguments, or captures one. The block's Python code still runs (it builds the
graph); contract ops in it run when called, as outside a tape.
"""
from __future__ import annotations

import functools
import gc
import threading
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from zyx import graph
from zyx.backend.launch import runtime_lock
from zyx.errors import ShapeError
from zyx.frontend import capture, traced_scalar, varsize
from zyx.frontend.autograd.engine import is_grad_enabled
from zyx.frontend.base import TensorBase, tensor_class
from zyx.graph import plan as plans
from zyx.graph import schedule
from zyx.ir.variable import BOUND, Variable

__all__ = ["Tape", "Variable", "jit", "plan_stats"]

#: captures (plans built or eager fallbacks recorded) and replays, for tests and benchmarks
plan_stats = {"captures": 0, "replays": 0, "eager": 0}
_EAGER = "eager"
_tensor_type: Any = None  # the concrete tensor class, looked up on the first call
_RETRIES = 3
SIGNATURES = 64  # captured signatures kept per jitted function


class _Entry:
    """One captured signature of a jitted function: its plan and how to rebuild the results."""

    __slots__ = ("plan", "guards", "checks", "out_tree", "out_specs", "implicit", "rebinds", "reason", "written",
                 "ext", "scalars", "sguards")

    def __init__(self) -> None:
        self.plan: plans.Plan | None = None
        self.reason: str | None = None  # why there is no plan (the function runs eagerly)
        self.guards: tuple[tuple[Variable, int], ...] = ()  # variable values the plan was built around
        self.checks: tuple[tuple[Any, Any], ...] = ()  # (check, value): Python state the plan holds numbers of
        self.out_tree: Any = None
        self.out_specs: list[tuple[Any, Any, Any]] = []  # (view, dtype, device) per result tensor
        self.implicit: list[tuple[weakref.ref, Any]] = []  # (tensor, view) read through its current buffer
        self.rebinds: list[tuple[Any, int, Any]] = []  # (leaf index or weakref, result index, view)
        self.written: tuple[int, ...] = ()  # arguments the call wrote into in place (version bumps)
        # per external buffer of the plan (a closed-over weight): the tensors holding it then, with
        # their views; one rebound since (an optimizer step outside the call) gives its new buffer
        self.ext: list[list[tuple[weakref.ref, Any]]] = []
        self.scalars: traced_scalar.ScalarCapture | None = None  # the call's numbers, traced (traced_scalar)
        self.sguards: tuple[tuple[int, Any], ...] = ()  # (position, exact value) of numbers Python code read


def _flatten(obj: Any, leaves: list, bindings: dict, key: list, scalars: list | None = None) -> None:
    """Walk an argument: tensors become leaves, bound variables bindings, the rest key values; floats and
    ints (not bools) become ``scalars`` (plan arguments, ``traced_scalar``) where given: the arguments
    themselves and the items of tuples in them (a list or dict may be changed by the function: its
    numbers stay key values)."""
    t = type(obj)
    if scalars is not None and (t is float or t is int):
        key.append(("S", t))
        scalars.append(obj)
    elif t is _tensor_type or isinstance(obj, TensorBase):
        v = obj._view
        leaves.append(obj)
        key.append(("T", v.shape, v.strides, v.offset, obj._dtype, obj._device, obj._ag is not None))
    elif type(obj) in BOUND:  # a bound variable, or t + c (keyed by its form: the plan binds t)
        var, value = obj.variable, obj.bound.value
        old = bindings.setdefault(var, value)
        if old != value:
            raise ShapeError(f"Variable {var.name!r} is bound to both {old} and {value} in one call "
                             "(expected one value per variable)")
        key.append(("V", var, obj.scale, obj.offset))
    elif isinstance(obj, (list, tuple)):
        key.append((type(obj), len(obj)))
        inner = scalars if t is tuple else None
        for x in obj:
            _flatten(x, leaves, bindings, key, inner)
    elif isinstance(obj, dict):
        key.append((dict, tuple(obj)))
        for x in obj.values():
            _flatten(x, leaves, bindings, key)
    elif obj is None or isinstance(obj, (bool, int, float, str, complex)):
        key.append((type(obj), obj))  # a Python value: the plan holds for this value
    elif isinstance(obj, np.generic) and obj.dtype.kind in "biufc":
        key.append((type(obj), obj.item()))  # a NumPy scalar: by value, as a Python number in a list
    else:  # any other object (a module, an optimizer): by identity, kept alive by the key so that
        key.append(("id", id(obj), _Pin(obj)))  # its id is never reused by another object


class _Pin:
    """Holds a key's object alive; equal to every other pin (the id next to it does the keying)."""

    __slots__ = ("obj",)

    def __init__(self, obj: Any) -> None:
        self.obj = obj

    def __eq__(self, other: object) -> bool:
        return type(other) is _Pin

    def __hash__(self) -> int:
        return 0


def _out_tree(obj: Any, tensors: list) -> Any:
    """The result's structure with each tensor replaced by its index in ``tensors`` (and each traced
    number by what gives its value at a replay)."""
    if type(obj) is traced_scalar.TracedScalar:
        return _Number(obj)
    if isinstance(obj, TensorBase):
        tensors.append(obj)
        return _Leaf(len(tensors) - 1)
    if isinstance(obj, (list, tuple)):
        items = [_out_tree(x, tensors) for x in obj]
        return type(obj)(items) if type(obj) in (list, tuple) else type(obj)(*items)
    if isinstance(obj, dict):
        return {k: _out_tree(x, tensors) for k, x in obj.items()}
    return obj


class _Leaf:
    __slots__ = ("i",)

    def __init__(self, i: int) -> None:
        self.i = i


class _Number:
    __slots__ = ("scalar",)

    def __init__(self, scalar: Any) -> None:
        self.scalar = scalar


def _rebuild(tree: Any, tensors: list) -> Any:
    if type(tree) is _Leaf:
        return tensors[tree.i]
    if type(tree) is _Number:
        return traced_scalar.peek(tree.scalar)
    if isinstance(tree, (list, tuple)):
        items = [_rebuild(x, tensors) for x in tree]
        return type(tree)(items) if type(tree) in (list, tuple) else type(tree)(*items)
    if isinstance(tree, dict):
        return {k: _rebuild(x, tensors) for k, x in tree.items()}
    return tree


class _Jitted:
    """A jitted function (see the module docstring)."""

    def __init__(self, fn: Callable) -> None:
        self.fn = fn
        self.cache: dict[tuple, list[_Entry]] = {}
        self.lock = threading.Lock()
        self.retries = 0  # captures redone because they realized older pending values
        functools.update_wrapper(self, fn)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        global _tensor_type
        if _tensor_type is None:
            _tensor_type = tensor_class()
        if capture.active() is not None:
            return self.fn(*args, **kwargs)  # called inside another capture: that one records this call
        leaves: list = []
        bindings: dict[Variable, int] = {}
        key: list = [is_grad_enabled(), (tuple, len(args))]
        scalars: list = []
        for a in args:  # _flatten(args, ...) with its common cases inline (a replay's host time counts)
            t = type(a)
            if t is _tensor_type:
                v = a._view
                leaves.append(a)
                key.append(("T", v.shape, v.strides, v.offset, a._dtype, a._device, a._ag is not None))
            elif t is float or t is int:
                key.append(("S", t))
                scalars.append(a)
            else:
                _flatten(a, leaves, bindings, key, scalars)
        if kwargs:
            key.append(tuple(kwargs))
            for v in kwargs.values():
                _flatten(v, leaves, bindings, key, scalars)
        if len(leaves) > 1:  # which arguments share storage: a plan reads it once, by one position
            first: dict[int, int] = {}
            key.append(tuple(first.setdefault(id(t._data), i) for i, t in enumerate(leaves)))
        k = tuple(key)
        entries = self.cache.get(k)
        if entries:
            for e in entries:
                if e.guards and not all(bindings.get(var) == value for var, value in e.guards):
                    continue
                if e.checks and not all(check() == value for check, value in e.checks):
                    continue
                if e.sguards and not all(traced_scalar.exact(scalars[i]) == v for i, v in e.sguards):
                    continue
                if e.plan is None:
                    plan_stats["eager"] += 1
                    return self.fn(*args, **kwargs)
                out = _replay(e, leaves, bindings, scalars)
                if out is not _EAGER:
                    return out
                with self.lock:  # a tensor it rebinds died or changed layout: capture again
                    entries.remove(e)
                break
        return self._capture(k, args, kwargs, leaves, bindings, scalars)

    def _capture(self, k: tuple, args: tuple, kwargs: dict, leaves: list, bindings: dict, scalars: list) -> Any:
        for t in leaves:
            t._realized()
        before = [t._data for t in leaves]
        versions = [d.version for d in before]
        leaf_bufs = [d.buffer for d in before]
        e = _Entry()
        with capture.capture() as c:
            if scalars:  # the numbers reach the function traced (traced_scalar)
                e.scalars, traced = traced_scalar.begin(scalars)
                it = iter(traced)
                args = _substitute(args, it)
                kwargs = {name: _substitute(v, it) for name, v in kwargs.items()}
            try:
                result = self.fn(*args, **kwargs)
                tensors: list = []
                e.out_tree = _out_tree(result, tensors)
                for t in tensors:
                    t._realized()
                changed = [i for i, t in enumerate(leaves) if t._data is not before[i]]
                e.written = tuple(i for i, t in enumerate(leaves) if t._data is before[i] and
                                  before[i].version != versions[i])
                for i in changed:
                    leaves[i]._realized()
                assigned = []
                seen = {id(t) for t in leaves}
                for t, old, old_view in c.assigned:
                    if id(t) not in seen:
                        seen.add(id(t))
                        assigned.append((t, old, old_view))
                        t._realized()
            finally:
                if e.scalars is not None:
                    traced_scalar.end(e.scalars)
        plan_stats["captures"] += 1
        # tensors the function rebound in place that it did not get as arguments: read through
        # their current buffer at each replay (when their value came from before the capture)
        j = c.journal
        implicit = [(t, old, v) for t, old, v in assigned
                    if old.buffer is not None and id(old.buffer.cl) not in j.allocs]
        inputs = leaf_bufs + [old.buffer for _, old, _ in implicit]
        results = [t._data.buffer for t in tensors]
        e.out_specs = [(_view_spec(t), t._dtype, t._device) for t in tensors]
        for i in changed:
            e.rebinds.append((i, len(results), leaves[i]._view))
            results.append(leaves[i]._data.buffer)
        for t, _, _ in assigned:
            e.rebinds.append((weakref.ref(t), len(results), t._view))
            results.append(t._data.buffer)
        e.implicit = [(weakref.ref(t), old_view) for t, _, old_view in implicit]
        e.guards = tuple((var, bindings[var]) for var in c.tainted if var in bindings)
        e.checks = tuple(c.checks)
        if e.scalars is not None:
            e.sguards = tuple((i, traced_scalar.exact(scalars[i])) for i in sorted(e.scalars.tainted))
            result = _rebuild(e.out_tree, tensors) if _has_number(e.out_tree) else result
        devices = {t._device for t in leaves} | {t._device for t in tensors}
        if c.nodes.prior_realized or c.again:
            # it computed values that were pending before the call: they are realized now, so the
            # next call captures again (API.md: "the first call(s) capture")
            self.retries += 1
            if self.retries <= _RETRIES:
                return result
            e.reason = "each call realizes values that were pending before it"
        elif j.unreplayable is not None:
            e.reason = j.unreplayable
        elif len(devices) != 1:
            e.reason = "the call's tensors live on several devices" if devices else "the call has no tensors"
        elif None in results:
            e.reason = "a result is not a realized buffer"
        else:
            built = plans.build(j, devices.pop(), inputs, results, None, bindings, c.hooks)
            if isinstance(built, str):
                e.reason = built
            else:
                e.plan = built
                e.ext = _holders(built.externals)
        with self.lock:
            if k not in self.cache and len(self.cache) >= SIGNATURES:
                del self.cache[next(iter(self.cache))]  # the oldest signature (its plans and the buffers they keep)
            entries = self.cache.setdefault(k, [])
            if len(entries) >= SIGNATURES:  # values read by Python code (a variable, a number) key one each
                del entries[0]
            entries.append(e)
        return result


def _substitute(obj: Any, traced: Any) -> Any:
    """``obj`` with its numbers replaced by the next traced scalars, in ``_flatten``'s order."""
    t = type(obj)
    if t is float or t is int:
        return next(traced)
    if t is tuple:
        return tuple(_substitute(x, traced) for x in obj)
    return obj


def _has_number(tree: Any) -> bool:
    if type(tree) is _Number:
        return True
    if isinstance(tree, (list, tuple)):
        return any(_has_number(x) for x in tree)
    if isinstance(tree, dict):
        return any(_has_number(x) for x in tree.values())
    return False


def _replay(e: _Entry, leaves: list, bindings: dict, scalars: list) -> Any:
    if e.scalars is None:
        return _replay_plan(e, leaves, bindings)
    with runtime_lock:  # the numbers are the entry's for the time of this replay (traced_scalar)
        e.scalars.set_values(scalars)
        try:
            return _replay_plan(e, leaves, bindings)
        finally:
            e.scalars.restore()


def _replay_plan(e: _Entry, leaves: list, bindings: dict) -> Any:
    plan = e.plan
    inputs = []
    nodes = []
    for t in leaves:
        node = t._data
        inputs.append(node.buffer if node.buffer is not None else graph.realize(node))
        if node.readers:
            nodes.append(node)
    # the plan numbers its inputs: the arguments, the implicit ones, then the externals (graph.plan.build)
    for ref, view in e.implicit:
        t = ref()
        if t is None or t._view != view:
            return _EAGER  # the tensor died or changed layout: capture again
        inputs.append(graph.realize(t._data))
        if t._data.readers:
            nodes.append(t._data)
    for buf, holders in zip(plan.externals, e.ext):  # type: ignore[union-attr]
        alive = False
        for ref, view in holders:
            t = ref()
            if t is None:
                continue
            alive = True
            if t._data.readers:
                nodes.append(t._data)
            if t._data.buffer is not buf:
                if t._view != view:
                    return _EAGER  # rebound to another layout: capture again
                buf = graph.realize(t._data)
                break
        if holders and not alive:
            return _EAGER  # every tensor that held it is gone (replaced): the call reads others now
        inputs.append(buf)
    for node in nodes:  # pending readers of a buffer the plan may write run first
        graph.flush_readers(node)
    bufs = plan.replay(inputs, None, bindings)  # type: ignore[union-attr]
    for i in e.written:  # an in-place write: saved values of autograd see it, as after an eager write
        leaves[i]._data.version += 1
    plan_stats["replays"] += 1
    cls = _tensor_type
    from_buffer = graph.from_buffer
    outs = [cls(from_buffer(bufs[i], dt, dev), view, dt, dev) if type(view) is not tuple else
            _variable_sized(from_buffer(bufs[i], dt, dev), view, dt, dev, bindings)
            for i, (view, dt, dev) in enumerate(e.out_specs)]
    for target, ri, view in e.rebinds:
        t = leaves[target] if type(target) is int else target()
        if t is not None:
            old = t._data
            t._data = graph.from_buffer(bufs[ri], t._dtype, t._device)
            t._data.version = old.version + 1
            t._view = view
    return _rebuild(e.out_tree, outs)


def _view_spec(t: Any) -> Any:
    """A result's view; for a tensor of variable size (``frontend.varsize``) its static view and
    variable axes, without reading the bound values (a replay binds the call's values)."""
    if type(t) is _tensor_type:
        return t._view
    return varsize.bind_spec(t) if type(t) in varsize.VARSIZE else t._view


def _variable_sized(data: Any, spec: tuple, dtype: Any, device: Any, bindings: dict) -> Any:
    return varsize.rebuild(data, spec, dtype, device, bindings)


def _holders(buffers: list) -> list[list[tuple[weakref.ref, Any]]]:
    """The tensors viewing each buffer (with their views), found once per capture."""
    per_buffer = plans.nodes_holding(buffers)
    node_index = {id(n): i for i, nodes in enumerate(per_buffer) for n in nodes}
    out: list[list[tuple[weakref.ref, Any]]] = [[] for _ in buffers]
    all_nodes = [n for nodes in per_buffer for n in nodes]
    if all_nodes:
        for r in gc.get_referrers(*all_nodes):
            if isinstance(r, TensorBase) and id(r._data) in node_index:
                out[node_index[id(r._data)]].append((weakref.ref(r), r._view))
    return out


def jit(fn: Callable) -> Callable:
    """``fn`` captured once per signature and replayed after (API.md "Tapes and variables")."""
    return _Jitted(fn)


_tape_plans: dict[tuple, plans.Plan | str] = {}
TAPE_PLANS = 1024


class Tape:
    """A capture scope over ``leaves`` (API.md): ``with zyx.Tape(x, w) as tape: ...
    tape.realize(y)`` runs ``y``'s graph through a plan cached by the graph's structure."""

    def __init__(self, *leaves: Any) -> None:
        for x in leaves:
            if not isinstance(x, TensorBase):
                raise TypeError(f"Tape leaves must be tensors, got {type(x).__name__}")
        self.leaves = leaves
        self.replayed = 0  # realize() calls of this scope that replayed a plan

    def __enter__(self) -> Tape:
        for x in self.leaves:
            x._realized()
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def realize(self, *outputs: Any) -> Any:
        """Run the outputs' pending graph (replaying the plan of its structure) and return them."""
        for t in outputs:
            if not isinstance(t, TensorBase):
                raise TypeError(f"Tape.realize takes tensors, got {type(t).__name__}")
        roots = [t._data for t in outputs if t._data.buffer is None]
        if roots:
            _realize_roots(roots, self)
        return outputs[0] if len(outputs) == 1 else outputs


def _realize_roots(roots: list, tape: Tape) -> None:
    from zyx.backend.launch import runtime_lock

    with runtime_lock:
        gk = schedule.graph_key_of(roots, graph.realize)
        roots = [r for r in roots if r.buffer is None]  # an EXTERN root ran while keying
        if gk is None or not roots or capture.active() is not None:  # (inside a capture: it records this)
            for r in roots:
                graph.realize(r)
            return
        key = (gk.key, tuple(gk.nodes.index(r) for r in roots))
        found = _tape_plans.get(key)
        if isinstance(found, plans.Plan):
            bufs = found.replay(gk.bufs + found.externals, gk.consts)
            for r, b in zip(roots, bufs):
                _set_buffer(r, b)
            plan_stats["replays"] += 1
            tape.replayed += 1
            return
        if found is not None:  # no plan for this structure: realize as usual
            for r in roots:
                graph.realize(r)
            return
        with capture.capture() as c:
            for r in roots:
                graph.realize(r)
        plan_stats["captures"] += 1
        built = plans.build(c.journal, roots[0].device, gk.bufs, [r.buffer for r in roots],
                            {id(k): i for i, k in enumerate(gk.consts)}, {}, c.hooks)
        if len(_tape_plans) >= TAPE_PLANS:
            del _tape_plans[next(iter(_tape_plans))]
        _tape_plans[key] = built


def _set_buffer(node: Any, buf: Any) -> None:
    graph.set_buffer(node, buf)
