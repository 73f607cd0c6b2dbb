"""A kernel before lowering, and its opt actions (the tunables an autotuner searches).

``Kernel`` says *what* is computed: one output buffer of ``out_shape`` (dense,
row-major), a body expression per output element over the index variables
``o0..`` (output coordinates) and ``r0..`` (reduce coordinates over ``red_shape``),
and the dtypes of its buffers (index 0 is the output). ``Opts`` says *how*: work-group
size, upcast (several outputs per work item, per output axis; on two axes this is
register tiling for matmul-like reduces), reduce unroll, explicit vector lanes (``vec``
on one axis: vloadN/vstoreN where contiguous, vector ALU ops, a vector accumulator
combined lane by lane in a fixed order after the loop) and split (grouped) reduction.
``Opts`` is immutable (``dataclasses.replace`` gives a changed copy); ``default_opts`` gives the heuristic choice.
Sizes need not divide: the copies of a partial last tile that fall past an output axis are computed
at its last coordinate (clamped, no test in the reduce loop) and their stores masked; a partial last
vector is masked (guarded loads and stores; whole-vector loads/stores behind one test), and reduce elements
past the last whole step (unroll x lanes x split) run in a scalar tail loop. ``split``
(grouped reduction): ``split`` consecutive work items of a work-group share one output
tile's innermost reduce axis (item ``s`` takes every ``split``-th block of ``vec`` elements),
their partials meet in local memory and the group's first item folds them in item order
(same bits every run), finishes the work after the reduce and stores. An opt that does not
fit a kernel (a vector width on a kernel with ops that have no vector form, a width longer
than its axis, a split that is not a power of two up to 256) falls back to 1, so every
Opts is valid. A row kernel (``row_kernel``) uses ``vec`` (on any axis) and ``unroll`` for
both its reduce loops and its output loop, ``local`` as given, and no upcast or split.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from zyx import settings
from zyx.dtype import DType
from zyx.ir import ops
from zyx.ir import symbolic as sym


def out_var(i: int, size: int) -> sym.Node:
    return sym.var(f"o{i}", 0, max(size - 1, 0))


def red_var(i: int, size: int) -> sym.Node:
    return sym.var(f"r{i}", 0, max(size - 1, 0))


@dataclass(frozen=True)
class Kernel:
    out_shape: tuple[int, ...]
    red_shape: tuple[int, ...]
    bufs: tuple[DType, ...]
    body: ops.Expr
    params: tuple[DType, ...] = ()  # dtypes of the scalar arguments (``ops.Param`` slots), after the buffers

    @property
    def out_dtype(self) -> DType:
        return self.bufs[0]

    @property
    def numel(self) -> int:
        return math.prod(self.out_shape)

    @property
    def reduce_size(self) -> int:
        return math.prod(self.red_shape)

    def op_names(self) -> list[str]:
        """The distinct op names of the body, for the header comment and the kernel name."""
        seen: list[str] = []
        for e in ops.walk(self.body):
            name = e.op if isinstance(e, (ops.Alu, ops.Reduce)) else ("cast" if isinstance(e, ops.Cast) else None)
            if name and name not in seen:
                seen.append(name)
        return seen

    def name(self) -> str:
        names = self.op_names()
        core = "_".join(reversed(names[:4])) or "copy"
        return f"zyx_{'r_' if self.red_shape else 'e_'}{core}"


@dataclass(frozen=True)
class Opts:
    """How a kernel is mapped onto work items (every field an opt action)."""

    local: int = 64  # work-group size
    upcast: tuple[int, ...] = ()  # per output axis, outputs per work item (a partial last tile is clamped)
    unroll: int = 1  # reduce loop unroll on the innermost reduce axis (divides it)
    split: int = 1  # work items sharing one output's reduce through local memory (1 or 2..256, a power of 2)
    vec: int = 1  # explicit vector width (1, 2, 4, 8, 16) on axis ``vec_axis``
    vec_axis: int = 0  # an axis of out_shape + red_shape: the last output axis or the innermost reduce axis
    stream: bool = False  # whole-vector output stores non-temporal (templates/common/stream.mako)


def matmul_axes(k: Kernel) -> tuple[int, int] | None:
    """(row, column) output axes of a matmul-like kernel: a sum reduce of a product whose loads
    each ignore one of the last two output axes longer than 1; None when ``k`` is not one."""
    if len(k.red_shape) != 1:
        return None
    axes = [i for i, s in enumerate(k.out_shape) if s > 1]
    if len(axes) < 2:
        return None
    red = [e for e in ops.walk(k.body) if isinstance(e, ops.Reduce)]
    if len(red) != 1 or red[0].op != "sum":
        return None
    loads = [e for e in ops.walk(red[0].src) if isinstance(e, ops.Load)]
    if len(loads) < 2:
        return None
    row, col = axes[-2], axes[-1]
    a_row, a_col = f"o{row}", f"o{col}"
    mentions = [{v.name for v in sym.variables(ld.index)} for ld in loads]
    if any(a_row in m and a_col not in m for m in mentions) and any(a_col in m and a_row not in m for m in mentions):
        return row, col
    return None


def is_matmul_like(k: Kernel) -> bool:
    """A sum reduce of a product whose operands each ignore one of the last two (non-1) output axes."""
    return matmul_axes(k) is not None


# ops with an elementwise OpenCL vector form (float32/float64 compute types)
VECTOR_OPS = frozenset({
    "neg", "abs", "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "tan", "tanh", "sigmoid", "relu",
    "gelu", "gelu_tanh", "silu", "erf", "reciprocal", "floor", "ceil", "round", "trunc", "square",
    "add", "sub", "mul", "div", "floordiv", "pow", "maximum", "minimum",
})
VECTOR_DTYPES = frozenset({"float32", "float64"})


def vectorizable(k: Kernel) -> bool:
    """Whether every value of ``k`` has a vector form: float32/float64 only, ops in ``VECTOR_OPS``."""
    if any(d.name not in VECTOR_DTYPES for d in k.bufs):
        return False
    for e in ops.walk(k.body):
        if e.dtype.name not in VECTOR_DTYPES or isinstance(e, (ops.Cast, ops.Cond)):
            return False
        if isinstance(e, ops.Alu) and e.op not in VECTOR_OPS:
            return False
        if isinstance(e, ops.Reduce) and e.op not in ("sum", "prod", "max", "min"):
            return False
        if isinstance(e, ops.Load) and e.gather:
            return False
    return True


def vector_plan(k: Kernel, opts: Opts) -> tuple[int, int]:
    """The (width, axis) of ``opts.vec`` that fits ``k``, or (1, 0) when it does not."""
    v, axis = opts.vec, opts.vec_axis
    n, m = len(k.out_shape), len(k.red_shape)
    if v not in (2, 4, 8, 16) or not vectorizable(k):
        return 1, 0
    if 0 <= axis < n:  # a last partial vector is masked lane by lane
        return (v, axis) if k.out_shape[axis] >= v else (1, 0)
    if m and axis == n + m - 1:  # elements past the last whole vector run in a scalar tail loop
        return (v, axis) if k.red_shape[-1] >= v else (1, 0)
    return 1, 0


def row_kernel(k: Kernel) -> bool:
    """Whether ``k`` is a row kernel: a reduce over one axis whose every ``Reduce`` reads only the outer
    output coordinates (``o0..o{n-2}``), so each row's reduces are computed once, before a loop over the
    row's ``out_shape[-1]`` outputs (e.g. softmax: ``exp(x - max) / sum(exp(x - max))`` in one kernel)."""
    n = len(k.out_shape)
    if len(k.red_shape) != 1 or not n or k.out_shape[-1] < 2:
        return False
    last = f"o{n - 1}"
    found = False
    for r in ops.walk(k.body):
        if not isinstance(r, ops.Reduce):
            continue
        found = True
        for e in ops.walk(r.src):
            idx = (e.index, e.valid) if isinstance(e, ops.Load) else (e.valid,) if isinstance(e, ops.Cond) else ()
            if any(v.name == last for x in idx for v in sym.variables(x)):
                return False
    return found


