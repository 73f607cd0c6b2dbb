"""Reverse-mode autograd: grad modes, the backward graph of ``Node`` objects, and the engine.

A tensor that requires grad carries an ``AutogradMeta`` (``tensor._ag``; None otherwise, so
the forward path of a tensor that needs no gradient pays one attribute test per op). An op
whose inputs require grad records a ``Node`` on its output: the gradient rule of that op
(``autograd/rules.py``: one rule per primitive op), the nodes of its inputs (``next``)
and the tensors the rule needs (saved with their storage version, so an in-place write to
one of them is caught at ``backward()``). A leaf's node is its ``AccumulateGrad``, which
holds the leaf weakly (no reference cycle keeps a dropped parameter's buffers alive).

Backward runs the rules in reverse topological order. The rules are ordinary lazy tensor
ops, so the backward pass is recorded, fused and scheduled like the forward; with
``create_graph=True`` the rules themselves are recorded, which gives higher derivatives.
Saved tensors are dropped as soon as their node has run (``retain_graph=False``); running a
freed node again raises ``AutogradError``.
"""
from __future__ import annotations

import functools
import inspect
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any

from zyx.errors import AutogradError, DTypeError
from zyx.frontend.autograd.views import rebase_rule, view_of_base
from zyx.frontend.base import TensorBase
from zyx.frontend.creation import ones_like

_state = threading.local()  # grad mode is per thread, as in PyTorch


def is_grad_enabled() -> bool:
    """Whether ops record gradients now (``no_grad`` / ``inference_mode`` turn it off)."""
    return getattr(_state, "enabled", True)


def _set_enabled(flag: bool) -> None:
    _state.enabled = flag


