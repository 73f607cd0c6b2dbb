"""A buffer-to-buffer copy as a kernel launch (``templates/copy_words.cl.mako``): what a kernel family
that starts from a copy of its input uses, so a captured plan (``zyx.jit``, tapes) can replay it; an
``enqueue_copy`` is not a launch and makes a capture unreplayable."""
from __future__ import annotations

import numpy as np

from zyx.backend.device import Device
from zyx.backend.pool import Buffer
from zyx.codegen.render import render
from zyx.kernels.launch import run

#: word types by size, widest first: the copy moves the widest word that divides size and offset
_WORDS = ((16, "uint4"), (4, "uint"), (1, "uchar"))


def copy_bytes(device: Device, src: Buffer, dst: Buffer, nbytes: int, src_offset: int = 0) -> None:
    """Enqueue a copy of ``nbytes`` bytes of ``src`` from byte ``src_offset`` to the start of ``dst``."""
    if nbytes == 0:
        return
    size, word = next((s, w) for s, w in _WORDS if nbytes % s == 0 and src_offset % s == 0)
    name = f"zyx_copy_{word}"
    n = nbytes // size
    run(device, render("copy_words.cl.mako", name=name, word=word), name, (n,), 256,
        [dst.cl, src.cl, np.uint64(src_offset // size), np.uint64(n)])
