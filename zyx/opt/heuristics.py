"""Device heuristics: the opts an IR kernel runs with when nothing was tuned for it.

``default_opts`` chooses per kind of device (``settings.heuristics_kind``: ``ZYX_HEURISTICS``):
on a CPU (PoCL-like) explicit vectors on the contiguous axis, small work-groups, register tiles
for matmul-like reduces and grouped reduction only when there are fewer outputs than cores; on a
GPU upcast elementwise work, tile matmuls and split long reduces with few outputs over a work-group.
Every choice is a valid ``Opts``: an opt that does not fit a kernel falls back (``ir.kernel``).
``reduce_groups`` chooses when a reduce with too few outputs for the device runs as two kernels
(``ir.stages``), its chunks on different work-groups.
"""
from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from zyx import settings
from zyx.ir import expr, stages
from zyx.ir import symbolic as sym
from zyx.ir.kernel import Kernel, Opts, matmul_axes, out_var, red_var, row_kernel, vectorizable
from zyx.ir.rewrite import walk
from zyx.op import Op


def default_opts(k: Kernel, max_local: int = 256, device: Any = None) -> Opts:
    """Heuristic opts (see ``_cpu_opts`` for CPU devices, given a ``DeviceInfo``), then ``_split_opts``.
    The kind of device they choose for is ``settings.heuristics_kind`` (``ZYX_HEURISTICS``)."""
    cpu = device is not None and settings.heuristics_kind(device) == "cpu"
    if row_kernel(k):  # one row per work item; vector lanes along the row on a CPU
        items = k.numel // k.out_shape[-1]
        local = 1
        if cpu:  # big groups (PoCL pays a start-up cost per group), but >= 4 per core for balance
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
    opts = _cpu_opts(k, max_local, device) if cpu and vectorizable(k) else \
        _generic_opts(k, max_local, cpu, _cores(device) if cpu else 0)
    if cpu and not k.red_shape and k.numel <= CPU_TINY_NUMEL:
        return _one_group(k, opts, max_local)
    return _split_opts(k, opts, max_local, device)


# CPU: an elementwise kernel this small runs as one work-group: PoCL pays a start-up cost per group,
# and a few microseconds of work gain nothing from being spread over the cores.
CPU_TINY_NUMEL = 4096


def _one_group(k: Kernel, opts: Opts, max_local: int) -> Opts:
    """``opts`` with one work-group of every work item: as many as the kernel has elements (at most
    ``max_local``), which the launch clamps to its work items (``kernels.ir_launch.launch_kernel``)."""
    return replace(opts, local=max(min(k.numel, max_local), opts.local, 1))


# CPU row kernels (one row per work item): work-groups of up to this many rows, so PoCL's start-up
# cost per group stays small next to the rows' work (bench/RESULTS.md has the layer_norm timings).
CPU_ROW_LOCAL = 64

# CPU: elementwise outputs of this many bytes or more are stored whole vectors at a time, non-temporally
# (templates/common/stream.mako): they would not stay in the caches anyway; below a few MiB the output is
# better left there for whoever reads it next.
STREAM_MIN_BYTES = 4 << 20


# CPU (PoCL): a work-group runs on one core and PoCL vectorizes across its work items, so ``split``
# only pays when there are fewer outputs than cores: 16 items striding the row come close to the copy
# ceiling, more are slower. With many outputs (softmax/layer_norm rows) the per-row vector loop is as
# fast or faster.
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


# Two-stage reduces (``ir.stages``): a kernel with too few outputs to occupy the device runs chunks of
# its reduce on different work-groups, then folds their partials in a second, small kernel (one more
# launch, so only for STAGE_MIN_WORK elements or more). Outputs count in units of what one work-group
# takes: on a CPU STAGE_CPU_OUTPUTS (a vector of outputs, or a work-group PoCL vectorizes across) unless
# the reduce runs along a contiguous axis (each output streams its own vectors), on a GPU one (its
# work-group shares the reduce: ``_split_opts``). Below STAGE_UNITS units per compute unit
# the reduce is cut into enough chunks for twice that, and a long one into up to STAGE_GROUPS chunks
# (as many as fit, each at least STAGE_CHUNK_MIN long): more, smaller work-groups even out cores that
# run unequally fast, and shorter running sums round less.
STAGE_UNITS, STAGE_CPU_OUTPUTS = 4, 16
STAGE_MIN_WORK = 1 << 18
STAGE_CHUNK_MIN, STAGE_GROUPS, STAGE_GROUPS_MAX = 4096, 256, 1024


