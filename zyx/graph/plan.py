"""Plans: the launches of one captured call, replayed on new inputs without graph work.

``build`` turns a capture journal (``backend.journal``: the launches, the buffers allocated and
the scalar arguments noted during the capture) and the capture's replay hooks into a ``Plan``.
Each launch argument is named by where it comes from at replay:

* an input, by position (the buffers a replay is given: a jitted function's tensor arguments,
  a tape graph's realized buffers);
* a slot: a buffer the capture allocated; a replay allocates it before its first use and
  drops it after its last, so the pool recycles it within the replay;
* a run-time value: a bound variable's value (``ir.variable``) or, for a tape, a graph
  constant passed as a scalar argument, by its position in the graph's key;
* an external: a buffer from before the capture that the call read without getting it as an
  input (a closed-over weight); an input after the given ones, which the caller passes (the
  same buffer, or the one its tensor was rebound to since);
* a constant: everything else (the device's error-flag buffer and its read-only word, buffers
  written from the host during the capture, and the scalar arguments that follow from the
  structure, which the cache key fixes).

``Plan.replay`` walks a prepared list: per launch, copy the argument template and fill the
few positions that change. Nothing is fused, keyed, simplified or compiled.
"""
from __future__ import annotations

import gc
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from zyx.backend import errorflags
from zyx.backend.journal import Journal
from zyx.backend.launch import launch_prepared, runtime_lock
from zyx.backend.pool import Buffer
from zyx.graph.node import LazyNode, Src
from zyx.ir import expr
from zyx.ir.variable import Variable, VariableArg

_SLOT, _INPUT, _VAR, _VARARG, _CPOS, _HOST = range(6)
_CONST_R, _SLOT_R, _INPUT_R, _EMPTY_R = range(4)  # where a result buffer comes from


class Plan:
    """A replayable list of launches (see the module docstring)."""

    __slots__ = ("device", "steps", "slot_sizes", "results", "has_flag", "keep", "variables", "launches",
                 "externals", "hooks", "slot_caps", "arena_of", "arena_sizes", "arena")

    def __init__(self, device: Any, steps: list, slot_sizes: list[int], results: list[tuple[int, Any]],
                 has_flag: bool, keep: list[Any], variables: set[Variable], externals: list[Buffer]) -> None:
        self.device = device
        self.steps = steps
        self.slot_sizes = slot_sizes
        self.results = results
        self.has_flag = has_flag
        self.keep = keep  # buffers the launches read as constants: alive as long as the plan
        self.variables = variables  # the variables whose values the launches take
        self.launches = len(steps)
        # buffers from before the capture that it read without getting them as inputs (a closed-over
        # weight): inputs after the given ones; the caller passes them or what replaced them
        self.externals = externals
        self.hooks: tuple[Any, ...] = ()  # Python bookkeeping run before the launches (capture.note_replay_hook)
        self.slot_caps = [device.pool.capacity_of(n) for n in slot_sizes]  # their pool size classes
        # a slot the replay frees (an intermediate) lives in a buffer the plan keeps between replays:
        # taking and returning ~100 pooled buffers a replay was a third of a decode step's host time
        self.arena_of, self.arena_sizes = arena_layout(steps, slot_sizes, self.slot_caps)
        self.arena: list[Buffer | None] = [None] * len(self.arena_sizes)  # filled by the first replay

    def replay(self, inputs: Sequence[Buffer], consts: Sequence[Src] | None = None,
               bindings: dict[Variable, int] | None = None) -> list[Buffer]:
        """Launch the plan on ``inputs`` (and a tape's graph ``consts``, the ``bindings`` of its
        variables); returns the result buffers in the order given to ``build``."""
        device = self.device
        pool = device.pool
        slots: list[Any] = [None] * len(self.slot_sizes)
        sizes, caps = self.slot_sizes, self.slot_caps
        allocate = pool.allocate_pooled
        with runtime_lock:  # one plan's launches are not interleaved with another thread's
            for hook in self.hooks:
                hook()
            if self.has_flag:
                errorflags.reserve(device)  # arm the device's error bits: the next readback checks them
            arena, arena_of = self.arena, self.arena_of
            for ck, glob, local, template, fixes, offset, counts, new, free in self.steps:
                for k in new:
                    a = arena_of[k]
                    if a is None:  # a result: the caller keeps it
                        slots[k] = allocate(sizes[k], caps[k])
                    else:
                        buf = arena[a]
                        if buf is None:
                            buf = arena[a] = allocate(self.arena_sizes[a], caps[k])
                        slots[k] = buf
                if fixes:
                    args = template.copy()
                    for pos, kind, x in fixes:
                        if kind == _SLOT:
                            args[pos] = slots[x].cl
                        elif kind == _INPUT:
                            args[pos] = inputs[x].cl
                        elif kind == _VAR:
                            args[pos] = expr.param_value(x[1](bindings[x[0]]), x[2])  # type: ignore[index]
                        elif kind == _VARARG:
                            args[pos] = x[2](x[1](bindings[x[0]]))  # type: ignore[index]
                        elif kind == _HOST:
                            args[pos] = x()  # type: ignore[operator]
                        else:
                            c = consts[x]  # type: ignore[index]
                            args[pos] = expr.param_value(c.value, c.dtype)
                else:
                    args = template
                launch_prepared(ck, glob, local, args, offset, counts)
                for k in free:  # enqueued: an in-order queue makes reuse by a later slot safe
                    slots[k] = None
            out = []
            for kind, x in self.results:
                if kind == _SLOT_R:
                    out.append(slots[x])
                elif kind == _INPUT_R:
                    out.append(inputs[x])
                elif kind == _CONST_R:
                    out.append(x)
                else:
                    out.append(pool.allocate(0))
            return out


