"""The direct convolution kernels' tunables, searched by the shared autotuner (``zyx.opt.tuner``).

The forward kernel (``templates/conv2d.cl.mako``) has a tile ``(p, v, rows)``: output pixels along W,
vectors of output channels and output rows a work item computes; the weight-gradient kernel
(``templates/conv2d_wgrad.cl.mako``) has ``cb``, the input channels a work item accumulates. With
``ZYX_TUNE=0`` (the default) the heuristic choice runs, as for every other kernel; with ``ZYX_TUNE>=1``
the choice comes from the tuning database (kernel key + size class + device signature) or, when none
is stored, from a beam search in which each candidate is compiled, launched on the real input buffers
into a scratch output, timed with ``backend.launch.trial_seconds``, and must match the heuristic's output before it
may win (``zyx.opt.search``: the heuristic is measured too, so the result is never slower than it).
A database entry whose configuration is not in the current space (stale) is ignored.

``forced_tile`` pins the forward tile (tests, hand sweeps); it wins over both.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Callable

import numpy as np

from zyx import dtype as dtypes
from zyx import settings
from zyx.backend import transfer
from zyx.backend.launch import trial_seconds
from zyx.kernels.launch import launch_grid
from zyx.opt.search import Param, Space
from zyx.opt.tuner import choose

#: candidate tile values; the space is cut to what a problem allows (see ``tile_space``)
PIXELS = (1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16)
VECTORS = (1, 2, 4)
ROWS = (1, 2, 4)
#: weight-gradient input channels a work item (the space keeps cb * KH * KW within ``WGRAD_MAX_ACC``)
CHANNELS = (1, 2, 3, 4)
#: the most accumulator vectors a candidate may hold (beyond, the registers spill: slower, never wrong)
MAX_ACC = 32
WGRAD_MAX_ACC = 36

_forced: tuple[int, int, int] | None = None


@contextmanager
def forced_tile(til: tuple[int, int, int] | None) -> Iterator[None]:
    """Run every direct forward convolution of the block with the tile ``(p, v, rows)`` (None: the usual choice)."""
    global _forced
    outer, _forced = _forced, til
    try:
        yield
    finally:
        _forced = outer


def forced() -> tuple[int, int, int] | None:
    """The tile ``forced_tile`` pins now, or None."""
    return _forced


def tile_space(vw: int, og: int, oh: int, ow: int, itemsize: int) -> Space:
    """The forward tiles valid for a group of ``og`` output channels in ``vw``-lane vectors over an
    ``oh`` x ``ow`` output: ``v`` dividing the group's vectors, ``p`` and ``rows`` not past the output, at
    most ``MAX_ACC`` accumulator registers (64-byte ones)."""
    regs = max(1.0, vw * itemsize / 64)
    vecs = og // vw

    def allowed(cfg: Any) -> bool:
        p, v, r = cfg.get("p"), cfg.get("v"), cfg.get("rows")
        return (isinstance(p, int) and isinstance(v, int) and isinstance(r, int) and 1 <= p <= max(ow, 1)
                and v in VECTORS and vecs % v == 0 and r in ROWS and r <= max(oh, 1) and p * v * regs <= MAX_ACC)

    return Space((Param("p", tuple(p for p in PIXELS if p <= max(ow, 1))),
                  Param("v", tuple(v for v in VECTORS if vecs % v == 0)),
                  Param("rows", tuple(r for r in ROWS if r <= max(oh, 1)))), allowed)


def wgrad_space(cg: int, kh: int, kw: int) -> Space:
    """The weight-gradient kernel's ``cb`` values: dividing the group's input channels, ``cb * KH * KW``
    accumulators within ``WGRAD_MAX_ACC``."""
    def allowed(cfg: Any) -> bool:
        cb = cfg.get("cb")
        return isinstance(cb, int) and cb in CHANNELS and cg % cb == 0 and cb * kh * kw <= WGRAD_MAX_ACC

    return Space((Param("cb", tuple(c for c in CHANNELS if allowed({"cb": c}))),), allowed)


def _close(dtype: dtypes.DType) -> Callable[[np.ndarray, np.ndarray], bool]:
    """Two outputs' bytes agree to the dtype's rounding (a tile may contract multiply-adds differently)."""
    tol = 1e-4 if dtype == dtypes.float32 else 1e-10

    def same(a: np.ndarray, b: np.ndarray) -> bool:
        x, y = a.view(dtype.numpy).astype(np.float64), b.view(dtype.numpy).astype(np.float64)
        scale = float(np.max(np.abs(x))) if x.size else 0.0
        return bool(np.allclose(x, y, rtol=tol, atol=tol * max(scale, 1e-30), equal_nan=True))

    return same


def _read_output(buf: Any, nbytes: int) -> np.ndarray:
    """A candidate's output bytes (a seam for tests)."""
    return transfer.read(buf, nbytes)


def tuned(device: Any, key: str, sizes: tuple[int, ...], space: Space, default: dict[str, int],
          build: Callable[[dict[str, int]], tuple[Any, tuple[int, ...]]], args: list[Any], out_nbytes: int,
          dtype: dtypes.DType, label: str) -> dict[str, int]:
    """The configuration to launch with: ``default`` when tuning is off, else the autotuner's choice.
    ``build(cfg)`` gives ``(compiled kernel, global size)`` (work-groups of one); ``args`` are the input
    buffers' ``cl`` handles (the output comes first, a scratch buffer while measuring)."""
    if settings.TUNE <= 0 or out_nbytes == 0:
        return default
    held: list[Any] = []  # the scratch output, allocated by the first measurement (none on a database hit)

    def measure(cfg: dict[str, Any]) -> tuple[float, np.ndarray]:
        if not held:
            held.append(device.pool.allocate(out_nbytes))
        scratch = held[0]
        kernel, grid = build(dict(cfg))
        seconds = trial_seconds(lambda: launch_grid(kernel, grid, 1, [scratch.cl, *args]))
        return seconds, _read_output(scratch, out_nbytes)

    return {k: int(v) for k, v in choose(device, key, sizes, space, default, measure, _close(dtype),
                                         label=label).items()}


__all__ = ["CHANNELS", "MAX_ACC", "PIXELS", "ROWS", "VECTORS", "WGRAD_MAX_ACC", "forced", "forced_tile",
           "tile_space", "tuned", "wgrad_space"]