def reduce_groups(k: Kernel, device: Any) -> int:
    """The number of chunks ``k``'s reduce runs in as a two-stage reduce (``ir.stages``), or 1 for one
    kernel (see STAGE_UNITS). Fixed by the shapes and the device, so results are the same every run."""
    if device is None or not k.red_shape or k.numel * k.reduce_size < STAGE_MIN_WORK \
            or k.reduce_size < 2 * STAGE_CHUNK_MIN or stages.the_reduce(k) is None or row_kernel(k) \
            or matmul_axes(k) is not None:
        return 1
    m = len(k.red_shape)
    cpu = settings.heuristics_kind(device) == "cpu"
    per_unit = STAGE_CPU_OUTPUTS if cpu and not _unit_stride(k, red_var(m - 1, k.red_shape[-1])) else 1
    units, want = -(-k.numel // per_unit), STAGE_UNITS * _cores(device)
    if units >= want:
        return 1
    target = min(max(-(-2 * want // units), min(STAGE_GROUPS, k.reduce_size // STAGE_CHUNK_MIN)), STAGE_GROUPS_MAX)
    # the nearest chunk count to the target, one that divides the outer reduce axis if one is within a factor
    # of two (else a one-axis reduce leaves its last elements to stage 2; a multi-axis one must divide)
    near = sorted(range(2, 2 * target + 1),
                  key=lambda g: (not target // 2 <= g or k.red_shape[0] % g != 0, abs(g - target), g))
    return next((g for g in near if _chunks_fit(k, g)), 1)


def _chunks_fit(k: Kernel, groups: int) -> bool:
    sizes = stages.chunk(k, groups)
    return sizes is not None and sizes[0] * (k.reduce_size // k.red_shape[0]) >= STAGE_CHUNK_MIN


def _unit_stride(k: Kernel, v: sym.Node) -> bool:
    """Whether some load of ``k`` reads consecutive elements along the variable ``v``."""
    if not isinstance(v, sym.Var):
        return False
    step = {v: sym.add(v, 1)}
    return any(isinstance(e, expr.Load) and v in sym.variables(e.index)
               and sym.substitute(e.index, step) == sym.add(e.index, 1) for e in walk(k.body))


_SIMPLE_OPS = frozenset({Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.NEG})


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


# CPU matmul register tile (PoCL, AVX2): MM_ROWS rows x 2 vectors of columns, unrolled twice along k:
# the widest tile whose accumulators and loads stay in registers (bench/RESULTS.md compares the tiles).
# A last partial row tile is clamped (see ``linearize``).
MM_ROWS = 8
# CPU matmul with 3-4 vectors of columns in all (N = 64 float32 at 16 lanes): a tile of MM_ROWS_WIDE rows x
# every column (24 vector accumulators: they fit AVX-512's 32 registers with the loads), so the left operand
# is read once, not once per column tile (bench/RESULTS.md "Tall-skinny matmuls").
MM_ROWS_WIDE = 6
# ...and with 5 vectors of columns (N = 65..80), 4 rows (20 accumulators)
MM_ROWS_WIDE5 = 4


# when the device does not report its global memory cache: a typical last-level cache share
DEFAULT_CACHE_BYTES = 8 << 20


def rows_inner(k: Kernel, row: int, col: int, tile_rows: int, tile_cols: int, device: Any) -> bool:
    """Whether a CPU matmul should step through its row tiles fastest (``Opts.rows_inner``): when that
    moves clearly fewer bytes from memory. Columns fastest, consecutive work items share the left
    operand's row panel, and each row tile reads the whole right operand B again, one column panel at a
    time: rows ``K`` floats apart, a cache line per row, which only runs at speed when all of B stays
    in a quarter of the cache. Rows fastest, they share one column panel of B (it stays in the core's
    own cache) and each column tile streams the left operand A again, row after row, which the
    prefetchers follow: it need only fit in half the cache. With B cached the usual order is as fast
    or faster (the timings of both orders are in the git history of bench/RESULTS.md)."""
    cache = int(getattr(device, "global_mem_cache_bytes", 0) or DEFAULT_CACHE_BYTES)
    size = k.out_dtype.itemsize
    rows, cols, red = k.out_shape[row], k.out_shape[col], k.red_shape[-1]
    a_bytes, b_bytes = rows * red * size, red * cols * size
    row_tiles, col_tiles = -(-rows // tile_rows), -(-cols // tile_cols)
    if row_tiles < 2 or red * tile_cols * size > cache // 4:  # nothing to share / a panel that would not stay
        return False
    cols_fastest = a_bytes + (b_bytes if b_bytes <= cache // 4 else b_bytes * row_tiles)
    rows_fastest = b_bytes + (a_bytes if a_bytes <= cache // 2 else a_bytes * col_tiles)
    return rows_fastest * 4 < cols_fastest * 3  # a clear win only: a tie keeps the usual order


# CPU matmul in dot-product form (``_dot_form``): a tile of MM_DOT x MM_DOT outputs, each a vector accumulator
MM_DOT = 4
# ...on reduces this long: shorter ones spend more on each output's sum across the lanes than the gathers cost
MM_DOT_MIN_REDUCE = 64


def _dot_form(k: Kernel, col: int) -> bool:
    """Whether a matmul-like ``k`` reads no operand contiguously along its column axis ``col`` but every operand
    contiguously along the reduce (``a @ w.T`` with ``w`` row-major): vectors along the reduce then load whole
    rows, where vectors along the columns would gather one element per row of ``w``."""
    r, c = red_var(0, k.red_shape[-1]), out_var(col, k.out_shape[col])
    red = next(e for e in walk(k.body) if isinstance(e, expr.Reduce))
    loads = [e for e in walk(red.src) if isinstance(e, expr.Load)]  # not an epilogue's (a bias row)
    step, cstep = {r: sym.add(r, 1)}, {c: sym.add(c, 1)}
    along_col = any(c in sym.variables(e.index) and sym.substitute(e.index, cstep) == sym.add(e.index, 1)
                    for e in loads)
    return (k.red_shape[-1] >= MM_DOT_MIN_REDUCE and not along_col
            and all(sym.substitute(e.index, step) == sym.add(e.index, 1) for e in loads))


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
        simple = all(not isinstance(e, expr.Alu) or e.op in _SIMPLE_OPS for e in walk(k.body))
        stream = v > 1 and k.numel * k.out_dtype.itemsize >= STREAM_MIN_BYTES
        # PoCL vectorizes plain arithmetic over a flat index across work items by itself; with more axes (a
        # per-channel operand: BatchNorm's gradient) its div/mod index math defeats that, explicit vectors not
        if v == 1 or (simple and not stream and n == 1):
            return _generic_opts(k, max_local, cpu=True)
        items = k.numel // v
        local = 1  # streamed: big groups, each ends with one fence, so fewer groups mean fewer fences
        while local * 2 <= min(max_local, 256 if stream else 16) and local * 2 <= items:
            local *= 2
        return Opts(local=local, upcast=tuple(upcast), vec=v, vec_axis=n - 1, stream=stream)
    mm = matmul_axes(k)
    if mm is not None and _dot_form(k, mm[1]):
        # the right operand a transposed view that was not copied (F.linear's ``x @ W.T`` at few columns or
        # a small product): columns lie K apart, rows of both operands are contiguous: each work item takes
        # MM_DOT rows x MM_DOT columns of dot products, vectors along the reduce
        row, col = mm
        upcast[row] = min(MM_DOT, k.out_shape[row])
        upcast[col] = next((f for f in (MM_DOT, 2) if k.out_shape[col] % f == 0), min(MM_DOT, k.out_shape[col]))
        return Opts(local=1, upcast=tuple(upcast), vec=_vec_width(k.red_shape[-1], pref), vec_axis=n + m - 1)
    if mm is not None:
        row, col = mm
        v = next((f for f in (pref, 8, 4) if k.out_shape[col] % f == 0 and f <= k.out_shape[col]), 0) or \
            (pref if k.out_shape[col] >= 4 * pref and pref in (4, 8, 16) else 1)  # else a masked last vector
        cols = -(-k.out_shape[col] // v) if v > 1 else 0  # vectors of columns (a last one may be partial)
        if v == 16 and 3 <= cols <= 5 and k.out_shape[row] >= 2 * MM_ROWS_WIDE:
            # a narrow output (N = 64 floats, or a GPT head's 65): one tile spans every column, so the left
            # operand is read once
            upcast[col], upcast[row] = cols, MM_ROWS_WIDE if cols <= 4 else MM_ROWS_WIDE5
            unroll = 2 if k.red_shape[-1] % 2 == 0 or k.red_shape[-1] >= 16 else 1
            return Opts(local=1, upcast=tuple(upcast), unroll=unroll, vec=v, vec_axis=col)
        if v > 1 and k.out_shape[col] % v == 0 and k.out_shape[col] >= 2 * v:  # a last half tile is clamped
            upcast[col] = 2
        if upcast[col] == 2 and k.out_shape[row] >= 2 * MM_ROWS:
            upcast[row] = MM_ROWS
        else:
            upcast[row] = next((f for f in (4, 2) if k.out_shape[row] % f == 0 and k.out_shape[row] >= 2 * f), 1)
        unroll = 2 if k.red_shape[-1] % 2 == 0 or k.red_shape[-1] >= 16 else 1
        return Opts(local=1, upcast=tuple(upcast), unroll=unroll, vec=v, vec_axis=col if v > 1 else 0,
                    rows_inner=rows_inner(k, row, col, upcast[row], upcast[col] * v, device))
    v = _vec_width(k.red_shape[-1], 2 * pref)  # two registers a step: loads in flight
    along_red = v > 1 and _unit_stride(k, red_var(m - 1, k.red_shape[-1]))
    if along_red and k.red_shape[-1] < pref and n and _vec_width(k.out_shape[-1], pref) > 1 \
            and _unit_stride(k, out_var(n - 1, k.out_shape[-1])):
        along_red = False  # a reduce shorter than a vector (a 2x2 pooling window): lanes along the outputs
    if not along_red:
        v = _vec_width(k.out_shape[-1], pref) if n else 1
        if v > 1 and _unit_stride(k, out_var(n - 1, k.out_shape[-1])):  # e.g. a column reduce
            # up to 64 columns a work item: each row step reads whole cache lines, several of them
            up = 8
            while up > 1 and (k.out_shape[-1] % (v * up) or k.numel // (v * up) < 4 * _cores(device)):
                up //= 2
            upcast[n - 1] = up
            local = 4 if k.numel // (v * up) >= 16 else 1
            return Opts(local=local, upcast=tuple(upcast), vec=v, vec_axis=n - 1)
        return _generic_opts(k, max_local, cores=_cores(device))
    unroll = 2 if k.red_shape[-1] >= v * 8 else 1  # a scalar tail loop takes what does not divide
    # two outputs a work item on long reduces: two independent accumulator chains hide the add latency
    pair = next((a for a in range(n - 1, -1, -1) if k.out_shape[a] > 1), None)
    if (pair is not None and k.out_shape[pair] % 2 == 0 and k.numel >= 16 * _cores(device)
            and k.red_shape[-1] >= 1024):
        upcast[pair] = 2
    items = k.numel // math.prod(upcast)
    local = 1
    while local * 2 <= min(max_local, 4) and local * 2 <= items:
        local *= 2
    return Opts(local=local, upcast=tuple(upcast), unroll=unroll, vec=v, vec_axis=n + m - 1)


def _generic_opts(k: Kernel, max_local: int = 256, cpu: bool = False, cores: int = 0) -> Opts:
    """Heuristic opts: vectorizable upcast for elementwise, register tiles for matmul-like reduces.

    On a CPU an elementwise kernel keeps one element per work item: PoCL vectorizes across work items,
    and several elements each made the float16/bfloat16 conversions spill registers. A CPU's reduce
    (``cores`` given) keeps STAGE_UNITS work-groups per core where it has the work items: a work-group
    runs on one core."""
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
    most = items // (STAGE_UNITS * cores) if cores and k.red_shape else items
    local = 1
    while local * 2 <= min(max_local, 64 if k.red_shape else 256, most):
        local *= 2
    return Opts(local=local, upcast=tuple(upcast), unroll=unroll)
