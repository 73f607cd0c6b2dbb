"""The reflect / replicate / circular padding kernel: the launcher for ``templates/pad_rows.cl.mako``.

One launch pads every padded dim at once: the dims after the innermost padded one stay whole blocks, the
dims before it index output rows (each row's source row found once), and a row's interior is a contiguous
copy. The frontend (``zyx.frontend.padding``) runs it as an ``EXTERN`` graph node over a dense input.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

from zyx import settings
from zyx.backend.device import Device
from zyx.backend.pool import Buffer
from zyx.codegen.render import render
from zyx.dtype import UINT_OF_SIZE, index_np, index_type
from zyx.kernels.launch import run

CHUNK = 4096  # CPUs: output words a work item writes along a row (long rows split across work items)
VEC = 16  # CPUs: words a step of the interior copy
GPU_CHUNK = 4  # GPUs: neighbouring work items write neighbouring words (coalesced), a vector each
LOCAL = {"cpu": 16, "gpu": 128}  # work items a work-group


def pad_layout(shape: Sequence[int], per_dim: Sequence[tuple[int, int]]) -> dict:
    """The template's view of padding ``shape`` by ``per_dim[d] = (before, after)`` (each >= 0, at least
    one non-zero): ``outer`` (out size, in size, before) per row dim, adjacent unpadded dims merged;
    the innermost padded dim's ``n``, ``lo``, ``hi``; ``inner``, the elements after it."""
    last = max(d for d, (lo, hi) in enumerate(per_dim) if lo or hi)
    outer: list[tuple[int, int, int]] = []
    for size, (lo, hi) in zip(shape[:last], per_dim[:last]):
        if not (lo or hi) and outer and outer[-1][0] == outer[-1][1]:
            o, i, _ = outer[-1]
            outer[-1] = (o * size, i * size, 0)
        elif lo or hi or size != 1:
            outer.append((size + lo + hi, size, lo))
    lo, hi = per_dim[last]
    return {"outer": tuple(outer), "n": shape[last], "lo": lo, "hi": hi, "inner": math.prod(shape[last + 1:])}


def pad_rows(device: Device, out: Buffer, src: Buffer, offset: int, itemsize: int, mode: str, layout: dict) -> None:
    """Enqueue the padding of ``src`` (dense from element ``offset``) into ``out`` (``layout`` from
    ``pad_layout``); elements move as ``itemsize``-byte words (every dtype, bits kept)."""
    kind = settings.heuristics_kind(device)
    row_words = (layout["lo"] + layout["n"] + layout["hi"]) * layout["inner"]
    rows = math.prod(o for o, _, _ in layout["outer"])
    chunk = min(GPU_CHUNK if kind == "gpu" else CHUNK, row_words)
    items = rows * -(-row_words // chunk)
    in_words = math.prod(i for _, i, _ in layout["outer"]) * layout["n"] * layout["inner"]
    group = LOCAL[kind]
    index_t = index_type(rows * row_words, offset + in_words, -(-items // group) * group)
    source = render("pad_rows.cl.mako", word=UINT_OF_SIZE[itemsize].cl_storage, mode=mode, chunk=chunk,
                    vec=GPU_CHUNK if kind == "gpu" else VEC, index_t=index_t, **layout)
    ity = index_np(index_t)
    run(device, source, "zyx_pad", (items,), group, [out.cl, src.cl, ity(offset), ity(items)])