def row_vec(k: Kernel, opts: Opts) -> int:
    """The vector width of a row kernel's loops (both the reduces and the outputs): ``opts.vec`` when it fits."""
    v = opts.vec
    if v not in (2, 4, 8, 16) or not vectorizable(k) or min(k.out_shape[-1], k.red_shape[-1]) < v:
        return 1
    return v


def default_opts(k: Kernel, max_local: int = 256, device: Any = None) -> Opts:
    """Heuristic opts (see ``_cpu_opts`` for CPU devices, given a ``DeviceInfo``), then ``_split_opts``.
    The kind of device they choose for is ``settings.heuristics_kind`` (``ZYX_HEURISTICS``)."""
    cpu = device is not None and settings.heuristics_kind(device) == "cpu"
    if row_kernel(k):  # one row per work item; vector lanes along the row on a CPU
        items = k.numel // k.out_shape[-1]
        local = 1
        if cpu:  # big groups (each costs ~1 us to start on PoCL), but >= 4 per core for balance
            while local * 2 <= min(max_local, CPU_ROW_LOCAL) and local * 2 * 4 * _cores(device) <= items:
                local *= 2
        else:
            while local * 2 <= min(max_local, 64) and local * 2 <= items:
                local *= 2
        if not cpu or not vectorizable(k):
            return Opts(local=local)
        pref = int(device.preferred_vector_width.get("double" if k.out_dtype.name == "float64" else "float", 4) or 4)
        row = min(k.out_shape[-1], k.red_shape[-1])
        v = _vec_width(row, 2 * pref)
        stream = k.numel * k.out_dtype.itemsize >= STREAM_MIN_BYTES  # codegen drops it if the row is read back
        return Opts(local=local, unroll=2 if row >= 8 * v else 1, vec=v, vec_axis=len(k.out_shape), stream=stream)
    opts = _cpu_opts(k, max_local, device) if cpu and vectorizable(k) else _generic_opts(k, max_local, cpu)
    return _split_opts(k, opts, max_local, device)


