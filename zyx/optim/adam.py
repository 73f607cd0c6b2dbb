"""Adam and AdamW (decoupled weight decay), both with the AMSGrad variant."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from zyx.frontend.creation import zeros_like
from zyx.frontend.tensor import Tensor
from zyx.optim.optimizer import Optimizer, Update, check_range, lerp_scalars


class Adam(Optimizer):
    """PyTorch's ``torch.optim.Adam``: ``g += weight_decay * p`` (AdamW: ``p *= 1 - lr * weight_decay``
    instead), ``m = lerp(m, g, 1 - beta1)``, ``v = beta2 * v + (1 - beta2) * g * g`` (AMSGrad: ``vmax =
    max(vmax, v)`` is used for ``v``), ``p -= lr / (1 - beta1**t) * m / (sqrt(v) / sqrt(1 - beta2**t) + eps)``.
    State: ``step``, ``exp_avg``, ``exp_avg_sq`` (``max_exp_avg_sq``). One kernel per parameter group and step
    updates the parameters and their state."""

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

    def _kernel(self, p: Tensor, group: dict[str, Any], state: dict[str, Any]) -> Update:
        lr, (beta1, beta2), wd = group["lr"], group["betas"], group["weight_decay"]
        if not state:
            state.update(step=0.0, exp_avg=zeros_like(p), exp_avg_sq=zeros_like(p))
        names: tuple[str, ...] = ("exp_avg", "exp_avg_sq")
        if group["amsgrad"]:
            state.setdefault("max_exp_avg_sq", zeros_like(p))
            names += ("max_exp_avg_sq",)
        state["step"] += 1
        step = state["step"]
        flags, scalars = lerp_scalars(1 - beta1)
        if group["amsgrad"]:
            flags.add("amsgrad")
        if wd != 0 and self.decoupled:
            flags |= {"weight_decay", "decoupled"}
            scalars["decay"] = 1 - lr * wd
        elif wd != 0:
            flags.add("weight_decay")
            scalars["weight_decay"] = wd
        scalars.update(beta2=beta2, one_minus_beta2=1 - beta2, eps=group["eps"],
                       bias_correction2_sqrt=(1 - beta2**step) ** 0.5, step_size=lr / (1 - beta1**step))
        return Update("adam", flags, names, scalars)



class AdamW(Adam):
    """PyTorch's ``torch.optim.AdamW``: Adam with decoupled weight decay (default 0.01)."""

    decoupled = True

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 1e-2, amsgrad: bool = False, *,
                 maximize: bool = False) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize)
