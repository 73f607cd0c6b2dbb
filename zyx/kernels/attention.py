"""Attention kernels for CPUs that never hold the T x T matrix: ``templates/attention.cl.mako``.

Three kernels over float32 operands read in place through their strides (an ``Operand``: offset, batch
strides, row stride, column stride): the forward (online softmax over key blocks; writes the output
and the per-row log-sum-exp into one buffer), the query gradient and the key/value gradient
(each recomputing the probabilities from q, k and the saved log-sum-exp). Key blocks are ``KB``-lane
vectors of scores computed from a blocked copy of the keys (or, for the key/value gradient, of the queries
and the output gradient: padded to whole blocks of ``KB`` rows, each block stored transposed, so a block's
scores read one contiguous stream), which the caller makes (``zyx.nn.functional_attention``).

The tunable is ``R``, the rows a work item owns (its accumulators: R x head-dim vectors); the heuristic
keeps them within the registers, ``ZYX_TUNE>=1`` searches through ``conv_tuning.tuned`` (the shared
measurement helper of the direct kernels).
"""
from __future__ import annotations

import math
from typing import Any

from zyx import dtype as dtypes
from zyx import settings
from zyx.backend.device import Device
from zyx.backend.launch import compile_kernel
from zyx.backend.pool import Buffer
from zyx.codegen.render import render
from zyx.kernels import conv_tuning
from zyx.kernels.launch import launch_grid
from zyx.opt.search import Param, Space

#: lanes of a score vector (one 64-byte register of floats)
KB = 16
#: accumulator vectors (of up to 16 floats) a work item may hold; the rest of the registers hold the
#: loaded rows and the score vectors
ACC_VECTORS = 16
#: the largest head dim the kernels take (beyond: the composed attention)
MAX_HEAD_DIM = 256
#: candidate rows a work item (the tuner's space, cut to the problem)
ROWS = (1, 2, 3, 4, 6, 8)
#: work items a work-group along the rows (PoCL runs a group's items in one call: fewer dispatches)
LOCAL = 1

#: (offset, batch strides, row stride, column stride) of an operand, in elements
Operand = tuple[int, tuple[int, ...], int, int]


def eligible(device: Any, dk: int, dv: int) -> bool:
    """Whether these kernels run an attention with head dims ``dk`` (q, k) and ``dv`` (v) on ``device``:
    a CPU (work-groups of one, explicit vectors), head dims from 1 to ``MAX_HEAD_DIM``."""
    return settings.heuristics_kind(device) == "cpu" and 0 < dk <= MAX_HEAD_DIM and 0 < dv <= MAX_HEAD_DIM


def padded(n: int) -> int:
    """``n`` rounded up to whole score vectors (the blocked copies' and the log-sum-exp's row length)."""
    return -(-n // KB) * KB


def vector_width(n: int) -> int:
    """The widest vector (16 floats at most) dividing a head dim of ``n``."""
    return next(w for w in (16, 8, 4, 2, 1) if n % w == 0)


def rows(kind: str, dk: int, dv: int) -> int:
    """The heuristic rows a work item: as many as keep its accumulators within ``ACC_VECTORS``, at most 4."""
    acc = {"fwd": dv // vector_width(dv), "dq": dk // vector_width(dk)}.get(
        kind, dk // vector_width(dk) + dv // vector_width(dv))
    return max(1, min(4, ACC_VECTORS // max(acc, 1)))


def _space(n: int) -> Space:
    def allowed(cfg: Any) -> bool:
        r = cfg.get("R")
        return isinstance(r, int) and r in ROWS and r <= max(n, 1)

    return Space((Param("R", tuple(r for r in ROWS if r <= max(n, 1))),), allowed)


def _launch(device: Device, kind: str, bshape: tuple[int, ...], tq: int, tk: int, dk: int, dv: int, scale: float,
            causal: bool, ops: dict[str, Operand], bufs: list[Buffer], out_nbytes: int) -> Buffer:
    """Render, tune (under ``ZYX_TUNE>=1``) and enqueue one kernel of the family into a new buffer."""
    b = math.prod(bshape)
    mask = "m" in ops
    items = tk if kind == "dkdv" else tq
    name = f"zyx_attention_{kind}"

    def build(cfg: dict[str, int]) -> tuple[Any, tuple[int, int]]:
        src = render("attention.cl.mako", name=name, kind=kind, bshape=bshape, Tq=tq, Tk=tk, Tqp=padded(tq),
                     Tkp=padded(tk), DK=dk, DV=dv, R=cfg["R"], KB=KB, VW=vector_width(dv), VK=vector_width(dk),
                     scale=scale, causal=causal, ops=tuple(sorted(ops.items())), mask=mask)
        return compile_kernel(device, src, name), (-(-items // cfg["R"]), b)

    args = [buf.cl for buf in bufs]
    cfg = {"R": rows(kind, dk, dv)}
    key = f"attention_{kind}:d{dk}x{dv}:{'causal' if causal else 'mask' if mask else 'full'}"
    cfg = conv_tuning.tuned(device, key, (b, tq, tk), _space(items), cfg, build, args, out_nbytes, dtypes.float32,
                            f"attention {kind} {'x'.join(map(str, bshape))}x{tq}x{tk}x{dk}")
    kernel, grid = build(cfg)
    out = device.pool.allocate(out_nbytes)
    launch_grid(kernel, grid, LOCAL, [out.cl, *args])
    return out


def forward(device: Device, bshape: tuple[int, ...], tq: int, tk: int, dk: int, dv: int, scale: float,
            causal: bool, ops: dict[str, Operand], bufs: list[Buffer]) -> Buffer:
    """The attention output (B, Tq, DV) followed by the log-sum-exp (B, padded(Tq)) in one buffer.
    ``bufs``: q, kt (the keys blocked, (B, padded(Tk) / KB, DK, KB)), v and, when ``ops`` has ``m``, the
    additive float mask (in natural-log units), as ``ops`` describes them."""
    b = math.prod(bshape)
    return _launch(device, "fwd", bshape, tq, tk, dk, dv, scale, causal, ops, bufs,
                   4 * (b * tq * dv + b * padded(tq)))


def grad_q(device: Device, bshape: tuple[int, ...], tq: int, tk: int, dk: int, dv: int, scale: float,
           causal: bool, ops: dict[str, Operand], bufs: list[Buffer]) -> Buffer:
    """The query gradient (B, Tq, DK). ``bufs``: q, kt, k, vt (the values blocked),
    the output gradient g, the log-sum-exp, delta (rowsum of g * out) and the mask when given."""
    return _launch(device, "dq", bshape, tq, tk, dk, dv, scale, causal, ops, bufs, 4 * math.prod(bshape) * tq * dk)


def grad_kv(device: Device, bshape: tuple[int, ...], tq: int, tk: int, dk: int, dv: int, scale: float,
            causal: bool, ops: dict[str, Operand], bufs: list[Buffer]) -> Buffer:
    """The key gradient (B, Tk, DK) followed by the value gradient (B, Tk, DV) in one buffer. ``bufs``: qt
    (the queries blocked), q, k, v, gt (the output gradient blocked), g, the
    log-sum-exp and delta (both (B, padded(Tq)), zero padded) and the mask when given."""
    return _launch(device, "dkdv", bshape, tq, tk, dk, dv, scale, causal, ops, bufs,
                   4 * math.prod(bshape) * tk * (dk + dv))


__all__ = ["ACC_VECTORS", "KB", "MAX_HEAD_DIM", "ROWS", "Operand", "eligible", "forward", "grad_kv", "grad_q",
           "padded", "rows", "vector_width"]
