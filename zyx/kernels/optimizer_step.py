"""The optimizers' multi-tensor step: ``templates/optim_step.cl.mako``.

One launch updates many parameters (a parameter group's tensors of one dtype and formula): it reads
each gradient and writes each parameter and every state tensor of the step in place, a run of
``PER_ITEM`` elements a work-item. Writing in place is PyTorch's semantics (views of a parameter see the
update) and keeps a step's memory flat: no new parameter or state buffer per step. Each tensor's buffers
are arguments of their own and its size a render-time constant; a group whose arguments exceed what one
launch takes (``per_launch``: at most ``MAX_TENSORS`` tensors, within the device's
``CL_DEVICE_MAX_PARAMETER_SIZE``) is split into several launches. ``zyx.optim.optimizer`` makes the
tensors dense and calls ``step``.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from zyx import settings
from zyx.backend import errorflags
from zyx.backend.device import Device
from zyx.backend.launch import compile_kernel
from zyx.backend.pool import Buffer
from zyx.codegen.render import render
from zyx.dtype import DType
from zyx.ir.view import View
from zyx.kernels.launch import group_size, launch_grid

LOCAL_SIZE = 64
# Each tensor's work-items start at a multiple of ALIGN and the work-group size divides it, so a work-group
# lies in one tensor: it picks its buffers by a test all its work-items take the same way.
ALIGN = 64
# The elements one work-item updates: on a CPU a loop PoCL vectorizes (one element a work-item under the
# kernel's branch per tensor ran scalar); on a GPU one, so neighbouring work-items read neighbouring elements.
PER_ITEM = {"cpu": 16, "gpu": 1}
# A cap on the tensors of one launch: the kernel's source (one branch per tensor) and its build time grow
# with it, and drivers limit buffer arguments (the parameter size checked in per_launch) below any count.
MAX_TENSORS = 32
POINTER_BYTES = 8  # a buffer argument's size on the device (64-bit addresses; 32-bit ones take less)


@dataclass(frozen=True)
class Slot:
    """One tensor of a launch: its ``n`` dense elements in ``param`` and ``states`` (updated in place) and
    its gradient in ``grad``, read through ``grad_view``."""

    n: int
    grad_view: View
    param: Buffer
    grad: Buffer
    states: tuple[Buffer, ...]


def strided_index(view: View) -> str:
    """The OpenCL expression of the buffer index of flat (row-major) element ``zyx_i`` of ``view``: the
    gradient is read through its own strides (a weight's gradient is often a transposed view), so the
    step needs no copy of it."""
    if view.is_contiguous:
        return "zyx_i"
    merged = view.merged()
    terms, inner = [], 1
    for size, stride in reversed(list(zip(merged.shape, merged.strides))):
        coord = "zyx_i" if inner == 1 else f"(zyx_i / {inner})"
        if inner * size != view.numel:
            coord = f"({coord} % {size})"
        terms.append(f"{coord} * {stride}")
        inner *= size
    return " + ".join([str(merged.offset), *reversed(terms)])


def per_launch(device: Device, n_state: int, scalar_bytes: int) -> int:
    """How many tensors one launch takes: at most ``MAX_TENSORS``, their buffer arguments (parameter,
    gradient and ``n_state`` state buffers each) with ``scalar_bytes`` of scalars and the error word within
    the device's ``CL_DEVICE_MAX_PARAMETER_SIZE``."""
    room = device.info.max_parameter_bytes - scalar_bytes - POINTER_BYTES
    return max(1, min(MAX_TENSORS, room // ((2 + n_state) * POINTER_BYTES)))


def step(device: Device, algo: str, dtype: DType, flags: frozenset[str], state: Sequence[str],
         scalars: Sequence[str], slots: Sequence[Slot], numbers: Sequence[Any]) -> None:
    """Enqueue ``algo``'s update of every tensor of ``slots`` (none empty; their states named ``state``) in as
    few launches as ``per_launch`` allows; ``flags`` pick the formula's options, ``numbers`` are the values of
    ``scalars`` in the compute type of ``dtype``, the same for every tensor."""
    cap = per_launch(device, len(state), sum(n.itemsize for n in numbers))
    for at in range(0, len(slots), cap):
        _launch(device, algo, dtype, flags, tuple(state), tuple(scalars), slots[at:at + cap], numbers)


def _launch(device: Device, algo: str, dtype: DType, flags: frozenset[str], state: tuple[str, ...],
            scalars: tuple[str, ...], slots: Sequence[Slot], numbers: Sequence[Any]) -> None:
    sizes = tuple(s.n for s in slots)
    per_item = PER_ITEM[settings.heuristics_kind(device)]
    items = tuple(-(-n // (per_item * ALIGN)) * ALIGN for n in sizes)  # each tensor's work-items
    # tensors whose gradients are read alike share one loop (all dense ones; transposed weights of one shape)
    indices = [strided_index(s.grad_view) for s in slots]
    grad_index = tuple(dict.fromkeys(indices))
    source = render("optim_step.cl.mako", algo=algo, dtype=dtype, flags=flags, state=state, scalars=scalars,
                    sizes=sizes, items=items, grad_index=grad_index,
                    reads=tuple(grad_index.index(i) for i in indices), per_item=per_item)
    kernel = compile_kernel(device, source, f"zyx_optim_{algo}")
    group = 1 << (group_size(kernel, LOCAL_SIZE).bit_length() - 1)  # a power of two: it divides ALIGN
    args = [b.cl for s in slots for b in (s.param, s.grad, *s.states)]
    args += [*numbers, errorflags.word_buffer(device)]  # set bits (a failed gather upstream): the step writes nothing
    launch_grid(kernel, (sum(items),), group, args)
