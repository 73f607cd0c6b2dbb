"""Gradient clipping: ``clip_grad_norm_`` and ``clip_grad_value_`` (PyTorch's ``torch.nn.utils``).

Both replace each parameter's ``.grad`` with a lazy clipped value: nothing is read back, and the
scaling fuses into whatever reads the gradient next (the optimizer's step kernels).
"""
from __future__ import annotations

import math
from collections.abc import Iterable

from zyx import dtype as dtypes
from zyx.frontend.autograd.engine import no_grad
from zyx.frontend.contract_ops import stack
from zyx.frontend.creation import tensor
from zyx.frontend.elementwise import minimum
from zyx.frontend.tensor import Tensor

__all__ = ["clip_grad_norm_", "clip_grad_value_"]


def _norm(x: Tensor, p: float) -> Tensor:
    """The vector p-norm of all of ``x``'s elements (16-bit and float8 values summed in float32)."""
    if x.dtype.itemsize < 4:
        x = x.cast(dtypes.float32)
    if p == math.inf:
        return x.abs().max()
    if p == -math.inf:
        return x.abs().min()
    if p == 2:
        return (x * x).sum().sqrt()
    if p == 1:
        return x.abs().sum()
    return (x.abs() ** p).sum() ** (1.0 / p)


def clip_grad_norm_(parameters: Tensor | Iterable[Tensor], max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False) -> Tensor:
    """Scale the gradients so that their joint ``norm_type``-norm (over all of them, as one vector) is at
    most ``max_norm``: each is multiplied by ``min(1, max_norm / (total + 1e-6))``. Returns the total norm
    before clipping (a 0-d tensor; lazy unless ``error_if_nonfinite`` has to look at it)."""
    norm_type = float(norm_type)
    if not (norm_type > 0 or math.isinf(norm_type)):
        raise ValueError(f"clip_grad_norm_: norm_type {norm_type} is not supported (expected p > 0 or +-inf)")
    params = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    with no_grad():
        grads = [p.grad for p in params if p.grad is not None]
        if not grads:
            return tensor(0.0)
        total = _norm(stack([_norm(g.detach(), norm_type) for g in grads]), norm_type)
        if error_if_nonfinite and not math.isfinite(total.item()):
            raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is "
                               "non-finite, so it cannot be clipped. To disable this error and scale the gradients "
                               "by the non-finite norm anyway, set `error_if_nonfinite=False`")
        coef = minimum(float(max_norm) / (total + 1e-6), 1.0)
        for p in params:
            g = p.grad
            if g is not None:
                p.grad = g.detach() * coef.cast(g.dtype)
    return total.cast(grads[0].dtype)


def clip_grad_value_(parameters: Tensor | Iterable[Tensor], clip_value: float) -> None:
    """Clamp every gradient's elements to ``[-clip_value, clip_value]``."""
    clip_value = float(clip_value)
    params = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    with no_grad():
        for p in params:
            if p.grad is not None:
                p.grad = p.grad.detach().clip(-clip_value, clip_value)
