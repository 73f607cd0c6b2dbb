"""Tuning IR kernels: their opt actions searched on real buffers, results kept per device.

With ``ZYX_TUNE=0`` (the default) ``choose_opts`` is the heuristic ``default_opts`` and
costs nothing more. Otherwise the kernel's structural key (its ops, dtypes and index
structure with sizes abstracted away) and the size class of its shapes look up the
tuning database; an unseen kernel is searched: each candidate ``Opts`` is built, run on
the kernel's real input buffers into a scratch output, timed with ``backend.launch.trial_seconds`` and
checked against the heuristic kernel's output before it may win.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import asdict
from typing import Any, Callable

import numpy as np

from zyx import settings
from zyx.backend import transfer
from zyx.backend.launch import trial_seconds
from zyx.ir.kernel import Kernel, Opts, matmul_axes
from zyx.opt.heuristics import default_opts
from zyx.opt.search import Param, Space
from zyx.opt.tuner import choose


def structural_key(k: Kernel) -> str:
    """A hash of the kernel's structure with every size and stride abstracted away (a matmul-like kernel's
    configurations name its row and column axes: ``_tile_axes``)."""
    shape_free = re.sub(r"\d+", "#", repr(k.body))
    tiles = "|mm" if matmul_axes(k) is not None else ""
    text = f"{[d.name for d in k.bufs]}|{len(k.out_shape)}|{len(k.red_shape)}|{shape_free}{tiles}"
    return "ir:" + hashlib.sha256(text.encode()).hexdigest()[:32]


def _pow2_upto(limit: int, start: int = 1) -> tuple[int, ...]:
    out, v = [], start
    while v <= limit:
        out.append(v)
        v *= 2
    return tuple(out)


def opts_space(k: Kernel, max_local: int) -> Space:
    """The opt actions worth searching for ``k`` (sizes that do not fit fall back safely); ``up_row`` and
    ``up_last`` upcast the axes of ``_tile_axes``."""
    n_out = len(k.out_shape)
    params = [Param("local", _pow2_upto(min(max_local, 256))),
              Param("vec", (1, 2, 4, 8, 16))]
    if n_out:
        # a matmul's 3-5 vectors: one tile over every column of a narrow output (N <= 80 at 16 lanes)
        ups = (1, 2, 3, 4, 5, 8) if matmul_axes(k) is not None else (1, 2, 4, 8)
        params.append(Param("up_last", ups))
    if n_out >= 2:
        params.append(Param("up_row", (1, 2, 4, 6, 8)))  # 6: the CPU matmul tile
    if k.red_shape:
        params += [Param("unroll", (1, 2, 4, 8)), Param("split", (1, 2, 4, 8, 16, 32))]
    elif n_out:
        params.append(Param("stream", (0, 1)))  # non-temporal whole-vector stores (with vec > 1)
    if matmul_axes(k) is not None:
        params.append(Param("rows_inner", (0, 1)))  # the order of the tiles (which operand stays cached)
        # a matmul's speed is its register tile: the search (beam neighbours in this order, a few seconds on a
        # big product) tries the tile shapes before work-group sizes, which barely matter on a CPU
        first = ("up_last", "up_row", "rows_inner", "unroll")
        params = [p for p in params if p.name in first] + [p for p in params if p.name not in first]
    return Space(tuple(params))


def _tile_axes(k: Kernel) -> tuple[int | None, int | None]:
    """The output axes of ``up_row`` and ``up_last``: a matmul's (row, column) axes, else the last two."""
    mm = matmul_axes(k)
    if mm is not None:
        return mm
    n = len(k.out_shape)
    return (n - 2 if n >= 2 else None), (n - 1 if n else None)


def to_config(k: Kernel, opts: Opts) -> dict[str, int]:
    """An ``Opts`` as a flat, JSON-friendly search configuration."""
    n = len(k.out_shape)
    up = list(opts.upcast) + [1] * (n - len(opts.upcast))
    row, last = _tile_axes(k)
    cfg = {"local": opts.local, "vec": opts.vec, "vec_axis": opts.vec_axis}
    if last is not None:
        cfg["up_last"] = up[last]
    if row is not None:
        cfg["up_row"] = up[row]
    if k.red_shape:
        cfg["unroll"], cfg["split"] = opts.unroll, opts.split
    if matmul_axes(k) is not None:
        cfg["rows_inner"] = int(opts.rows_inner)
    elif not k.red_shape and n:
        cfg["stream"] = int(opts.stream)
    return cfg


def from_config(k: Kernel, base: Opts, cfg: dict[str, Any]) -> Opts:
    """The ``Opts`` a search configuration describes (other fields from ``base``)."""
    n = len(k.out_shape)
    up = list(base.upcast) + [1] * (n - len(base.upcast))
    row, last = _tile_axes(k)
    if last is not None:
        up[last] = int(cfg.get("up_last", up[last]))
    if row is not None:
        up[row] = int(cfg.get("up_row", up[row]))
    fields: dict[str, Any] = {key: int(cfg[key]) for key in ("local", "unroll", "split", "vec", "vec_axis")
                              if key in cfg}
    for key in ("stream", "rows_inner"):
        if key in cfg:
            fields[key] = bool(cfg[key])
    return Opts(**{**asdict(base), **fields, "upcast": tuple(up)})


def _same_output(k: Kernel):
    exact = not (k.out_dtype.is_float and k.red_shape)

    def same(ref: np.ndarray, got: np.ndarray) -> bool:
        if exact:
            return np.array_equal(ref, got)
        a = ref.view(k.out_dtype.numpy).astype(np.float64)
        b = got.view(k.out_dtype.numpy).astype(np.float64)
        if not np.array_equal(np.isnan(a), np.isnan(b)):
            return False
        finite = np.isfinite(a)
        if not np.array_equal(a[~finite & ~np.isnan(a)], b[~finite & ~np.isnan(b)]):
            return False
        scale = float(np.abs(a[finite]).max()) if finite.any() else 0.0
        return bool(np.allclose(a[finite], b[finite], rtol=1e-4, atol=1e-6 * max(scale, 1.0)))

    return same


def _read_output(buf: Any, nbytes: int) -> np.ndarray:
    """A candidate's output bytes (a seam for tests that inject wrong candidates)."""
    return transfer.read(buf, nbytes)


def choose_opts(k: Kernel, device: Any, args: list, launch_kernel: Callable[[Any, Kernel, Opts, list], Any]) -> Opts:
    """The opts to launch ``k`` with on ``device``; ``args`` are its buffers (output first), ``launch_kernel``
    launches a candidate (``zyx.kernels.ir_launch.launch_kernel``) and returns its event(s)."""
    base = default_opts(k, device.info.max_work_group_size, device.info)
    if settings.TUNE <= 0:
        return base
    out_bytes = k.numel * k.out_dtype.itemsize
    scratch = device.pool.allocate(out_bytes)
    inputs = list(args[1:])

    def measure(cfg: dict[str, Any]) -> tuple[float, np.ndarray]:
        opts = from_config(k, base, cfg)
        seconds = trial_seconds(lambda: launch_kernel(device, k, opts, [scratch.cl, *inputs]))
        return seconds, _read_output(scratch, out_bytes)

    cfg = choose(device, structural_key(k), (*k.out_shape, *k.red_shape),
                 opts_space(k, device.info.max_work_group_size), to_config(k, base), measure, _same_output(k),
                 label=k.name())
    return from_config(k, base, cfg)
