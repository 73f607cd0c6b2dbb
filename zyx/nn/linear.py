"""Affine layers: ``Identity``, ``Linear``, ``Bilinear`` and the lookup table ``Embedding``, with
PyTorch's parameter names, shapes and default initialization."""
from __future__ import annotations

import math
from typing import Any

from zyx.frontend.autograd.engine import no_grad
from zyx.frontend.creation import zeros
from zyx.frontend.reduce import matmul
from zyx.nn import functional as F
from zyx.nn import init
from zyx.nn.module import Module, Parameter


class Identity(Module):
    """Returns its input (any constructor arguments are ignored, as in PyTorch)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def forward(self, x: Any) -> Any:
        return x


def _bias_bound(fan_in: int) -> float:
    return 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0


class Linear(Module):
    """``y = x @ weight.T + bias``; ``weight`` (out_features, in_features) and ``bias``
    (out_features) start at U(-1/sqrt(in_features), 1/sqrt(in_features))."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self._weight_and_bias((out_features, in_features), out_features, bias, dtype, device)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        # kaiming_uniform_ with a=sqrt(5) is U(-1/sqrt(fan_in), 1/sqrt(fan_in)), PyTorch's default
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            bound = _bias_bound(self.in_features)
            init.uniform_(self.bias, -bound, bound)

    def forward(self, x: Any) -> Any:
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Bilinear(Module):
    """``y[..., o] = sum_ij x1[..., i] weight[o, i, j] x2[..., j] + bias[o]``; ``weight``
    (out, in1, in2) and ``bias`` (out) start at U(-1/sqrt(in1), 1/sqrt(in1))."""

    def __init__(self, in1_features: int, in2_features: int, out_features: int, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.in1_features = in1_features
        self.in2_features = in2_features
        self.out_features = out_features
        self._weight_and_bias((out_features, in1_features, in2_features), out_features, bias, dtype, device)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = _bias_bound(self.in1_features)
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, x1: Any, x2: Any) -> Any:
        o, i, j = self.weight.shape
        lead = x1.shape[:-1]
        a = x1.reshape(-1, i)
        b = x2.reshape(-1, j)
        # (n, i) @ (i, o*j) -> (n, o, j), then contract j against x2: two kernels, no (n, o, i, j) temporary
        t = matmul(a, self.weight.permute(1, 0, 2).reshape(i, o * j)).reshape(-1, o, j)
        y = (t * b.unsqueeze(1)).sum(-1)
        if self.bias is not None:
            y = y + self.bias
        return y.reshape(*lead, o)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class Embedding(Module):
    """Rows of ``weight`` (num_embeddings, embedding_dim), initialized N(0, 1); the row at
    ``padding_idx`` starts at zero and gets no gradient."""

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None,
                 max_norm: float | None = None, norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                 sparse: bool = False, _weight: Any = None, _freeze: bool = False, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        if max_norm is not None or scale_grad_by_freq or sparse:
            raise NotImplementedError("Embedding: max_norm, scale_grad_by_freq and sparse are not supported")
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise IndexError(f"Embedding: padding_idx {padding_idx} must be within num_embeddings "
                                 f"({num_embeddings})")
            padding_idx %= num_embeddings
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.padding_idx = padding_idx
        if _weight is None:
            self.weight = Parameter(zeros(num_embeddings, embedding_dim, dtype=dtype, device=device),
                                    requires_grad=not _freeze)
            self.reset_parameters()
        else:
            if tuple(_weight.shape) != (num_embeddings, embedding_dim):
                raise ValueError(f"Embedding: _weight shape {tuple(_weight.shape)} does not match "
                                 f"({num_embeddings}, {embedding_dim})")
            self.weight = Parameter(_weight, requires_grad=not _freeze)

    def reset_parameters(self) -> None:
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx] = 0

    @classmethod
    def from_pretrained(cls, embeddings: Any, freeze: bool = True, padding_idx: int | None = None) -> Embedding:
        """An ``Embedding`` whose weight is ``embeddings`` (2-D), frozen unless ``freeze=False``."""
        if embeddings.ndim != 2:
            raise ValueError(f"Embeddings parameter is expected to be 2-dimensional, got shape {embeddings.shape}")
        rows, cols = embeddings.shape
        return cls(rows, cols, padding_idx=padding_idx, _weight=embeddings, _freeze=freeze)

    def forward(self, indices: Any) -> Any:
        return F.embedding(indices, self.weight, self.padding_idx)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        return s if self.padding_idx is None else s + f", padding_idx={self.padding_idx}"
