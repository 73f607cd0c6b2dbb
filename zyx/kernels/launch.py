"""The one launch helper of the kernel families: compile (cached), size the work-groups, enqueue.

A kernel's work-group size is what its launcher asks for, clamped to what the kernel and the device
allow (``CL_KERNEL_WORK_GROUP_SIZE``, register pressure). Along axis 0 the grid is either rounded up
to whole work-groups (kernels that test their bounds) or launched ``exact`` (kernels without a
bounds test: PoCL stops vectorizing a work-group across a return that may be taken); the other axes
take work-groups of one. These launches go through ``backend.launch.launch`` looked up at the call,
so a test's spy on it sees them; the fixed-geometry launchers (bitonic sort, the scan and roll-rows
contract kernels), whose template fixes the work-group, call it directly.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from zyx.backend import launch as backend_launch
from zyx.backend.device import Device
from zyx.backend.launch import CompiledKernel, compile_kernel


def group_size(kernel: CompiledKernel, want: int) -> int:
    """The work-group size for ``kernel`` when its launcher wants ``want``: at most what the kernel
    and its device allow, at least 1."""
    return max(1, min(want, kernel.work_group_size, kernel.device.info.max_work_group_size))


def launch_grid(kernel: CompiledKernel, grid: Sequence[int], local: int, args: Sequence[Any],
                exact: bool = False) -> Any:
    """Enqueue ``kernel`` over ``grid`` in work-groups of ``group_size(kernel, local)`` along axis 0.

    Not ``exact``: axis 0 rounded up to whole work-groups; returns the event. ``exact``: exactly
    ``grid[0]`` work-items along axis 0 of a 1-D or 2-D grid: whole work-groups first, then the rest
    at a global offset, as work-groups of one (1-D) or one work-group per row (2-D; groups of one ran
    several times slower there). The rest's size depends only on ``grid[0]`` and the group, never on
    run-time arguments. Returns the event, or a list of two (counted as one kernel in ``kernel_count``).
    """
    group = group_size(kernel, local)
    n, rest = grid[0], tuple(grid[1:])
    ones = (1,) * len(rest)
    if not exact:
        return backend_launch.launch(kernel, (-(-n // group) * group, *rest), (group, *ones), list(args))
    if len(rest) > 1:
        raise ValueError(f"launch_grid: an exact launch takes a 1-D or 2-D grid, got {len(grid)} axes")
    bulk = n // group * group
    events = []
    if bulk:
        events.append(backend_launch.launch(kernel, (bulk, *rest), (group, *ones), list(args)))
    if n > bulk:
        rows = rest[0] if rest else 0
        glob, grp, at = ((n - bulk, rows), (n - bulk, 1), (bulk, 0)) if rows else ((n - bulk,), (1,), (bulk,))
        events.append(backend_launch.launch(kernel, glob, grp, list(args), offset=at, counts=not bulk))
    return events[0] if len(events) == 1 else events


def run(device: Device, source: str, name: str, grid: Sequence[int], local: int, args: Sequence[Any],
        exact: bool = False, options: str = "") -> Any:
    """Build ``name`` of ``source`` for ``device`` (cached by ``compile_kernel``) and ``launch_grid`` it."""
    return launch_grid(compile_kernel(device, source, name, options), grid, local, args, exact)
