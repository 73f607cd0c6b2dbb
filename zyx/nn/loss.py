"""Losses as modules: ``CrossEntropyLoss`` (``zyx.nn.functional.cross_entropy``), ``MSELoss`` and
``L1Loss`` (composed from elementwise ops and a mean or sum), each with ``reduction``."""
from __future__ import annotations

from typing import Any

from zyx.nn import functional as F
from zyx.nn.module import Module

_REDUCTIONS = ("mean", "sum", "none")


def _reduce(loss: Any, reduction: str) -> Any:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


class _Loss(Module):
    def __init__(self, reduction: str = "mean") -> None:
        super().__init__()
        if reduction not in _REDUCTIONS:
            raise ValueError(f"{type(self).__name__}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
        self.reduction = reduction


class MSELoss(_Loss):
    """``(input - target) ** 2``, reduced."""

    def forward(self, input: Any, target: Any) -> Any:  # noqa: A002 - PyTorch's name
        d = input - target
        return _reduce(d * d, self.reduction)


class L1Loss(_Loss):
    """``|input - target|``, reduced."""

    def forward(self, input: Any, target: Any) -> Any:  # noqa: A002 - PyTorch's name
        return _reduce((input - target).abs(), self.reduction)


class CrossEntropyLoss(_Loss):
    """Cross entropy of (N, C) or (N, C, d1, ...) logits with class indices (N, d1, ...) or class
    probabilities (the input's shape).

    ``weight``, ``ignore_index`` and ``label_smoothing`` as ``functional.cross_entropy`` takes them.
    """

    def __init__(self, weight: Any = None, ignore_index: int = -100, reduction: str = "mean",
                 label_smoothing: float = 0.0) -> None:
        super().__init__(reduction)
        self.register_buffer("weight", weight)  # a buffer, as PyTorch keeps it
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input: Any, target: Any) -> Any:  # noqa: A002 - PyTorch's name
        return F.cross_entropy(input, target, weight=self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction, label_smoothing=self.label_smoothing)
