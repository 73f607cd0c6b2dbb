"""The schedule cache: realizing a graph whose structure was seen before replays its launches.

A replay makes the same launches (compiled kernels, sizes) on this graph's buffers, with no
fusion decisions, symbolic simplification or codegen. The key is the pending graph's
structure: per pending node (post-order) its op, arg, dtype, shape and sources; a source is
a constant (dtype, value), a scalar argument (dtype, a stand-in: its value is passed at
launch), a realized buffer (position of first use, view, dtype) or a pending node (position,
view, dtype). A realized buffer read at a nonzero offset is keyed by its view's shape and
strides and the offset argument's alignment and range (``graph.offset_args``), not the offset:
the offset is a scalar argument, so ``x[i]`` for every ``i`` is one schedule. Buffers are
positional arguments, so the key never holds one. An ``EXTERN`` node is realized while the
key is built (it is a fusion break), so the graph above it is keyed over its buffer.
``schedule_stats`` counts builds (codegen runs) and hits.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from zyx import settings
from zyx.backend import errorflags, journal
from zyx.backend.launch import launch_prepared
from zyx.backend.pool import Buffer
from zyx.graph.node import LazyNode, Src
from zyx.graph.offset_args import offset_arg, offset_key
from zyx.ir import expr
from zyx.op import Op

SCHEDULE_CACHE_SIZE = 4096
_schedules: dict[tuple, tuple] = {}
schedule_stats = {"builds": 0, "hits": 0}

_PARAM = "param"  # a key's stand-in for a scalar argument's value (passed at launch)
# looked up once: an enum attribute is a slow lookup, and _visit runs for every node of every realize
_EXTERN, _PAD, _CONST = Op.EXTERN, Op.PAD, Op.CONST


class NotCacheable(Exception):
    """The graph reads a buffer of another device: its launches cannot be replayed by position."""


def _value_key(v: Any) -> Any:
    # -0.0 == 0.0 and nan != nan, but they are different literals
    return repr(v) if isinstance(v, float) else v


class GraphKey:
    """The structural key of a pending graph and what a replay binds to it: the pending nodes in
    key order, the input buffers and the scalar-argument constants by position."""

    __slots__ = ("key", "nodes", "bufs", "consts")

    def __init__(self, key: tuple, nodes: list[LazyNode], bufs: list[Buffer], consts: list[Src]) -> None:
        self.key = key
        self.nodes = nodes
        self.bufs = bufs
        self.consts = consts


def graph_key(root: LazyNode, realize: Callable[[LazyNode], Buffer]) -> GraphKey | None:
    """The key of ``root``'s pending graph (``realize`` runs the ``EXTERN`` nodes met on the way);
    None when it cannot be cached."""
    return graph_key_of([root], realize)


def graph_key_of(roots: list[LazyNode], realize: Callable[[LazyNode], Buffer]) -> GraphKey | None:
    """The key of the pending graph of several ``roots`` on one device (a tape's outputs; the
    roots' positions in ``nodes`` are ``root_positions``)."""
    device = roots[0].device
    nodes: list[LazyNode] = []
    bufs: list[Buffer] = []
    consts: list[Src] = []
    items: list[tuple] = []
    npos: dict[int, int] = {}
    bpos: dict[int, int] = {}
    try:
        for root in roots:
            if root.device is not device:
                raise NotCacheable
            if id(root) not in npos and root.buffer is None:
                _visit(root, device, realize, nodes, bufs, consts, npos, bpos, items)
    except NotCacheable:
        return None
    # the heuristics kind and tuning mode too: a schedule holds kernels shaped and tuned under them
    return GraphKey((device, settings.heuristics_kind(device), settings.TUNE, tuple(items)), nodes, bufs, consts)


def _const_key(s: Src, consts: list[Src]) -> tuple:
    if s.param:
        consts.append(s)
        return (s.dtype, _PARAM)
    return (s.dtype, _value_key(s.value))


def _visit(n: LazyNode, device: Any, realize: Callable, nodes: list, bufs: list, consts: list, npos: dict,
           bpos: dict, items: list) -> int:
    # a module-level function, not a closure: a recursive closure is a reference cycle
    # that would keep the graph's buffers alive until the garbage collector runs
    srcs = []
    for s in n.srcs:
        b = s.base
        if b is None:
            srcs.append(_const_key(s, consts))
            continue
        v = s.view
        if b.buffer is None and b.op is _EXTERN:
            realize(b)
        if b.buffer is not None:
            buf = b.buffer
            i = bpos.get(id(buf))
            if i is None:
                if buf.pool is None or buf.pool.device is not device:
                    raise NotCacheable
                i = bpos[id(buf)] = len(bufs)
                bufs.append(buf)
            got = offset_arg(s) if v.offset else None
            if got is None:
                srcs.append((-1 - i, v.shape, v.strides, v.offset, s.dtype))
            else:  # passed as a scalar argument (KernelBuilder.offset): its value is not structure
                consts.append(got[0])
                srcs.append((-1 - i, v.shape, v.strides, offset_key(got), s.dtype))
        else:
            i = npos.get(id(b))
            if i is None:
                i = _visit(b, device, realize, nodes, bufs, consts, npos, bpos, items)
            srcs.append((i, v.shape, v.strides, v.offset, s.dtype))
    arg = n.arg
    if n.op is _PAD:
        arg = (arg[0], _value_key(arg[1]))
    elif n.op is _CONST:
        arg = _const_key(arg, consts)
    items.append((n.op, arg, n.dtype, n.shape, n.device is device, tuple(srcs)))
    npos[id(n)] = len(nodes)
    nodes.append(n)
    return len(nodes) - 1


def record(gk: GraphKey, launches: list, allocs: list[tuple[LazyNode | None, Buffer]],
           param_objs: dict[int, Src]) -> None:
    """Store the schedule of a finished build (when every launch argument can be named): outputs
    allocated, and per launch its kernel, sizes and where each argument comes from."""
    key, nodes, bufs, consts = gk.key, gk.nodes, gk.bufs, gk.consts
    device = key[0]
    npos = {id(n): i for i, n in enumerate(nodes)}
    where: dict[int, tuple[int, int]] = {id(b.cl): (0, i) for i, b in enumerate(bufs) if b.cl is not None}
    outs = []
    for j, (node, buf) in enumerate(allocs):  # node None: a scratch buffer (a two-stage reduce's partials)
        if (node is not None and id(node) not in npos) or buf.pool is None or buf.pool.device is not device:
            return
        outs.append((-1 if node is None else npos[id(node)], buf.nbytes, device.pool.capacity_of(buf.nbytes)))
        if buf.cl is not None:
            where[id(buf.cl)] = (1, j)
    flag = errorflags.buffer_of(device)
    cpos = {id(c): j for j, c in enumerate(consts)}
    steps = []
    for ck, glob, local, args, offset, counts in launches:
        spec = []
        for a in args:
            if flag is not None and a is flag:
                spec.append((2, 0))
            elif id(a) in where:
                spec.append(where[id(a)])
            elif id(a) in param_objs and id(param_objs[id(a)]) in cpos:
                spec.append((3, cpos[id(param_objs[id(a)])]))
            else:
                return
        steps.append((ck, glob, local, tuple(spec), offset, counts))
    if len(_schedules) >= SCHEDULE_CACHE_SIZE:
        del _schedules[next(iter(_schedules))]
    _schedules[key] = (tuple(outs), tuple(steps))


def lookup(gk: GraphKey) -> tuple | None:
    """The recorded schedule of a graph of this structure, if any."""
    return _schedules.get(gk.key)


def replay(schedule: tuple, gk: GraphKey, device: Any, set_buffer: Callable[[LazyNode, Buffer], None]) -> None:
    """Make a recorded schedule's launches on this graph's buffers and scalar arguments."""
    outs_spec, steps = schedule
    pool = device.pool
    # each output is taken from the pool where a launch first needs it: what runs before the first
    # kernel starts is only what that kernel needs (the rest overlaps it)
    outs: list[Buffer | None] = [None] * len(outs_spec)
    bufs, consts = gk.bufs, gk.consts
    for ck, glob, local, spec, offset, counts in steps:
        args = []
        for kind, i in spec:
            if kind == 0:
                args.append(bufs[i].cl)
            elif kind == 1:
                out = outs[i]
                if out is None:
                    out = outs[i] = pool.allocate_pooled(outs_spec[i][1], outs_spec[i][2])
                args.append(out.cl)
            elif kind == 3:
                c = consts[i]
                value = expr.param_value(c.value, c.dtype)
                if journal.is_recording():
                    journal.note_param(value, c)
                args.append(value)
            else:
                args.append(errorflags.reserve(device)[0])
        # launched before with these argument types: no event kept, no lock re-taken (the caller holds
        # runtime_lock), no re-declaring of scalar types; this Python runs before the first kernel starts
        launch_prepared(ck, glob, local, args, offset, counts)
    for (p, nbytes, cap), out in zip(outs_spec, outs):
        if p >= 0:  # a scratch buffer goes back to the pool (the in-order queue runs its readers first)
            set_buffer(gk.nodes[p], out if out is not None else pool.allocate_pooled(nbytes, cap))


def clear() -> None:
    """Forget every recorded schedule."""
    _schedules.clear()