def arena_layout(steps: list, sizes: list[int], caps: list[int]) -> tuple[list[int | None], list[int]]:
    """Each slot's buffer among those a plan keeps (None for a result, which is new each replay) and each
    kept buffer's size: slots whose launches do not overlap share one of their pool size class, in the
    order the pool would have handed it out (the in-order queue makes reuse after the last reader safe)."""
    freed = {k for step in steps for k in step[-1]}
    arena_of: list[int | None] = [None] * len(sizes)
    arena_sizes: list[int] = []
    spare: dict[int, list[int]] = {}  # size class (or -exact size when unpooled) -> free arena buffers
    for step in steps:
        new, free = step[-2], step[-1]
        for k in new:
            if k in freed:
                free_list = spare.get(caps[k] or -sizes[k])
                if free_list:
                    arena_of[k] = free_list.pop()
                else:
                    arena_of[k] = len(arena_sizes)
                    arena_sizes.append(caps[k] or sizes[k])
        for k in free:
            spare.setdefault(caps[k] or -sizes[k], []).append(arena_of[k])  # type: ignore[arg-type]
    return arena_of, arena_sizes


def _mem_type() -> type:
    import pyopencl as cl

    return cl.MemoryObjectHolder


def _buffers_of(mems: list[Any]) -> list[Buffer] | None:
    """The live ``Buffer`` holding each OpenCL memory object of ``mems`` (None if one has none):
    found once per capture through the garbage collector's referrer lists, one pass for all."""
    if not mems:
        return []
    want = {id(m): m for m in mems}
    found: dict[int, Buffer] = {}
    for r in gc.get_referrers(*mems):
        if type(r) is Buffer and id(r.cl) in want and r.cl is want[id(r.cl)]:
            found[id(r.cl)] = r
    if len(found) != len(want):
        return None
    return [found[id(m)] for m in mems]


def nodes_holding(buffers: list[Buffer]) -> list[list[LazyNode]]:
    """The graph nodes whose buffer is each of ``buffers`` (one garbage-collector pass)."""
    if not buffers:
        return []
    where = {id(b): i for i, b in enumerate(buffers)}
    out: list[list[LazyNode]] = [[] for _ in buffers]
    for r in gc.get_referrers(*buffers):
        if type(r) is LazyNode and r.buffer is not None and id(r.buffer) in where:
            out[where[id(r.buffer)]].append(r)
    return out


