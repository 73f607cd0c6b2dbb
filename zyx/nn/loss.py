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

    ``weight``, ``ignore_index`` and ``label_smoothing`` are passed to ``functional.cross_entropy``
    only when not at their defaults (it takes none of them yet, so they raise ``TypeError`` there).
    """

    def __init__(self, weight: Any = None, ignore_index: int = -100, reduction: str = "mean",
                 label_smoothing: float = 0.0) -> None:
        super().__init__(reduction)
        self.register_buffer("weight", weight)  # a buffer, as PyTorch keeps it
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input: Any, target: Any) -> Any:  # noqa: A002 - PyTorch's name
        extra: dict[str, Any] = {}
        if self.weight is not None:
            extra["weight"] = self.weight
        if self.ignore_index != -100:
            extra["ignore_index"] = self.ignore_index
        if self.label_smoothing != 0.0:
            extra["label_smoothing"] = self.label_smoothing
        if input.ndim > 2:  # (N, C, d1, ...): classes on dim 1, as PyTorch; the functional takes them last
            last = (0, *range(2, input.ndim), 1)
            logits = input.permute(*last)
            if not target.dtype.is_int:
                target = target.permute(*last)
            return F.cross_entropy(logits, target, reduction=self.reduction, **extra)
        return F.cross_entropy(input, target, reduction=self.reduction, **extra)
