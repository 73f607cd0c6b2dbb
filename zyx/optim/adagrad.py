"""Adagrad with learning-rate decay."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from zyx.frontend.creation import full_like
from zyx.frontend.tensor import Tensor
from zyx.optim.optimizer import Optimizer, Update, check_range


class Adagrad(Optimizer):
    """PyTorch's ``torch.optim.Adagrad``: ``g += weight_decay * p``, ``lr_t = lr / (1 + (t - 1) * lr_decay)``,
    ``s += g * g``, ``p -= lr_t * g / (sqrt(s) + eps)``. State (created with the optimizer, as PyTorch
    does): ``step``, ``sum`` (starting at ``initial_accumulator_value``). One kernel per parameter group and step."""

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

    def add_param_group(self, group: dict[str, Any]) -> None:
        """Add a group (its options over ``defaults``) and create its parameters' state, as PyTorch does."""
        super().add_param_group(group)
        added = self.param_groups[-1]
        for p in added["params"]:
            self.state[p] = {"step": 0.0, "sum": full_like(p, added["initial_accumulator_value"])}

    def _kernel(self, p: Tensor, group: dict[str, Any], state: dict[str, Any]) -> Update:
        state["step"] += 1
        flags: set[str] = set()
        scalars: dict[str, float] = {"lr": group["lr"] / (1 + (state["step"] - 1) * group["lr_decay"]),
                                     "eps": group["eps"]}
        if group["weight_decay"] != 0:
            flags.add("weight_decay")
            scalars["weight_decay"] = group["weight_decay"]
        return Update("adagrad", flags, ("sum",), scalars)

