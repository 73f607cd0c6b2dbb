"""The optimizers' one kernel per parameter and step: ``templates/optim_step.cl.mako``.

The kernel reads the gradient and writes the parameter and every state tensor of the step in
place, one work-item per element. Writing in place is PyTorch's semantics (views of a parameter
see the update) and keeps a step's memory flat: no new parameter or state buffer per step.
Parameters are not batched together: each parameter is one launch.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from zyx.backend import errorflags, journal
from zyx.backend.launch import compile_kernel, launch_exact
from zyx.codegen.render import render
from zyx.frontend.tensor import Tensor
from zyx.frontend.traced_scalar import peek
from zyx.ir.view import View

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


def make_dense_in_place(t: Tensor) -> None:
    """Rebind ``t`` to a dense copy of its values when it is not dense already, so the step's kernel
    can write it element by element (a parameter that is a strided view of a larger buffer)."""
    if not t._view.is_contiguous:
        t._assign(t.contiguous().realize())


def step_in_place(algo: str, param: Tensor, grad: Tensor, state: Mapping[str, Tensor], flags: frozenset[str],
                  scalars: Mapping[str, float], replayed: Callable[[str], float] | None = None) -> None:
    """Run ``algo``'s update on ``param`` and its ``state`` tensors (same shape and dtype, updated in
    place) from ``grad``; ``flags`` pick the formula's options, ``scalars`` are its run-time numbers
    (in the compute type of ``param``'s dtype: double for float64, float otherwise). Under a capture,
    ``replayed(name)`` gives scalar ``name``'s value at each replay (``journal.note_host_param``)."""
    n = param.numel()
    if n == 0:
        return
    make_dense_in_place(param)
    for t in state.values():
        make_dense_in_place(t)
    if grad.dtype is not param.dtype:
        grad = grad.cast(param.dtype)
    source = render("optim_step.cl.mako", algo=algo, dtype=param.dtype, flags=flags, state=tuple(state),
                    scalars=tuple(scalars), grad_index=strided_index(grad._view))
    kernel = compile_kernel(param.device, source, f"zyx_optim_{algo}")
    number = np.float64 if param.dtype.name == "float64" else np.float32
    grad_buf = grad._realized()
    # _buf: the writes' own buffers, after every pending reader of their old values has run
    # a traced number (a jitted function's lr) is peeked, not read: the replay recomputes it (below)
    numbers = [number(peek(v) if replayed is not None else v) for v in scalars.values()]
    if replayed is not None:
        for name, arg in zip(scalars, numbers):
            journal.note_host_param(arg, lambda name=name: number(replayed(name)))
    args = [param._buf.cl, grad_buf.cl, *(t._buf.cl for t in state.values()), *numbers,
            errorflags.word_buffer(param.device)]  # set bits (a failed gather upstream): the step writes nothing
    launch_exact(kernel, n, min(LOCAL_SIZE, kernel.work_group_size), args)
