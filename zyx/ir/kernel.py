"""A kernel before lowering, and its opt actions (the tunables an autotuner searches).

``Kernel`` says *what* is computed: one output buffer of ``out_shape`` (dense,
row-major), a body expression per output element over the index variables
``o0..`` (output coordinates) and ``r0..`` (reduce coordinates over ``red_shape``),
and the dtypes of its buffers (index 0 is the output). ``Opts`` says *how*: work-group
size, upcast (several outputs per work item, per output axis; on two axes this is
register tiling for matmul-like reduces), reduce unroll, and split (grouped) reduction.
``apply_opt`` returns a new Opts (pure); ``default_opts`` gives the heuristic choice.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

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
    upcast: tuple[int, ...] = ()  # per output axis, outputs per work item (divides the axis)
    unroll: int = 1  # reduce loop unroll on the innermost reduce axis (divides it)
    split: int = 1  # work items sharing one output's reduce through local memory


def apply_opt(opts: Opts, action: str, value: Any) -> Opts:
    """A new Opts with one action applied: ``local``, ``upcast`` (axis, factor), ``unroll``, ``split``."""
    if action == "upcast":
        axis, factor = value
        up = list(opts.upcast)
        while len(up) <= axis:
            up.append(1)
        up[axis] *= factor
        return replace(opts, upcast=tuple(up))
    if action in ("local", "unroll", "split"):
        return replace(opts, **{action: int(value)})
    raise ValueError(f"unknown opt action {action!r}")


def is_matmul_like(k: Kernel) -> bool:
    """A sum reduce of a product whose operands each ignore one of the last two output axes."""
    if len(k.out_shape) < 2 or len(k.red_shape) != 1:
        return False
    red = [e for e in ops.walk(k.body) if isinstance(e, ops.Reduce)]
    if len(red) != 1 or red[0].op != "sum":
        return False
    loads = [e for e in ops.walk(red[0].src) if isinstance(e, ops.Load)]
    if len(loads) < 2:
        return False
    n = len(k.out_shape)
    a_row, a_col = f"o{n - 2}", f"o{n - 1}"
    mentions = [{v.name for v in sym.variables(ld.index)} for ld in loads]
    return any(a_row in m and a_col not in m for m in mentions) and any(a_col in m and a_row not in m for m in mentions)


def default_opts(k: Kernel, max_local: int = 256) -> Opts:
    """Heuristic opts: vectorizable upcast for elementwise, register tiles for matmul-like reduces."""
    n = len(k.out_shape)
    upcast = [1] * n
    if n and not k.red_shape:
        last = k.out_shape[-1]
        for f in (4, 2):
            if last % f == 0 and k.numel >= 4096:
                upcast[-1] = f
                break
    elif n >= 2 and is_matmul_like(k):
        for axis in (n - 2, n - 1):
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