class _GradMode:
    """A context manager and decorator that sets grad mode for its block (restored after). As in
    PyTorch it also decorates bare (``@zyx.no_grad`` as well as ``@zyx.no_grad()``), and a decorated
    generator runs each of its steps in the mode, not just the call that creates it."""

    enabled = True

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and not kwargs and callable(args[0]):  # a bare decorator: @zyx.no_grad
            return cls()(args[0])
        return super().__new__(cls)

    def _fresh(self) -> _GradMode:
        """A new manager with this one's settings (each decorated call enters its own)."""
        return type(self)()

    def __enter__(self) -> None:
        self._saved = getattr(self, "_saved", [])
        self._saved.append(is_grad_enabled())
        _set_enabled(self.enabled)

    def __exit__(self, *exc: Any) -> None:
        _set_enabled(self._saved.pop())

    def __call__(self, fn: Callable) -> Callable:
        if inspect.isgeneratorfunction(fn):
            return self._wrap_generator(fn)

        @functools.wraps(fn)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            with self._fresh():
                return fn(*args, **kwargs)

        return wrapped

    def _wrap_generator(self, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            with self._fresh():
                gen = fn(*args, **kwargs)
            try:
                with self._fresh():
                    value = gen.send(None)
                while True:
                    try:
                        request = yield value
                    except GeneratorExit:
                        with self._fresh():
                            gen.close()
                        raise
                    except BaseException as exc:  # noqa: BLE001 - thrown in by the caller: passed on in the mode
                        with self._fresh():
                            value = gen.throw(exc)
                    else:
                        with self._fresh():
                            value = gen.send(request)
            except StopIteration as stop:
                return stop.value

        return wrapped


class no_grad(_GradMode):  # PyTorch's lower-case name
    """Ops in this block record no gradients (``with zyx.no_grad():``, ``@zyx.no_grad()`` or
    ``@zyx.no_grad``)."""

    enabled = False


class enable_grad(_GradMode):  # PyTorch's lower-case name
    """Ops in this block record gradients, also inside ``no_grad``."""

    enabled = True


class inference_mode(_GradMode):  # PyTorch's lower-case name
    """Like ``no_grad``: nothing in the block is recorded for backward. ``inference_mode(False)``
    leaves grad mode as it is (PyTorch's ``mode=False``)."""

    def __init__(self, mode: bool = True) -> None:
        self.mode = bool(mode)

    @property
    def enabled(self) -> bool:  # type: ignore[override]
        return is_grad_enabled() if not self.mode else False

    def _fresh(self) -> _GradMode:
        return type(self)(self.mode)


class set_grad_enabled(_GradMode):  # PyTorch's lower-case name
    """``zyx.set_grad_enabled(flag)`` turns grad mode on or off: at once when called as a function
    (PyTorch's behaviour), and back to the previous mode after a ``with`` block or decorated call."""

    def __new__(cls, mode: bool) -> Any:
        return object.__new__(cls)

    def __init__(self, mode: bool) -> None:
        self.mode = bool(mode)
        self._prev = is_grad_enabled()
        _set_enabled(self.mode)

    @property
    def enabled(self) -> bool:  # type: ignore[override]
        return self.mode

    def __enter__(self) -> None:
        self._saved = getattr(self, "_saved", [])
        self._saved.append(self._prev)
        _set_enabled(self.mode)

    def __call__(self, fn: Callable) -> Callable:
        _set_enabled(self._prev)  # as a decorator it changes the mode only inside the calls
        return super().__call__(fn)

    def _fresh(self) -> _GradMode:
        fresh = object.__new__(type(self))
        fresh.mode, fresh._prev = self.mode, is_grad_enabled()
        return fresh


class Node:
    """One recorded op of the backward graph; ``type(node).__name__`` names the op (``MulBackward``).

    ``fn(grad, *saved)`` returns one gradient (or None) per input; ``next`` holds the input's
    node (a ``Node``, an ``AccumulateGrad`` for a leaf, or None for an input needing no grad)."""

    __slots__ = ("next", "fn", "saved", "versions", "freed", "retained", "__weakref__")

    def __init__(self, fn: Callable[..., Sequence[Any]], next_nodes: tuple, saved: tuple) -> None:
        self.next = next_nodes
        self.fn = fn
        self.saved = saved
        self.versions = tuple(t._data.version for t in saved)
        self.freed = False
        self.retained: weakref.ref | None = None  # the output tensor, when it called retain_grad()

    def apply(self, grad: Any) -> Sequence[Any]:
        if self.freed:
            raise AutogradError(f"{type(self).__name__}: trying to backward through the graph a second time "
                                "(its saved tensors were freed); pass retain_graph=True to the first backward")
        for t, v in zip(self.saved, self.versions):
            if t._data.version != v:
                raise AutogradError(f"{type(self).__name__}: a tensor this op saved for backward was modified by "
                                    f"an in-place write (version {t._data.version}, expected {v}); clone it "
                                    "before writing into it")
        return self.fn(grad, *self.saved)

    def release(self) -> None:
        self.saved = ()
        self.versions = ()
        self.fn = None  # type: ignore[assignment]
        self.freed = True

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"


class AccumulateGrad(Node):
    """The node of a leaf tensor: gradients reaching it are added to ``leaf.grad``."""

    __slots__ = ("leaf",)

    def __init__(self, leaf: Any) -> None:
        super().__init__(lambda g: (), (), ())
        self.leaf = weakref.ref(leaf)


class AutogradMeta:
    """What a tensor that requires grad carries: its gradient, its node, and whether it keeps
    its gradient as a non-leaf (``retain_grad``)."""

    __slots__ = ("grad", "grad_fn", "accumulator", "base", "seen", "views", "stale", "post_accumulate")

    def __init__(self, grad_fn: Node | None = None) -> None:
        self.grad: Any = None
        self.grad_fn = grad_fn
        # a leaf's hooks run once its gradient of this backward is in .grad (``register_post_accumulate_grad_hook``)
        self.post_accumulate: dict[int, Callable[[Any], None]] | None = None
        self.accumulator: AccumulateGrad | None = None
        # a view's base (weakly): the tensor whose storage it shares, whose history an in-place write
        # through the view must also update (rules.record_write)
        self.base: weakref.ref | None = None
        # a view's: the base's grad_fn its history was made from; the base written in place since (a new
        # grad_fn) makes the view's history stale, regenerated from the base's new one (``node_of``)
        self.seen: Node | None = None
        # a base's: weak references to its views that record history (pruned as they die)
        self.views: list[weakref.ref] | None = None
        # a view's, after its base was written in place: (the base's new grad_fn, the base's View, its
        # device), taken at the write, so the view's history is regenerated even if the base is gone by then
        self.stale: tuple | None = None


_NODE_CLASSES: dict[str, type[Node]] = {}


def node_class(name: str) -> type[Node]:
    """The ``Node`` subclass named ``<Name>Backward`` (one class per op name)."""
    cls = _NODE_CLASSES.get(name)
    if cls is None:
        title = "".join(part.capitalize() for part in name.split("_"))
        cls = _NODE_CLASSES[name] = type(f"{title}Backward", (Node,), {"__slots__": ()})
    return cls


def node_of(t: Any) -> Node | None:
    """The backward node a gradient for tensor ``t`` goes to (its op's, or its leaf accumulator)."""
    meta = t._ag
    if meta is None:
        return None
    if meta.base is not None:
        _refresh_view(t, meta)
    if meta.grad_fn is not None:
        return meta.grad_fn
    if meta.accumulator is None:
        meta.accumulator = AccumulateGrad(t)
    return meta.accumulator


def _refresh_view(t: Any, meta: AutogradMeta) -> None:
    """As PyTorch regenerates a view's grad_fn after its base was written in place (``v = y[0]; y.mul_(2)``:
    ``v`` holds the new values, so its gradient must flow through ``y``'s new history, not its old one)."""
    stale = meta.stale
    if stale is not None:  # noted at the write (``_mark_views_stale``): the base need not be alive
        meta.stale = None
        fn, layout, device = stale
    else:
        base = meta.base() if meta.base is not None else None
        if base is None or base._data is not t._data or base._ag is None:
            return
        fn, layout, device = base._ag.grad_fn, base._view, base.device
    if fn is None or fn is meta.seen:
        return
    meta.seen = fn
    meta.grad_fn = node_class("as_strided")(view_of_base(layout, device, t), (fn,), ())


def _note_view(base_meta: AutogradMeta, view: Any) -> None:
    """Remember ``view`` among its base's views. Dead ones are dropped whenever the list reaches a power of two
    (from 8): a weight's ``w.T`` is taken every forward and the weight is never written with grad on, so
    without this the list of a parameter would grow by one per step for good."""
    views = base_meta.views
    if views is None:
        base_meta.views = views = []
    elif len(views) >= 8 and not len(views) & (len(views) - 1):
        views[:] = [r for r in views if r() is not None]
    views.append(weakref.ref(view))


def _mark_views_stale(base: Any, writers: Sequence[Any]) -> None:
    """``base`` was just written in place (its new history recorded): each live view of it, other than
    ``writers`` (the write's own operands: a view written through is current), regenerates its history from
    the base's new one when next used; what that needs is noted now, in case the base is gone by then."""
    meta = base._ag
    views = meta.views if meta is not None else None
    if not views:
        return
    fn, layout, device = meta.grad_fn, base._view, base.device
    live = []
    for ref in views:
        v = ref()
        if v is None:
            continue
        live.append(ref)
        vm = v._ag
        if vm is None or fn is None or v._data is not base._data or any(v is w for w in writers):
            continue
        vm.stale = (fn, layout, device)
    meta.views = live


def _base_fn(meta: AutogradMeta) -> Node | None:
    base = meta.base() if meta.base is not None else None
    return None if base is None or base._ag is None else base._ag.grad_fn


def needs_grad(*xs: Any) -> bool:
    """Whether an op on ``xs`` records a node: grad mode is on and some tensor among them requires grad."""
    if not is_grad_enabled():
        return False
    return any(getattr(x, "_ag", None) is not None for x in xs)


def record(name: str, out: Any, inputs: Sequence[Any], fn: Callable[..., Sequence[Any]],
           saved: Sequence[Any] = ()) -> Any:
    """Make ``out`` the result of a differentiable op on ``inputs`` (call only when ``needs_grad``):
    ``fn(grad_of_out, *saved)`` returns the gradient of each input (None where none flows)."""
    if not out._dtype.is_float:
        return out  # integer and bool results carry no gradient
    next_nodes = tuple(node_of(x) if getattr(x, "_ag", None) is not None else None for x in inputs)
    meta = AutogradMeta(node_class(name)(fn, next_nodes, tuple(saved)))
    old = out._ag
    if len(inputs) == 1 and inputs[0] is not out and getattr(inputs[0], "_data", None) is out._data \
            and inputs[0]._ag is not None:  # a view: remember its base (the base's own base if it is one)
        src = inputs[0]._ag
        meta.base = src.base if src.base is not None and src.base() is not None else weakref.ref(inputs[0])
        meta.seen = _base_fn(meta)
        root = meta.base()
        if root is not None and root._ag is not None:
            _note_view(root._ag, out)
    in_place = old is not None and any(x is out for x in inputs)
    if in_place:
        meta.views = old.views  # the base's views stay its views across its writes
    out._ag = meta
    if in_place and old.base is not None:
        # an in-place write into a view: its base's history gets the write too (PyTorch's CopySlices)
        base = old.base()
        if base is not None and base._data is out._data:
            meta.base = old.base
            meta.seen = _base_fn(meta)  # this write's history is current (not regenerated by the rebase)
            rebase_after_view_write(base, out)
            meta.seen = _base_fn(meta)  # the base's new history is this write's: nothing to regenerate
    if in_place:
        _mark_views_stale(out, inputs)
    return out


VIEW_OF_LEAF_WRITTEN = ("a view of a leaf tensor that requires grad is written in place; write under zyx.no_grad(), "
                        "or into a clone")


def rebase_after_view_write(base: Any, x: Any) -> None:
    """``x``, a view of ``base``, was just written in place (its new history recorded): ``base``'s
    history gets the same write (``views.rebase_rule``)."""
    if base._ag is None:
        return
    if base._ag.grad_fn is None:
        raise AutogradError(VIEW_OF_LEAF_WRITTEN)
    record("copy_slices", base, [base, x], rebase_rule(base, x))


def check_not_view_of_leaf(x: Any) -> None:
    """Refuse (before writing) an in-place write, under grad mode, through a view of a leaf that
    requires grad, as PyTorch does."""
    meta = x._ag
    base = meta.base() if meta is not None and meta.base is not None else None
    if base is not None and base._data is x._data and base._ag is not None and base._ag.grad_fn is None:
        raise AutogradError(VIEW_OF_LEAF_WRITTEN)


def check_float(t: Any) -> None:
    """Only floating tensors can require grad (``DTypeError``)."""
    if not t._dtype.is_float:
        raise DTypeError(f"only floating-point tensors can require gradients, got {t._dtype.name}")


# ------------------------------------------------------------------ the engine

def _topological(roots: list[Node]) -> list[Node]:
    """Every node reachable from ``roots``, each before the nodes it feeds gradients to."""
    order: list[Node] = []
    seen: set[int] = set()
    for root in roots:
        if id(root) in seen:
            continue
        seen.add(id(root))
        stack = [(root, iter(root.next))]
        while stack:
            node, children = stack[-1]
            for child in children:
                if child is not None and id(child) not in seen:
                    seen.add(id(child))
                    stack.append((child, iter(child.next)))
                    break
            else:
                stack.pop()
                order.append(node)
    order.reverse()
    return order


def reachable_leaves(tensors: Sequence[Any]) -> list[Any]:
    """The leaf tensors a ``backward()`` from ``tensors`` would give a gradient to (data parallelism's
    ``find_unused_parameters`` asks this after the forward)."""
    roots = [node_of(t) for t in tensors if getattr(t, "_ag", None) is not None]
    leaves = (n.leaf() for n in _topological([r for r in roots if r is not None]) if isinstance(n, AccumulateGrad))
    return [leaf for leaf in leaves if leaf is not None]


def _add(a: Any, b: Any) -> Any:
    return b if a is None else a + b


def run_backward(roots: Sequence[tuple[Node, Any]], retain_graph: bool, create_graph: bool,
                 capture: dict[int, int] | None = None) -> list[Any] | None:
    """Propagate ``(node, gradient)`` roots through the graph. Without ``capture`` gradients reaching
    leaves are added to their ``.grad``; with it (``id(node) -> position``) the gradients reaching
    those nodes are returned instead and no ``.grad`` changes."""
    grads: dict[int, Any] = {}
    for node, g in roots:
        grads[id(node)] = _add(grads.get(id(node)), g)
    captured: list[Any] | None = None if capture is None else [None] * (max(capture.values(), default=-1) + 1)
    order = _topological([node for node, _ in roots])
    with (enable_grad() if create_graph else no_grad()):
        for node in order:
            g = grads.pop(id(node), None)
            if g is None:
                continue
            if capture is not None and id(node) in capture:
                i = capture[id(node)]
                captured[i] = _add(captured[i], g)  # type: ignore[index]
            if isinstance(node, AccumulateGrad):
                leaf = node.leaf()
                if capture is None and leaf is not None:
                    _accumulate(leaf, g, create_graph)
                    # every gradient reaching a node precedes it in this order: the leaf's .grad is final now
                    hooks = leaf._ag.post_accumulate if leaf._ag is not None else None
                    for hook in list(hooks.values()) if hooks else ():
                        hook(leaf)
                continue
            if node.retained is not None and capture is None:
                kept = node.retained()
                if kept is not None:
                    _accumulate(kept, g, create_graph)
            outs = node.apply(g)
            if not retain_graph:
                node.release()
            for nxt, r in zip(node.next, outs):
                if nxt is not None and r is not None:
                    grads[id(nxt)] = _add(grads.get(id(nxt)), r)
    return captured


def _accumulate(t: Any, g: Any, create_graph: bool) -> None:
    meta = t._ag
    if not create_graph:
        g = g.detach()
    if g.device is not t.device:  # a gradient computed on another device (mixed operands) joins its tensor's
        g = g.to(t.device)
    meta.grad = g if meta.grad is None else meta.grad + g
    if not create_graph:
        # Run the gradient's kernels now, in reverse order of the forward: the saved values and
        # the upstream gradients it reads die layer by layer instead of all at the end.
        meta.grad.realize()


def grad(outputs: Any, inputs: Any, grad_outputs: Any = None, retain_graph: bool | None = None,
         create_graph: bool = False, allow_unused: bool = False) -> tuple[Any, ...]:
    """The gradients of ``outputs`` with respect to ``inputs`` (PyTorch's ``torch.autograd.grad``);
    ``.grad`` of the inputs is left alone."""
    outs = _tensors(outputs)
    ins = _tensors(inputs)  # any iterable, as PyTorch: ``grad(loss, model.parameters())``
    gos: list[Any] = [None] * len(outs) if grad_outputs is None else _tensors(grad_outputs)
    if len(gos) != len(outs):
        raise AutogradError(f"grad: {len(gos)} grad_outputs for {len(outs)} outputs; expected one each")
    capture: dict[int, int] = {}
    for i, t in enumerate(ins):
        node = node_of(t)
        if node is None:
            raise AutogradError(f"grad: inputs[{i}] does not require grad")
        capture[id(node)] = i
    roots = [(_root_node(o, "grad"), _root_grad(o, g)) for o, g in zip(outs, gos)]
    got = run_backward(roots, create_graph if retain_graph is None else retain_graph, create_graph, capture)
    result = []
    for i, g in enumerate(got or []):
        if g is None and not allow_unused:
            raise AutogradError(f"grad: inputs[{i}] was not used to compute the outputs; pass allow_unused=True "
                                "to get None for it")
        result.append(g)
    return tuple(result)


def _tensors(value: Any) -> list[Any]:
    """A tensor (or None) as a one-element list; any other iterable (list, tuple, generator) as a list."""
    if value is None or isinstance(value, TensorBase):
        return [value]
    return list(value)


def backward(t: Any, gradient: Any = None, retain_graph: bool | None = None, create_graph: bool = False) -> None:
    """``t.backward(...)``, and ``zyx.autograd.backward(tensors, grad_tensors)`` (PyTorch's): add the
    gradients of ``t`` (a tensor or a sequence of them) to the ``.grad`` of the leaves they depend on."""
    outs = _tensors(t)
    gos = [None] * len(outs) if gradient is None else _tensors(gradient)
    if len(gos) != len(outs):
        raise AutogradError(f"backward: {len(gos)} gradients for {len(outs)} tensors; expected one each")
    roots = [(_root_node(o, "backward"), _root_grad(o, g)) for o, g in zip(outs, gos)]
    run_backward(roots, create_graph if retain_graph is None else retain_graph, create_graph)


def _root_node(t: Any, what: str) -> Node:
    node = node_of(t) if getattr(t, "_ag", None) is not None else None
    if node is None:
        raise AutogradError(f"{what}: the tensor does not require grad and has no grad_fn (did an input set "
                            "requires_grad=True, and was grad mode on?)")
    return node


def _root_grad(t: Any, g: Any) -> Any:
    if g is None:
        if t.numel() != 1:
            raise AutogradError(f"grad can be implicitly created only for scalar outputs; the output has shape "
                                f"{t.shape}: pass gradient=")
        return ones_like(t)
    if tuple(g.shape) != tuple(t.shape):
        raise AutogradError(f"gradient has shape {tuple(g.shape)}; expected the output's shape {tuple(t.shape)}")
    return g.cast(t.dtype)


# ------------------------------------------------------------------ the Tensor methods

class RemovableHandle:
    """What a hook registration returns: ``remove()`` takes the hook out of the table it was put in."""

    _next_id = 0

    def __init__(self, table: dict[int, Any]) -> None:
        self._table = table
        RemovableHandle._next_id += 1
        self.id = RemovableHandle._next_id

    def remove(self) -> None:
        self._table.pop(self.id, None)


class AutogradMixin(TensorBase):
    """``requires_grad``, ``grad``, ``grad_fn``, ``is_leaf``, ``detach``, ``retain_grad`` and ``backward``;
    needs ``_ag`` (an ``AutogradMeta`` or None), ``_data``/``_view``/``_dtype``/``_device`` and the
    concrete class's constructor."""

    __slots__ = ()

    @property
    def requires_grad(self) -> bool:
        """Whether gradients flow to this tensor (settable on leaves)."""
        return self._ag is not None

    @requires_grad.setter
    def requires_grad(self, flag: bool) -> None:
        meta = self._ag
        if meta is not None and meta.grad_fn is not None:
            if not flag:
                raise AutogradError("requires_grad can only be changed on leaf tensors; use detach() to get a "
                                    "tensor without gradient history")
            return
        if flag:
            check_float(self)
            if meta is None:
                self._ag = AutogradMeta()
        else:
            self._ag = None

    def requires_grad_(self, requires_grad: bool = True) -> Any:
        """Set ``requires_grad`` in place and return ``self``."""
        self.requires_grad = requires_grad
        return self

    @property
    def is_leaf(self) -> bool:
        """True unless the tensor was computed by a recorded op (a tensor needing no grad is a leaf)."""
        return self._ag is None or self._ag.grad_fn is None

    @property
    def grad_fn(self) -> Node | None:
        """The node of the op that computed this tensor (None for leaves); a view's is regenerated from its
        base's after the base was written in place (``AsStridedBackward``), as PyTorch's."""
        meta = self._ag
        if meta is not None and meta.base is not None:
            _refresh_view(self, meta)
        return None if meta is None else meta.grad_fn

    @property
    def grad(self) -> Any:
        """The accumulated gradient (a leaf's, or a non-leaf's after ``retain_grad()``), or None."""
        return None if self._ag is None else self._ag.grad

    @grad.setter
    def grad(self, value: Any) -> None:
        if self._ag is None:
            if value is None:
                return
            raise AutogradError("cannot set .grad of a tensor that does not require grad")
        if value is not None and tuple(value.shape) != tuple(self.shape):
            raise AutogradError(f"assigned grad has shape {tuple(value.shape)}; expected {tuple(self.shape)}")
        if value is not None and value.dtype is not self.dtype:  # an optimizer step would mix dtypes
            raise AutogradError(f"assigned grad has dtype {value.dtype.name}; expected the tensor's "
                                f"{self.dtype.name} (cast it first)")
        self._ag.grad = value

    def detach(self) -> Any:
        """The same values (shared storage) without gradient history."""
        return type(self)(self._data, self._view, self._dtype, self._device)

    def retain_grad(self) -> None:
        """Keep this non-leaf tensor's gradient in ``.grad`` during backward."""
        meta = self._ag
        if meta is None:
            raise AutogradError("retain_grad() on a tensor that does not require grad")
        if meta.grad_fn is not None:
            meta.grad_fn.retained = weakref.ref(self)

    def register_post_accumulate_grad_hook(self, hook: Callable[[Any], None]) -> RemovableHandle:
        """Call ``hook(tensor)`` during each ``backward()`` as soon as this leaf's gradient of that backward is
        added to ``.grad`` (PyTorch's name; data parallelism starts reducing a bucket from here). Returns a
        handle whose ``remove()`` unregisters it."""
        meta = self._ag
        if meta is None or meta.grad_fn is not None:
            raise AutogradError("register_post_accumulate_grad_hook: only a leaf tensor that requires grad "
                                "accumulates gradients")
        if meta.post_accumulate is None:
            meta.post_accumulate = {}
        handle = RemovableHandle(meta.post_accumulate)
        meta.post_accumulate[handle.id] = hook
        return handle

    def backward(self, gradient: Any = None, retain_graph: bool | None = None, create_graph: bool = False) -> None:
        """Add the gradients of this tensor to the ``.grad`` of the leaves it depends on."""
        backward(self, gradient, retain_graph, create_graph)
