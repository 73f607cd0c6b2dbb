"""A kernel before lowering, and its opt actions (the tunables an autotuner searches).

``Kernel`` says *what* is computed: one output buffer of ``out_shape`` (dense,
row-major), a body expression per output element over the index variables
``o0..`` (output coordinates) and ``r0..`` (reduce coordinates over ``red_shape``),
and the dtypes of its buffers (index 0 is the output). ``Opts`` says *how*: work-group
size, upcast (several outputs per work item, per output axis; on two axes this is
register tiling for matmul-like reduces), reduce unroll, explicit vector lanes (``vec``
on one axis: vloadN/vstoreN where contiguous, vector ALU ops, a vector accumulator
combined lane by lane in a fixed order after the loop) and split (grouped) reduction.
``Opts`` is immutable (``dataclasses.replace`` gives a changed copy); ``zyx.opt.heuristics.default_opts``
gives the heuristic choice per device.
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
from dataclasses import dataclass

from zyx.dtype import DType
from zyx.ir import expr
from zyx.ir import symbolic as sym
from zyx.ir.rewrite import walk
from zyx.op import ARG_REDUCE, Op


def out_var(i: int, size: int) -> sym.Node:
    return sym.var(f"o{i}", 0, max(size - 1, 0))


def red_var(i: int, size: int) -> sym.Node:
    return sym.var(f"r{i}", 0, max(size - 1, 0))


@dataclass(frozen=True)
class Kernel:
    out_shape: tuple[int, ...]
    red_shape: tuple[int, ...]
    bufs: tuple[DType, ...]
    body: expr.Expr
    params: tuple[DType, ...] = ()  # dtypes of the scalar arguments (``expr.Param`` slots), after the buffers

    @property
    def out_dtype(self) -> DType:
        return self.bufs[0]

    @property
    def numel(self) -> int:
        return math.prod(self.out_shape)

    @property
    def reduce_size(self) -> int:
        return math.prod(self.red_shape)

    def op_names(self) -> list[Op]:
        """The distinct ops of the body (casts as ``Op.CAST``), for the header comment and the kernel name."""
        seen: list[Op] = []
        for e in walk(self.body):
            name = e.op if isinstance(e, (expr.Alu, expr.Reduce)) else (Op.CAST if isinstance(e, expr.Cast) else None)
            if name and name not in seen:
                seen.append(name)
        return seen

    def traffic_bytes(self) -> int:
        """Bytes one run reads and writes: the output, and per input buffer the span of elements its loads
        can reach (index bounds; a strided read counts its gaps, so this bounds the traffic from above)."""
        spans: dict[int, tuple[int, int, int]] = {}
        for e in walk(self.body):
            if isinstance(e, expr.Load):
                lo, hi = max(e.index.vmin, 0), e.index.vmax
                if e.buf in spans:
                    old = spans[e.buf]
                    lo, hi = min(lo, old[0]), max(hi, old[1])
                spans[e.buf] = (lo, hi, e.dtype.itemsize)
        reads = sum(max(hi - lo + 1, 0) * size for lo, hi, size in spans.values())
        return self.numel * self.out_dtype.itemsize + reads

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
    # a matmul-like kernel's row tiles vary fastest in the global id (``matmul_axes``; other kernels ignore
    # it): consecutive work items share one column panel of the right operand, which stays in cache,
    # instead of each streaming a different one (heuristics.rows_inner)
    rows_inner: bool = False


def matmul_axes(k: Kernel) -> tuple[int, int] | None:
    """(row, column) output axes of a matmul-like kernel: a sum reduce of a product whose loads
    each ignore one of the last two output axes longer than 1; None when ``k`` is not one."""
    if len(k.red_shape) != 1:
        return None
    axes = [i for i, s in enumerate(k.out_shape) if s > 1]
    if len(axes) < 2:
        return None
    red = [e for e in walk(k.body) if isinstance(e, expr.Reduce)]
    if len(red) != 1 or red[0].op != Op.SUM:
        return None
    loads = [e for e in walk(red[0].src) if isinstance(e, expr.Load)]
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
    Op.NEG, Op.ABS, Op.EXP, Op.EXP2, Op.LOG, Op.LOG2, Op.SQRT, Op.RSQRT, Op.SIN, Op.COS, Op.TAN, Op.TANH, Op.SIGMOID,
    Op.RELU, Op.GELU, Op.GELU_TANH, Op.SILU, Op.ERF, Op.RECIPROCAL, Op.FLOOR, Op.CEIL, Op.ROUND, Op.TRUNC, Op.SQUARE,
    Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.FLOORDIV, Op.POW, Op.MAXIMUM, Op.MINIMUM,
})
VECTOR_DTYPES = frozenset({"float32", "float64"})
#: comparisons of float operands give lane masks (int/long vectors) that a ``where`` selects by
VECTOR_MASKS = frozenset({Op.EQ, Op.NE, Op.LT, Op.LE, Op.GT, Op.GE})


def vectorizable(k: Kernel) -> bool:
    """Whether every value of ``k`` has a vector form: float32/float64 only, ops in ``VECTOR_OPS``."""
    if any(d.name not in VECTOR_DTYPES for d in k.bufs):
        return False
    for e in walk(k.body):
        if isinstance(e, expr.Alu) and e.op in VECTOR_MASKS:
            if any(s.dtype.name not in VECTOR_DTYPES for s in e.srcs):
                return False
            continue
        if e.dtype.name not in VECTOR_DTYPES or isinstance(e, (expr.Cast, expr.Cond)):
            return False
        if isinstance(e, expr.Alu) and e.op not in VECTOR_OPS and e.op != Op.WHERE:
            return False
        if isinstance(e, expr.Reduce) and e.op in ARG_REDUCE:
            return False
        if isinstance(e, expr.Load) and e.gather:
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
    for r in walk(k.body):
        if not isinstance(r, expr.Reduce):
            continue
        found = True
        for e in walk(r.src):
            idx = (e.index, e.valid) if isinstance(e, expr.Load) else (e.valid,) if isinstance(e, expr.Cond) else ()
            if any(v.name == last for x in idx for v in sym.variables(x)):
                return False
    return found


def row_vec(k: Kernel, opts: Opts) -> int:
    """The vector width of a row kernel's loops (both the reduces and the outputs): ``opts.vec`` when it fits."""
    v = opts.vec
    if v not in (2, 4, 8, 16) or not vectorizable(k) or min(k.out_shape[-1], k.red_shape[-1]) < v:
        return 1
    return v
