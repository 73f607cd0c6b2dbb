"""Stochastic gradient descent with momentum, dampening, Nesterov momentum and weight decay."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from zyx.frontend.creation import zeros_like
from zyx.frontend.tensor import Tensor
from zyx.optim.optimizer import Optimizer, Update, check_range


class SGD(Optimizer):
    """PyTorch's ``torch.optim.SGD``: ``g += weight_decay * p``; with momentum ``b = momentum * b +
    (1 - dampening) * g`` (``b = g`` on the first step), ``g = g + momentum * b`` (Nesterov) or ``g = b``;
    then ``p -= lr * g``. State: ``momentum_buffer``. One kernel per parameter group and step
    (the momentum buffers included)."""

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, momentum: float = 0.0, dampening: float = 0.0,
                 weight_decay: float = 0.0, nesterov: bool = False, *, maximize: bool = False) -> None:
        check_range("learning rate", lr)
        check_range("momentum value", momentum)
        check_range("weight_decay value", weight_decay)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, {"lr": lr, "momentum": momentum, "dampening": dampening,
                                  "weight_decay": weight_decay, "nesterov": nesterov, "maximize": maximize})

    def _kernel(self, p: Tensor, group: dict[str, Any], state: dict[str, Any]) -> Update:
        flags: set[str] = set()
        scalars: dict[str, float] = {"lr": group["lr"]}
        if group["weight_decay"] != 0:
            flags.add("weight_decay")
            scalars["weight_decay"] = group["weight_decay"]
        if group["momentum"] == 0:
            return Update("sgd", flags, (), scalars)
        flags.add("momentum")
        if group["nesterov"]:
            flags.add("nesterov")
        scalars["momentum"] = group["momentum"]
        if state.get("momentum_buffer") is None:  # the first step's buffer is the gradient itself
            state["momentum_buffer"] = zeros_like(p)
            flags.add("first_step")
        else:
            scalars["one_minus_dampening"] = 1 - group["dampening"]
        return Update("sgd", flags, ("momentum_buffer",), scalars)

