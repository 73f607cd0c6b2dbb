"""Adagrad with learning-rate decay."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from zyx.frontend.creation import full_like
from zyx.frontend.tensor import Tensor
from zyx.optim.optimizer import Optimizer, check_range


class Adagrad(Optimizer):
    """PyTorch's ``torch.optim.Adagrad``: ``g += weight_decay * p``, ``lr_t = lr / (1 + (t - 1) * lr_decay)``,
    ``s += g * g``, ``p -= lr_t * g / (sqrt(s) + eps)``. State (created with the optimizer, as PyTorch
    does): ``step``, ``sum`` (starting at ``initial_accumulator_value``). Kernels per parameter and step: 2."""

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, lr_decay: float = 0.0, weight_decay: float = 0.0,
                 initial_accumulator_value: float = 0.0, eps: float = 1e-10, *, maximize: bool = False) -> None:
        check_range("learning rate", lr)
        check_range("lr_decay value", lr_decay)
        check_range("weight_decay value", weight_decay)
        check_range("initial_accumulator_value", initial_accumulator_value)
        check_range("epsilon value", eps)
        super().__init__(params, {"lr": lr, "lr_decay": lr_decay, "weight_decay": weight_decay,
                                  "initial_accumulator_value": initial_accumulator_value, "eps": eps,
                                  "maximize": maximize})
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p] = {"step": 0.0, "sum": full_like(p, group["initial_accumulator_value"])}

    def _update(self, p: Tensor, grad: Tensor, group: dict[str, Any],
                state: dict[str, Any]) -> tuple[Tensor, dict[str, Any]]:
        step = state["step"] + 1
        if group["weight_decay"] != 0:
            grad = grad + group["weight_decay"] * p
        clr = group["lr"] / (1 + (step - 1) * group["lr_decay"])
        total = state["sum"] + grad * grad
        return p - clr * (grad / (total.sqrt() + group["eps"])), {"step": step, "sum": total}
