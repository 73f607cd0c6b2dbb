"""RMSprop, centered or not, with momentum."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from zyx.frontend.creation import zeros_like
from zyx.frontend.tensor import Tensor
from zyx.optim.optimizer import Optimizer, Update, check_range, lerp_scalars


class RMSprop(Optimizer):
    """PyTorch's ``torch.optim.RMSprop``: ``g += weight_decay * p``, ``s = alpha * s + (1 - alpha) * g * g``;
    centered: ``a = lerp(a, g, 1 - alpha)``, ``d = sqrt(s - a * a) + eps``, else ``d = sqrt(s) + eps``; with
    momentum ``b = momentum * b + g / d``, ``p -= lr * b``, else ``p -= lr * g / d``. State: ``step``,
    ``square_avg`` (``momentum_buffer``, ``grad_avg``). One kernel per parameter group and step
    updates the parameters and their state."""

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0.0, momentum: float = 0.0, centered: bool = False, *,
                 maximize: bool = False) -> None:
        check_range("learning rate", lr)
        check_range("epsilon value", eps)
        check_range("momentum value", momentum)
        check_range("weight_decay value", weight_decay)
        check_range("alpha value", alpha)
        super().__init__(params, {"lr": lr, "alpha": alpha, "eps": eps, "weight_decay": weight_decay,
                                  "momentum": momentum, "centered": centered, "maximize": maximize})

    def _kernel(self, p: Tensor, group: dict[str, Any], state: dict[str, Any]) -> Update:
        alpha, momentum = group["alpha"], group["momentum"]
        if not state:
            state.update(step=0.0, square_avg=zeros_like(p))
        state["step"] += 1
        flags: set[str] = set()
        scalars: dict[str, float] = {"lr": group["lr"], "alpha": alpha, "one_minus_alpha": 1 - alpha,
                                     "eps": group["eps"]}
        names: tuple[str, ...] = ("square_avg",)
        if group["weight_decay"] != 0:
            flags.add("weight_decay")
            scalars["weight_decay"] = group["weight_decay"]
        if group["centered"]:
            state.setdefault("grad_avg", zeros_like(p))
            names += ("grad_avg",)
            lerp_flags, lerp_numbers = lerp_scalars(1 - alpha)
            flags |= lerp_flags | {"centered"}
            scalars.update(lerp_numbers)
        if momentum > 0:
            state.setdefault("momentum_buffer", zeros_like(p))
            names += ("momentum_buffer",)
            flags.add("momentum")
            scalars["momentum"] = momentum
        return Update("rmsprop", flags, names, scalars)

