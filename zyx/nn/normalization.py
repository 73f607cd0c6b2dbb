"""Normalization layers with PyTorch's parameter names, buffers and defaults: ``LayerNorm``, ``RMSNorm``,
``BatchNorm1d/2d/3d``, ``InstanceNorm1d/2d/3d``, ``GroupNorm`` (weights start at one, biases at zero) and
``LocalResponseNorm``."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from zyx import dtype as dtypes
from zyx.errors import ShapeError
from zyx.frontend.autograd.engine import no_grad
from zyx.frontend.creation import ones, tensor, zeros
from zyx.nn import functional as F
from zyx.nn.functional_norm import rms_norm_as
from zyx.nn.module import Module, Parameter


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
    """``x / sqrt(mean(x**2 over the trailing dims) + eps) * weight`` (``F.rms_norm``); ``eps=None`` is the
    machine epsilon of the dtype it computes in, as in PyTorch."""

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
        return rms_norm_as(x, self.normalized_shape, self.weight, self.eps, "RMSNorm")

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class _BatchNorm(Module):
    """Batch statistics in training (updating ``running_mean``/``running_var`` with ``momentum``, or their
    cumulative average when ``momentum`` is None), the running ones in eval; PyTorch's buffers, flags and
    ``num_batches_tracked``."""

    _dims: tuple[int, ...] = ()

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device: Any = None, dtype: Any = None, *,
                 bias: bool = True) -> None:
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = Parameter(ones(num_features, dtype=dtype, device=device))
            if bias:
                self.bias = Parameter(zeros(num_features, dtype=dtype, device=device))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", zeros(num_features, dtype=dtype, device=device))
            self.register_buffer("running_var", ones(num_features, dtype=dtype, device=device))
            self.register_buffer("num_batches_tracked", tensor(0, dtype=dtypes.int64, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            with no_grad():
                self.running_mean[...] = 0
                self.running_var[...] = 1
                self.num_batches_tracked[...] = 0

    def forward(self, x: Any) -> Any:
        if x.ndim not in self._dims:
            want = " or ".join(f"{d}D" for d in self._dims)
            raise ShapeError(f"{type(self).__name__}: expected {want} input (got {x.ndim}D input, shape "
                             f"{tuple(x.shape)})")
        factor = 0.0 if self.momentum is None else self.momentum
        counting = self.training and self.track_running_stats and self.num_batches_tracked is not None
        if counting and self.momentum is None:  # cumulative average: reads the count back (PyTorch: on the device)
            factor = 1.0 / (float(self.num_batches_tracked.item()) + 1.0)
        # eval mode without running statistics normalizes with the batch's, as PyTorch
        use_batch = self.training or (self.running_mean is None and self.running_var is None)
        keep = not self.training or self.track_running_stats
        out = F.batch_norm(x, self.running_mean if keep else None, self.running_var if keep else None,
                           self.weight, self.bias, use_batch, factor, self.eps)
        if counting:  # after the statistics' update, which raises first for a failed gather upstream
            with no_grad():
                self.num_batches_tracked._assign(self.num_batches_tracked + 1)
        if self.training and self.track_running_stats:
            # nothing else reads the updated statistics until eval: realized now (asynchronously) so the pending
            # graph behind them does not grow by one update per step
            for t in (self.running_mean, self.running_var, self.num_batches_tracked):
                if t is not None:
                    t.realize()
        return out

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    """Batch normalization of (N, C) or (N, C, L) per channel."""

    _dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalization of (N, C, H, W) per channel."""

    _dims = (4,)


class BatchNorm3d(_BatchNorm):
    """Batch normalization of (N, C, D, H, W) per channel."""

    _dims = (5,)


class _InstanceNorm(_BatchNorm):
    """Per-sample, per-channel statistics over the spatial dims (PyTorch's defaults: no affine, no running
    statistics; with ``track_running_stats`` eval mode normalizes with the running ones). ``_dims`` is the
    batched rank; one less is an unbatched input."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = False,
                 track_running_stats: bool = False, device: Any = None, dtype: Any = None, *,
                 bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)

    def forward(self, x: Any) -> Any:
        (rank,) = self._dims
        cls = type(self).__name__
        if x.ndim not in (rank - 1, rank):
            raise ShapeError(f"{cls}: expected {rank - 1}D (unbatched) or {rank}D (batched) input, got shape "
                             f"{tuple(x.shape)}")
        if self.affine and x.shape[x.ndim - rank + 1] != self.num_features:
            raise ShapeError(f"{cls}: expected {self.num_features} channels (num_features), got shape "
                             f"{tuple(x.shape)}")
        unbatched = x.ndim == rank - 1
        out = F.instance_norm(x.unsqueeze(0) if unbatched else x, self.running_mean, self.running_var, self.weight,
                              self.bias, self.training or not self.track_running_stats,
                              0.0 if self.momentum is None else self.momentum, self.eps)
        return out.squeeze(0) if unbatched else out


class InstanceNorm1d(_InstanceNorm):
    """Instance normalization of (N, C, L) or (C, L)."""

    _dims = (3,)


class InstanceNorm2d(_InstanceNorm):
    """Instance normalization of (N, C, H, W) or (C, H, W)."""

    _dims = (4,)


class InstanceNorm3d(_InstanceNorm):
    """Instance normalization of (N, C, D, H, W) or (C, D, H, W)."""

    _dims = (5,)


class LocalResponseNorm(Module):
    """``functional.local_response_norm`` over neighbouring channels (no parameters)."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> None:
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, x: Any) -> Any:
        return F.local_response_norm(x, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class GroupNorm(Module):
    """Normalize (N, C, *) over groups of ``num_channels / num_groups`` channels (and the spatial dims), then
    ``* weight + bias`` per channel."""

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True,
                 device: Any = None, dtype: Any = None, *, bias: bool = True) -> None:
        super().__init__()
        if num_groups <= 0 or num_channels % num_groups:
            raise ValueError(f"GroupNorm: num_channels={num_channels} must be divisible by num_groups={num_groups}")
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        if affine:
            self.weight = Parameter(ones(num_channels, dtype=dtype, device=device))
            if bias:
                self.bias = Parameter(zeros(num_channels, dtype=dtype, device=device))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, x: Any) -> Any:
        if x.ndim < 2 or x.shape[1] != self.num_channels:
            raise ShapeError(f"GroupNorm: expected an input (N, {self.num_channels}, *), got shape {tuple(x.shape)}")
        return F.group_norm(x, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")