def build(journal: Journal, device: Any, inputs: Sequence[Buffer], results: Sequence[Buffer],
          const_positions: dict[int, int] | None = None,
          bindings: dict[Variable, int] | None = None, hooks: Sequence[Callable[[], Any]] = ()) -> Plan | str:
    """The plan of a finished capture, or the reason there is none.

    ``inputs``: the buffers a replay is given, by position; ``results``: the buffers a replay
    returns; ``const_positions``: id of a graph constant -> its position among a tape graph's
    constants; ``bindings``: the variables a replay will bind (others' values are constants); ``hooks``:
    the Python bookkeeping a replay runs before its launches."""
    if journal.unreplayable is not None:
        return journal.unreplayable
    flag = errorflags.buffer_of(device)
    word = errorflags.word_of(device)
    input_pos = {id(b.cl): i for i, b in enumerate(inputs) if b.cl is not None}
    allocs, written, params = journal.allocs, journal.written, journal.params
    slot_of: dict[int, int] = {}
    slot_sizes: list[int] = []
    keep: list[Any] = []
    kept: set[int] = set()
    external_mems: list[Any] = []
    variables: set[Variable] = set()
    first: list[int] = []
    last: list[int] = []
    raw_steps = []
    has_flag = False
    for si, (ck, glob, local, args, offset, counts) in enumerate(journal.launches):
        if ck.device is not device:
            return f"a launch ran on another device ({ck.device})"
        template: list[Any] = list(args)
        fixes = []
        for pos, a in enumerate(args):
            if a is None:
                continue
            if isinstance(a, np.generic):
                host = journal.host_params.get(id(a))
                if host is not None and host[0] is a:
                    fixes.append((pos, _HOST, host[1]))
                    continue
                src = params.get(id(a))
                if src is None or src[0] is not a:
                    continue  # fixed by the structure the cache key names
                source = src[1]
                if isinstance(source, VariableArg):
                    if bindings is not None and source.variable in bindings:
                        fixes.append((pos, _VARARG, (source.variable, source.fn, type(a))))
                        variables.add(source.variable)
                elif const_positions is not None and id(source) in const_positions:
                    fixes.append((pos, _CPOS, const_positions[id(source)]))
                elif (type(source.value) is VariableArg and bindings is not None
                      and source.value.variable in bindings):
                    fixes.append((pos, _VAR, (source.value.variable, source.value.fn, source.dtype)))
                    variables.add(source.value.variable)
                continue
            if flag is not None and a is flag:
                has_flag = True
                continue
            if word is not None and a is word:  # reads the error bits only: a constant, arms nothing
                continue
            if not isinstance(a, _mem_type()):
                continue  # local memory sizes and the like: fixed by the structure
            key = id(a)
            if key in input_pos:
                fixes.append((pos, _INPUT, input_pos[key]))
            elif key in allocs and key not in written:
                k = slot_of.get(key)
                if k is None:
                    k = slot_of[key] = len(slot_sizes)
                    slot_sizes.append(allocs[key].nbytes)
                    first.append(si)
                    last.append(si)
                last[k] = si
                fixes.append((pos, _SLOT, k))
            elif key in allocs:  # written from the host during the capture: a constant
                if key not in kept:
                    keep.append(allocs[key])
                    kept.add(key)
            else:  # memory from before the capture the call did not get as an argument
                i = input_pos[key] = len(inputs) + len(external_mems)
                external_mems.append(a)
                fixes.append((pos, _INPUT, i))
        raw_steps.append((ck, glob, local, template, tuple(fixes), offset, counts))
    externals = _buffers_of(external_mems)
    if externals is None:
        return "a launch read memory zyx does not own"
    out: list[tuple[int, Any]] = []
    forever: set[int] = set()
    for buf in results:
        key = id(buf.cl)
        if buf.cl is None:
            out.append((_EMPTY_R, None))
        elif key in input_pos:
            out.append((_INPUT_R, input_pos[key]))
        elif key in slot_of:
            out.append((_SLOT_R, slot_of[key]))
            forever.add(slot_of[key])
        else:  # computed by no launch of the plan (e.g. a constant uploaded during the capture)
            if key in allocs and key not in written:
                return "a result buffer is written by no launch of the capture"
            out.append((_CONST_R, buf))
            keep.append(buf)
    news: list[list[int]] = [[] for _ in raw_steps]
    frees: list[list[int]] = [[] for _ in raw_steps]
    for k, (f, la) in enumerate(zip(first, last)):
        news[f].append(k)
        if k not in forever:
            frees[la].append(k)
    steps = [(*s, tuple(n), tuple(f)) for s, n, f in zip(raw_steps, news, frees)]
    plan = Plan(device, steps, slot_sizes, out, has_flag, keep, variables, externals)
    plan.hooks = tuple(hooks)
    return plan
