"""Losses as modules, PyTorch's names and arguments, each a thin holder of its options around
``zyx.nn.functional``: ``MSELoss, L1Loss, SmoothL1Loss, HuberLoss, NLLLoss, CrossEntropyLoss, BCELoss,
BCEWithLogitsLoss, KLDivLoss, MarginRankingLoss, HingeEmbeddingLoss`` (``weight`` and ``pos_weight`` are
buffers, as PyTorch keeps them)."""
from __future__ import annotations

from typing import Any

from zyx.errors import ShapeError
from zyx.nn import functional as F
from zyx.nn.module import Module

_REDUCTIONS = ("mean", "sum", "none")


class _Loss(Module):
    _reductions = _REDUCTIONS

    def __init__(self, reduction: str = "mean") -> None:
        super().__init__()
        if reduction not in self._reductions:
            raise ShapeError(f"{type(self).__name__}: reduction must be one of "
                             f"{', '.join(repr(r) for r in self._reductions)}, got {reduction!r}")
        self.reduction = reduction


class MSELoss(_Loss):
    """``(input - target) ** 2``, reduced."""

    def forward(self, input: Any, target: Any) -> Any:  # noqa: A002 - PyTorch's name
        return F.mse_loss(input, target, reduction=self.reduction)


class L1Loss(_Loss):
    """``|input - target|``, reduced."""

    def forward(self, input: Any, target: Any) -> Any:  # noqa: A002 - PyTorch's name
        return F.l1_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """``functional.smooth_l1_loss`` with ``beta``."""

    def __init__(self, reduction: str = "mean", beta: float = 1.0) -> None:
        super().__init__(reduction)
        self.beta = beta

    def forward(self, input: Any, target: Any) -> Any:  # noqa: A002 - PyTorch's name
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """``functional.huber_loss`` with ``delta``."""

    def __init__(self, reduction: str = "mean", delta: float = 1.0) -> None:
        super().__init__(reduction)
        self.delta = delta

    def forward(self, input: Any, target: Any) -> Any:  # noqa: A002 - PyTorch's name
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class NLLLoss(_Loss):
    """``functional.nll_loss`` of log-probabilities with class indices (``weight``, ``ignore_index``)."""

    def __init__(self, weight: Any = None, ignore_index: int = -100, reduction: str = "mean") -> None:
        super().__init__(reduction)
        self.register_buffer("weight", weight)
        self.ignore_index = ignore_index

    def forward(self, input: Any, target: Any) -> Any:  # noqa: A002 - PyTorch's name
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index, reduction=self.reduction)


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


class BCELoss(_Loss):
    """``functional.binary_cross_entropy`` of probabilities, with an optional element ``weight``."""

    def __init__(self, weight: Any = None, reduction: str = "mean") -> None:
        super().__init__(reduction)
        self.register_buffer("weight", weight)

    def forward(self, input: Any, target: Any) -> Any:  # noqa: A002 - PyTorch's name
        return F.binary_cross_entropy(input, target, weight=self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """``functional.binary_cross_entropy_with_logits`` with ``weight`` and ``pos_weight``."""

    def __init__(self, weight: Any = None, reduction: str = "mean", pos_weight: Any = None) -> None:
        super().__init__(reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input: Any, target: Any) -> Any:  # noqa: A002 - PyTorch's name
        return F.binary_cross_entropy_with_logits(input, target, weight=self.weight, reduction=self.reduction,
                                                  pos_weight=self.pos_weight)


class KLDivLoss(_Loss):
    """``functional.kl_div`` (``reduction`` may also be ``"batchmean"``; ``log_target``)."""

    _reductions = _REDUCTIONS + ("batchmean",)

    def __init__(self, reduction: str = "mean", log_target: bool = False) -> None:
        super().__init__(reduction)
        self.log_target = log_target

    def forward(self, input: Any, target: Any) -> Any:  # noqa: A002 - PyTorch's name
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class MarginRankingLoss(_Loss):
    """``functional.margin_ranking_loss`` with ``margin``."""

    def __init__(self, margin: float = 0.0, reduction: str = "mean") -> None:
        super().__init__(reduction)
        self.margin = margin

    def forward(self, input1: Any, input2: Any, target: Any) -> Any:
        return F.margin_ranking_loss(input1, input2, target, margin=self.margin, reduction=self.reduction)


class HingeEmbeddingLoss(_Loss):
    """``functional.hinge_embedding_loss`` with ``margin``."""

    def __init__(self, margin: float = 1.0, reduction: str = "mean") -> None:
        super().__init__(reduction)
        self.margin = margin

    def forward(self, input: Any, target: Any) -> Any:  # noqa: A002 - PyTorch's name
        return F.hinge_embedding_loss(input, target, margin=self.margin, reduction=self.reduction)
