"""Adam and AdamW (decoupled weight decay), both with the AMSGrad variant."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from zyx.frontend.creation import zeros_like
from zyx.frontend.elementwise import maximum
from zyx.frontend.tensor import Tensor
from zyx.optim.optimizer import Optimizer, check_range, lerp


class Adam(Optimizer):
    """PyTorch's ``torch.optim.Adam``: ``g += weight_decay * p`` (AdamW: ``p *= 1 - lr * weight_decay``
    instead), ``m = lerp(m, g, 1 - beta1)``, ``v = beta2 * v + (1 - beta2) * g * g`` (AMSGrad: ``vmax =
    max(vmax, v)`` is used for ``v``), ``p -= lr / (1 - beta1**t) * m / (sqrt(v) / sqrt(1 - beta2**t) + eps)``.
    State: ``step``, ``exp_avg``, ``exp_avg_sq`` (``max_exp_avg_sq``). Kernels per parameter and step: 3
    (m, v, then the parameter reading both), 4 with AMSGrad."""

    decoupled = False

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0, amsgrad: bool = False, *,
                 maximize: bool = False) -> None:
        check_range("learning rate", lr)
        check_range("epsilon value", eps)
        check_range("beta parameter at index 0", betas[0], 0.0, 1.0)
        check_range("beta parameter at index 1", betas[1], 0.0, 1.0)
        check_range("weight_decay value", weight_decay)
        super().__init__(params, {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay,
                                  "amsgrad": amsgrad, "maximize": maximize})

    def _update(self, p: Tensor, grad: Tensor, group: dict[str, Any],
                state: dict[str, Any]) -> tuple[Tensor, dict[str, Any]]:
        lr, (beta1, beta2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
        if not state:
            state.update(step=0.0, exp_avg=zeros_like(p), exp_avg_sq=zeros_like(p))
            if group["amsgrad"]:
                state["max_exp_avg_sq"] = zeros_like(p)
        step = state["step"] + 1
        value = p
        if wd != 0:
            if self.decoupled:
                value = p * (1 - lr * wd)
            else:
                grad = grad + wd * p
        exp_avg = lerp(state["exp_avg"], grad, 1 - beta1)
        exp_avg_sq = state["exp_avg_sq"] * beta2 + (1 - beta2) * grad * grad
        changed: dict[str, Any] = {"step": step, "exp_avg": exp_avg, "exp_avg_sq": exp_avg_sq}
        second = exp_avg_sq
        if group["amsgrad"]:
            second = changed["max_exp_avg_sq"] = maximum(state.get("max_exp_avg_sq", exp_avg_sq), exp_avg_sq)
        step_size = lr / (1 - beta1**step)
        denom = second.sqrt() / (1 - beta2**step) ** 0.5 + eps
        return value - step_size * (exp_avg / denom), changed


class AdamW(Adam):
    """PyTorch's ``torch.optim.AdamW``: Adam with decoupled weight decay (default 0.01)."""

    decoupled = True

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 1e-2, amsgrad: bool = False, *,
                 maximize: bool = False) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize)
