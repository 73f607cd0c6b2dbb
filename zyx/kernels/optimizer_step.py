"""The optimizers' one kernel per parameter and step: ``templates/optim_step.cl.mako``.

The kernel reads the gradient and writes the parameter and every state tensor of the step in
place, one work-item per element. Writing in place is PyTorch's semantics (views of a parameter
see the update) and keeps a step's memory flat: no new parameter or state buffer per step.
Parameters are not batched together: each parameter is one launch (``zyx.optim.optimizer`` makes
the parameter and its state dense and calls ``step`` with their buffers).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from zyx.backend import errorflags
from zyx.backend.device import Device
from zyx.backend.pool import Buffer
from zyx.codegen.render import render
from zyx.dtype import DType
from zyx.ir.view import View
from zyx.kernels.launch import run

LOCAL_SIZE = 64


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


def step(device: Device, algo: str, dtype: DType, flags: frozenset[str], state: Sequence[str],
         scalars: Sequence[str], grad_view: View, n: int, param: Buffer, grad: Buffer, states: Sequence[Buffer],
         numbers: Sequence[Any]) -> None:
    """Enqueue ``algo``'s update of the ``n`` dense elements of ``param`` and its ``states`` (named ``state``)
    from ``grad`` read through ``grad_view``; ``flags`` pick the formula's options, ``numbers`` are the
    values of ``scalars`` in the compute type of ``dtype``."""
    source = render("optim_step.cl.mako", algo=algo, dtype=dtype, flags=flags, state=tuple(state),
                    scalars=tuple(scalars), grad_index=strided_index(grad_view))
    args = [param.cl, grad.cl, *(b.cl for b in states), *numbers,
            errorflags.word_buffer(device)]  # set bits (a failed gather upstream): the step writes nothing
    run(device, source, f"zyx_optim_{algo}", (n,), LOCAL_SIZE, args, exact=True)
