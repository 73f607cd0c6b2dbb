"""Normalization layers with PyTorch's parameter names and defaults: ``LayerNorm`` and ``RMSNorm``
(weights start at one, biases at zero). BatchNorm and GroupNorm wait for their functional ops."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from zyx import dtype as dtypes
from zyx.errors import ShapeError
from zyx.frontend.creation import ones, zeros
from zyx.frontend.softmax import float_work
from zyx.nn import functional as F
from zyx.nn.module import Module, Parameter

_FINFO_EPS = {dtypes.float64: 2.220446049250313e-16, dtypes.float32: 1.1920928955078125e-07,
              dtypes.float16: 0.0009765625, dtypes.bfloat16: 0.0078125}


def _shape(normalized_shape: Sequence[int] | int) -> tuple[int, ...]:
    return (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)


class LayerNorm(Module):
    """Normalize over the trailing ``normalized_shape`` dims, then ``* weight + bias``."""

    def __init__(self, normalized_shape: Sequence[int] | int, eps: float = 1e-5, elementwise_affine: bool = True,
                 bias: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.normalized_shape = _shape(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(ones(*self.normalized_shape, dtype=dtype, device=device))
            if bias:
                self.bias = Parameter(zeros(*self.normalized_shape, dtype=dtype, device=device))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, x: Any) -> Any:
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
                f"bias={self.bias is not None}")


class RMSNorm(Module):
    """``x / sqrt(mean(x**2 over the trailing dims) + eps) * weight``; ``eps=None`` is the input
    dtype's machine epsilon, as in PyTorch."""

    def __init__(self, normalized_shape: Sequence[int] | int, eps: float | None = None,
                 elementwise_affine: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.normalized_shape = _shape(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(ones(*self.normalized_shape, dtype=dtype, device=device))
        else:
            self.register_parameter("weight", None)

    def forward(self, x: Any) -> Any:
        k = len(self.normalized_shape)
        if k > x.ndim or tuple(x.shape[x.ndim - k:]) != self.normalized_shape:
            raise ShapeError(f"RMSNorm: normalized_shape {self.normalized_shape} does not match the trailing dims "
                             f"of input shape {tuple(x.shape)}")
        eps = _FINFO_EPS.get(x.dtype, _FINFO_EPS[dtypes.float32]) if self.eps is None else self.eps
        w, out_dt = float_work(x)
        dims = tuple(range(x.ndim - k, x.ndim))
        out = w * ((w * w).mean(dims, keepdim=True) + eps).rsqrt()
        if self.weight is not None:
            out = out * self.weight
        return out.cast(out_dt)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"
