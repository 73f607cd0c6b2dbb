"""Realization: run the pending work producing a node, and give the node its buffer.

``realize(node)`` replays a recorded schedule when the pending graph's structure was seen
before (``graph.schedule``); otherwise it builds the node's kernel (``graph.fusion``),
storing the sources fusion does not inline first, records the launches for next time and
launches. An ``EXTERN`` node (a contract kernel, random bits) realizes its sources and runs
its own launcher. After realization a node drops its sources and holds only its buffer, so
buffers die as soon as no tensor and no pending node needs them.

In-place writes: ``flush_readers(node)`` realizes every pending node that reads ``node``
before anyone writes into its buffer.
"""
from __future__ import annotations

import math
from typing import Any

from zyx.backend import journal
from zyx.backend import launch as launch_mod
from zyx.backend.launch import runtime_lock
from zyx.backend.pool import Buffer
from zyx.graph import node_log, schedule
from zyx.graph.fusion import KernelBuilder, count_parents
from zyx.graph.node import LazyNode, Src, pending_readers
from zyx.ir import expr, stages
from zyx.ir.kernel import Kernel
from zyx.kernels.ir_launch import launch_kernel
from zyx.op import Op
from zyx.opt.heuristics import reduce_groups
from zyx.opt.ir_tuning import choose_opts


class _Build:
    """What one build (a realization that is not a replay) collects for the schedule cache."""

    def __init__(self, counts: dict[int, int], recording: bool, keyed: set[int] | None) -> None:
        self.counts = counts
        self.keyed = keyed  # ids of the schedule key's constants (KernelBuilder: which offsets are arguments)
        self.allocs: list[tuple[LazyNode | None, Buffer]] | None = [] if recording else None
        self.param_objs: dict[int, Src] = {}  # id(launch argument) -> its constant


_EXTERN, _BUFFER = Op.EXTERN, Op.BUFFER  # looked up once (an enum attribute lookup is slow on this path)
_builds: list[_Build] = []  # the build under way (a store inside a build joins it)


def realize(node: LazyNode) -> Buffer:
    """Run the pending work producing ``node`` (asynchronously) and return its buffer."""
    if node.buffer is not None:
        return node.buffer
    with runtime_lock:  # scheduling state (schedule cache, recording) is process-wide
        return _realize_locked(node)


def _realize_locked(node: LazyNode) -> Buffer:
    if node.buffer is not None:
        return node.buffer
    if node.op is _EXTERN:
        return _run_extern(node)
    if _builds:  # a store inside a build: part of the schedule being built
        _realize_one(node, _builds[0])
        return node.buffer  # type: ignore[return-value]
    gk = schedule.graph_key(node, realize)
    if gk is not None:
        found = schedule.lookup(gk)
        if found is not None:
            schedule.schedule_stats["hits"] += 1
            schedule.replay(found, gk, node.device, _set_buffer)
            return node.buffer  # type: ignore[return-value]
    recording = gk is not None and not launch_mod.is_recording()
    schedule.schedule_stats["builds"] += 1
    build = _Build(count_parents(node), recording, None if gk is None else {id(c) for c in gk.consts})
    _builds.append(build)
    try:
        if recording:
            with launch_mod.recording() as launches:
                _realize_one(node, build)
            schedule.record(gk, launches, build.allocs, build.param_objs)  # type: ignore[arg-type]
        else:
            _realize_one(node, build)
    finally:
        _builds.pop()
    return node.buffer  # type: ignore[return-value]


def _realize_one(node: LazyNode, build: _Build) -> None:
    if node.op is _EXTERN:
        _run_extern(node)
        return
    device = node.device
    numel = math.prod(node.shape)
    out = device.pool.allocate(numel * node.dtype.itemsize)
    if build.allocs is not None:
        build.allocs.append((node, out))
    if numel:
        kb = KernelBuilder(node, build.counts, realize, build.keyed)
        kernel = kb.build()
        args = [out.cl] + [b.cl for b in kb.args[1:]]  # type: ignore[union-attr]
        for c in kb.params:
            value = expr.param_value(c.value, c.dtype)
            build.param_objs[id(value)] = c
            if journal.is_recording():  # a capture binds this argument at replay (graph.plan)
                journal.note_param(value, c)
            args.append(value)
        groups = reduce_groups(kernel, device.info)
        if groups > 1:
            kernel, args = _first_stage(kernel, groups, device, args, build)
        launch_kernel(device, kernel, choose_opts(kernel, device, args, launch_kernel), args)
    _set_buffer(node, out)


def _first_stage(kernel: Kernel, groups: int, device: Any, args: list, build: _Build) -> tuple[Kernel, list]:
    """Launch the partials of a two-stage reduce (``ir.stages``) into a scratch buffer (recorded with
    the build's allocations, so a replay allocates it too); returns the second stage and its arguments."""
    first = stages.partial_kernel(kernel, groups)
    part = device.pool.allocate(first.numel * first.out_dtype.itemsize)
    if build.allocs is not None:
        build.allocs.append((None, part))
    nbufs = len(kernel.bufs)
    first_args = [part.cl, *args[1:]]
    launch_kernel(device, first, choose_opts(first, device, first_args, launch_kernel), first_args)
    return stages.final_kernel(kernel, groups), [*args[:nbufs], part.cl, *args[nbufs:]]


def _run_extern(node: LazyNode) -> Buffer:
    """Realize an ``EXTERN`` node's sources, then launch its kernel on their buffers."""
    inputs = [realize(s.base) for s in node.srcs if s.base is not None]
    out = node.arg.run(inputs)
    _set_buffer(node, out)
    return out


def set_buffer(node: LazyNode, buf: Buffer) -> None:
    """Finish ``node``: it now holds ``buf`` and drops its sources (a replayed plan's result)."""
    if node_log.current is not None:
        node_log.note_realized(node)
    node.buffer = buf
    node.op = _BUFFER
    node.srcs = ()
    node.arg = None
    node.cost = 0
    node.has_reduce = False
    node.depth = 0


_set_buffer = set_buffer


def flush_readers(node: LazyNode) -> None:
    """Realize every pending node that reads ``node`` (before an in-place write into its buffer)."""
    for reader in pending_readers(node):
        realize(reader)
