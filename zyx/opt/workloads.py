"""The built-in tuning workloads of ``python -m zyx tune``: the kernels users run most.

Each workload builds its inputs, then runs the op once with tuning enabled (which
searches every kernel the op launches) and realizes the result.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Workload:
    """A named piece of work; ``run(quick)`` executes it once."""

    name: str
    run: Callable[[bool], None]


def _matmul(quick: bool) -> None:
    import zyx

    n = 256 if quick else 1024
    a, b = zyx.rand(n, n), zyx.rand(n, n)
    (a @ b).realize()


def _softmax(quick: bool) -> None:
    import zyx

    x = zyx.randn(512 if quick else 4096, 1024)
    x.softmax(-1).realize()


def _layer_norm(quick: bool) -> None:
    import zyx
    import zyx.nn.functional as F

    x = zyx.randn(512 if quick else 4096, 1024)
    F.layer_norm(x, (1024,)).realize()


def _sum(quick: bool) -> None:
    import zyx

    x = zyx.rand((1 << 20) if quick else (1 << 24))
    x.sum().realize()


def _contract(op: str) -> Callable[[bool], None]:
    def run(quick: bool) -> None:
        import zyx
        from zyx.contracts import kernels

        rows = 1024 if quick else 4096
        x = zyx.rand(rows, 4096)  # 64 MiB of float32 at full size
        kernels.module_for(op).tune_op(zyx, x, rows)
    return run


BUILTIN: tuple[Workload, ...] = (
    Workload("matmul 1024^3 float32", _matmul),
    Workload("softmax 4096x1024", _softmax),
    Workload("layer_norm 4096x1024", _layer_norm),
    Workload("sum 16M float32", _sum),
    *(Workload(f"contract {op} 64 MiB", _contract(op)) for op in
      ("contiguize", "flip", "roll", "concat", "triangular", "masked_fill", "cumsum", "write_slice")),
)
