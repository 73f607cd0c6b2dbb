"""RMSprop, centered or not, with momentum."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from zyx.frontend.creation import zeros_like
from zyx.frontend.tensor import Tensor
from zyx.optim.optimizer import Optimizer, check_range, lerp


class RMSprop(Optimizer):
    """PyTorch's ``torch.optim.RMSprop``: ``g += weight_decay * p``, ``s = alpha * s + (1 - alpha) * g * g``;
    centered: ``a = lerp(a, g, 1 - alpha)``, ``d = sqrt(s - a * a) + eps``, else ``d = sqrt(s) + eps``; with
    momentum ``b = momentum * b + g / d``, ``p -= lr * b``, else ``p -= lr * g / d``. State: ``step``,
    ``square_avg`` (``momentum_buffer``, ``grad_avg``). Kernels per parameter and step: one per state
    tensor plus one for the parameter (2 to 4)."""

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

    def _update(self, p: Tensor, grad: Tensor, group: dict[str, Any],
                state: dict[str, Any]) -> tuple[Tensor, dict[str, Any]]:
        lr, alpha, eps, wd, momentum = (group[k] for k in ("lr", "alpha", "eps", "weight_decay", "momentum"))
        if not state:
            state.update(step=0.0, square_avg=zeros_like(p))
            if momentum > 0:
                state["momentum_buffer"] = zeros_like(p)
            if group["centered"]:
                state["grad_avg"] = zeros_like(p)
        if wd != 0:
            grad = grad + wd * p
        square_avg = state["square_avg"] * alpha + (1 - alpha) * grad * grad
        changed: dict[str, Any] = {"step": state["step"] + 1, "square_avg": square_avg}
        if group["centered"]:
            grad_avg = changed["grad_avg"] = lerp(state["grad_avg"], grad, 1 - alpha)
            avg = (square_avg - grad_avg * grad_avg).sqrt() + eps
        else:
            avg = square_avg.sqrt() + eps
        if momentum > 0:
            buf = changed["momentum_buffer"] = state["momentum_buffer"] * momentum + grad / avg
            return p - lr * buf, changed
        return p - lr * (grad / avg), changed
