"""Stochastic gradient descent with momentum, dampening, Nesterov momentum and weight decay."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from zyx.frontend.tensor import Tensor
from zyx.optim.optimizer import Optimizer, check_range


class SGD(Optimizer):
    """PyTorch's ``torch.optim.SGD``: ``g += weight_decay * p``; with momentum ``b = momentum * b +
    (1 - dampening) * g`` (``b = g`` on the first step), ``g = g + momentum * b`` (Nesterov) or ``g = b``;
    then ``p -= lr * g``. State: ``momentum_buffer``. Kernels per parameter and step: 1, or 2 with
    momentum (the buffer, then the parameter)."""

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, momentum: float = 0.0, dampening: float = 0.0,
                 weight_decay: float = 0.0, nesterov: bool = False, *, maximize: bool = False) -> None:
        check_range("learning rate", lr)
        check_range("momentum value", momentum)
        check_range("weight_decay value", weight_decay)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, {"lr": lr, "momentum": momentum, "dampening": dampening,
                                  "weight_decay": weight_decay, "nesterov": nesterov, "maximize": maximize})

    def _update(self, p: Tensor, grad: Tensor, group: dict[str, Any],
                state: dict[str, Any]) -> tuple[Tensor, dict[str, Any]]:
        wd, momentum, lr = group["weight_decay"], group["momentum"], group["lr"]
        if wd != 0:
            grad = grad + wd * p
        changed: dict[str, Any] = {}
        if momentum != 0:
            buf = state.get("momentum_buffer")
            buf = grad.clone() if buf is None else buf * momentum + (1 - group["dampening"]) * grad
            changed["momentum_buffer"] = buf
            grad = grad + momentum * buf if group["nesterov"] else buf
        return p - lr * grad, changed