# CPU row kernels (one row per work item): work-groups of up to this many rows. PoCL starts each
# group for about a microsecond, so 4-row groups cost layer_norm 4096x1024 ~0.3-0.5 ms of its
# ~1.3 ms on the 2-core EPYC; 64-row groups ran it in ~0.9 ms (device time, alternating runs).
CPU_ROW_LOCAL = 64

# CPU: elementwise outputs of this many bytes or more are stored whole vectors at a time, non-temporally
# (templates/common/stream.mako): on the 2-core EPYC PoCL machine 16M float32 a*b+c went from ~30 to
# ~35 GB/s; below a few MiB the output is better left in the caches for whoever reads it next.
STREAM_MIN_BYTES = 4 << 20


# CPU (PoCL, measured on 2 cores): a work-group runs on one core and PoCL vectorizes across its
# work items, so ``split`` only pays when there are fewer outputs than cores: 16 items striding the
# row (scalar loads) reach ~0.85x the copy ceiling on a 16M sum, 32+ are much slower. With many
# outputs (softmax/layer_norm rows) the per-row vector loop is as fast or faster.
CPU_SPLIT, CPU_SPLIT_MIN = 16, 1 << 15
# GPU: few outputs and a long reduce leave the device idle unless work items share each reduce.
GPU_SPLIT_MIN, GPU_FEW_OUTPUTS = 256, 1 << 14


