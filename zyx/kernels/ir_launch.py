"""IR kernels on a device: their generated source cached per (kernel, opts), built and launched.

``codegen.ir_source`` renders a kernel's OpenCL C; this module keeps the rendered source (and what
the launch needs of its program) in one cache keyed by the immutable ``Kernel`` and ``Opts`` values,
builds it through ``backend.launch.compile_kernel`` and launches it with the launch helper.
"""
from __future__ import annotations

from dataclasses import replace
from functools import lru_cache
from typing import Any

from zyx.backend import errorflags
from zyx.backend import launch as backend_launch
from zyx.backend.launch import compile_kernel
from zyx.codegen import ir_source
from zyx.ir.kernel import Kernel, Opts
from zyx.kernels.launch import group_size, launch_grid


@lru_cache(maxsize=4096)
def _cached_source(k: Kernel, opts: Opts) -> tuple[str, str, int, bool, int, int, tuple[str, ...], int]:
    name, src, prog = ir_source.source(k, opts)
    ops = tuple(str(getattr(op, "value", op)) for op in k.op_names())  # tests build kernels with plain names
    return (name, src, prog.global_items, f"*{ir_source.ERR_FLAG}" in src, prog.split, prog.local, ops,
            k.traffic_bytes())


def launch_kernel(device: Any, k: Kernel, opts: Opts, args: list) -> Any:
    """Build (cached) and enqueue ``k`` with buffer ``args`` (output first); returns the event (a list
    of two when the work items are launched as whole work-groups plus a remainder)."""
    name, src, items, uses_flag, split, need_local, ops, nbytes = _cached_source(k, opts)
    ck = compile_kernel(device, src, name, ir_source.BUILD_OPTIONS, ops, nbytes)
    # The device's limit and this kernel's own CL_KERNEL_WORK_GROUP_SIZE (register pressure).
    if split > 1 and need_local > group_size(ck, need_local):  # fewer items share each reduce; same results' shape
        return launch_kernel(device, k, replace(opts, split=split // 2), args)
    if uses_flag:  # integer division/pow checks report through the device's error flag
        args = [*args, errorflags.reserve(device)[0]]
    if split > 1:  # whole split groups per work-group (their partials meet in local memory)
        return backend_launch.launch(ck, (-(-items * split // need_local) * need_local,), (need_local,), args)
    # No bounds test in the source (PoCL vectorizes far slower with one), so every work item must be
    # a real one; a work-group larger than the items is cut to them (one group, not single items).
    return launch_grid(ck, (items,), min(opts.local, items), args, exact=True)