def _split_opts(k: Kernel, opts: Opts, max_local: int, device: Any) -> Opts:
    """Grouped reduction for kernels with few outputs and a long innermost reduce axis."""
    if not k.red_shape or matmul_axes(k) is not None:
        return opts
    last = k.red_shape[-1]
    if device is not None and settings.heuristics_kind(device) == "cpu":
        few = k.numel < max(_cores(device), 2)
        if few and last >= CPU_SPLIT_MIN and CPU_SPLIT <= max_local:
            return replace(opts, local=CPU_SPLIT, split=CPU_SPLIT, vec=1, vec_axis=0, unroll=1, upcast=())
        return opts
    if last < GPU_SPLIT_MIN or k.numel > GPU_FEW_OUTPUTS:
        return opts
    split = 256
    while split > 32 and (split > last // 8 or split > max_local):
        split //= 2
    if split > max_local:
        return opts
    return replace(opts, local=split, split=split, unroll=1, upcast=())


def _unit_stride(k: Kernel, v: sym.Node) -> bool:
    """Whether some load of ``k`` reads consecutive elements along the variable ``v``."""
    if not isinstance(v, sym.Var):
        return False
    step = {v: sym.add(v, 1)}
    return any(isinstance(e, ops.Load) and v in sym.variables(e.index)
               and sym.substitute(e.index, step) == sym.add(e.index, 1) for e in ops.walk(k.body))


_SIMPLE_OPS = frozenset({"add", "sub", "mul", "div", "neg"})


def _vec_width(size: int, pref: int) -> int:
    """A vector width for an axis of ``size``: the widest dividing one, else the widest that leaves a short
    tail (a masked last vector / a scalar tail loop), else 2 when it divides."""
    widths = [v for v in (16, 8, 4) if v <= max(pref, 4)]
    for v in widths:
        if size % v == 0:
            return v
    for v in widths:
        if size >= 4 * v:
            return v
    return 2 if size % 2 == 0 else 1


# CPU matmul register tile (PoCL, AVX2): MM_ROWS rows x 2 vectors of columns, unrolled twice along k.
# Measured at 1024^3 (float8): 8x2 ~1.8x and 6x2 ~1.6x the 4x2 tile unrolled 4 times; 8x2 unrolled once
# or 6x2 unrolled 4 times lose most of that. A last partial row tile is clamped (see ``linearize``).
MM_ROWS = 8


def _cores(device: Any) -> int:
    """The device's compute units (2 when it does not say)."""
    return int(getattr(device, "compute_units", 2) or 2)


def _cpu_opts(k: Kernel, max_local: int, device: Any) -> Opts:
    """CPU (PoCL-like): explicit vectors on the contiguous axis, since math builtins are not
    vectorized across work items; small work-groups; register tiles for matmul-like reduces."""
    n, m = len(k.out_shape), len(k.red_shape)
    pref = int(device.preferred_vector_width.get("double" if k.out_dtype.name == "float64" else "float", 4) or 4)
    upcast = [1] * n
    if not m:
        v = _vec_width(k.out_shape[-1], pref) if n else 1
        simple = all(not isinstance(e, ops.Alu) or e.op in _SIMPLE_OPS for e in ops.walk(k.body))
        stream = v > 1 and k.numel * k.out_dtype.itemsize >= STREAM_MIN_BYTES
        if v == 1 or (simple and not stream):  # PoCL vectorizes plain arithmetic across work items by itself
            return _generic_opts(k, max_local, cpu=True)
        items = k.numel // v
        local = 1  # streamed: big groups, each ends with one fence (16 items: 25 GB/s, 256: 35 GB/s)
        while local * 2 <= min(max_local, 256 if stream else 16) and local * 2 <= items:
            local *= 2
        return Opts(local=local, upcast=tuple(upcast), vec=v, vec_axis=n - 1, stream=stream)
    mm = matmul_axes(k)
    if mm is not None:
        row, col = mm
        v = next((f for f in (pref, 8, 4) if k.out_shape[col] % f == 0 and f <= k.out_shape[col]), 0) or \
            (pref if k.out_shape[col] >= 4 * pref and pref in (4, 8, 16) else 1)  # else a masked last vector
        if v > 1 and k.out_shape[col] % v == 0 and k.out_shape[col] >= 2 * v:  # a last half tile is clamped
            upcast[col] = 2
        if upcast[col] == 2 and k.out_shape[row] >= 2 * MM_ROWS:
            upcast[row] = MM_ROWS
        else:
            upcast[row] = next((f for f in (4, 2) if k.out_shape[row] % f == 0 and k.out_shape[row] >= 2 * f), 1)
        unroll = 2 if k.red_shape[-1] % 2 == 0 or k.red_shape[-1] >= 16 else 1
        return Opts(local=1, upcast=tuple(upcast), unroll=unroll, vec=v, vec_axis=col if v > 1 else 0)
    v = _vec_width(k.red_shape[-1], 2 * pref)  # two registers a step: loads in flight
    if v == 1 or not _unit_stride(k, red_var(m - 1, k.red_shape[-1])):
        v = _vec_width(k.out_shape[-1], pref) if n else 1
        if v > 1 and _unit_stride(k, out_var(n - 1, k.out_shape[-1])):  # e.g. a column reduce
            # up to 64 columns a work item: each row step reads whole cache lines, several of them
            # (4096x4096 sum(0): 12.3 ms with 8 columns, 3.4 ms with 64; PyTorch 4.4 ms)
            up = 8
            while up > 1 and (k.out_shape[-1] % (v * up) or k.numel // (v * up) < 4 * _cores(device)):
                up //= 2
            upcast[n - 1] = up
            local = 4 if k.numel // (v * up) >= 16 else 1
            return Opts(local=local, upcast=tuple(upcast), vec=v, vec_axis=n - 1)
        return _generic_opts(k, max_local)
    unroll = 2 if k.red_shape[-1] >= v * 8 else 1  # a scalar tail loop takes what does not divide
    # two outputs a work item on long reduces: two independent accumulator chains (16M sum: 2.28 -> 2.05 ms)
    pair = next((a for a in range(n - 1, -1, -1) if k.out_shape[a] > 1), None)
    if (pair is not None and k.out_shape[pair] % 2 == 0 and k.numel >= 16 * _cores(device)
            and k.red_shape[-1] >= 1024):
        upcast[pair] = 2
    items = k.numel // math.prod(upcast)
    local = 1
    while local * 2 <= min(max_local, 4) and local * 2 <= items:
        local *= 2
    return Opts(local=local, upcast=tuple(upcast), unroll=unroll, vec=v, vec_axis=n + m - 1)


def _generic_opts(k: Kernel, max_local: int = 256, cpu: bool = False) -> Opts:
    """Heuristic opts: vectorizable upcast for elementwise, register tiles for matmul-like reduces.

    On a CPU an elementwise kernel keeps one element per work item: PoCL vectorizes across work items,
    and several elements each made the float16/bfloat16 conversions spill (16M float16 a*b+c: 79 ms
    with 4 a work item, 16 ms with 1; bfloat16 11 vs 6 ms; float32 and int32 the same)."""
    n = len(k.out_shape)
    upcast = [1] * n
    if n and not k.red_shape and not cpu:
        last = k.out_shape[-1]
        for f in (4, 2):
            if last % f == 0 and k.numel >= 4096:
                upcast[-1] = f
                break
    elif matmul_axes(k) is not None:
        for axis in matmul_axes(k):
            for f in (4, 2):
                if k.out_shape[axis] % f == 0 and k.out_shape[axis] >= 2 * f:
                    upcast[axis] = f
                    break
    unroll = 1
    if k.red_shape:
        for f in (4, 2):
            if k.red_shape[-1] % f == 0 and k.red_shape[-1] >= 8:
                unroll = f
                break
    items = max(k.numel // max(math.prod(upcast), 1), 1)
    local = 1
    while local * 2 <= min(max_local, 64 if k.red_shape else 256) and local * 2 <= items:
        local *= 2
    return Opts(local=local, upcast=tuple(upcast), unroll=unroll)
