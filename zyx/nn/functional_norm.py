"""Normalizations: batch, instance, group, RMS and local response norm (API.md "Convolution, pooling and
resampling" lists them).

The norms are reduces and elementwise work; ``batch_norm``/``instance_norm`` update the running
statistics in place (lazily: the update fuses with whatever reads them next).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from zyx.errors import ShapeError
from zyx.frontend.autograd.engine import is_grad_enabled, needs_grad, no_grad, record
from zyx.frontend.base import raise_unread_errors
from zyx.frontend.layout import is_channels_last
from zyx.frontend.softmax import float_work


def _channel_shape(x: Any) -> tuple[int, ...]:
    return (1, x.shape[1]) + (1,) * (x.ndim - 2)


def _check_per_channel(fn: str, x: Any, **stats: Any) -> None:
    """Each given tensor in ``stats`` (running statistics, weight, bias) holds one value per channel of ``x``
    (N, C, *), else a ShapeError naming it, before anything runs or moves."""
    c = x.shape[1]
    for name, t in stats.items():
        if t is not None and t.numel() != c:
            raise ShapeError(f"{fn}: expected {name} of {c} elements (one per channel of input shape "
                             f"{tuple(x.shape)}), got shape {tuple(t.shape)}")


def _affine(out: Any, weight: Any, bias: Any, shape: tuple[int, ...]) -> Any:
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out


def _update(stat: Any, new: Any, momentum: float, scale: float = 1.0) -> None:
    """``stat = (1 - momentum) * stat + momentum * scale * new`` in place (no gradient), run at once: nothing
    may read the statistics until eval, and a pending update would chain onto the previous one each step.
    A failed check upstream of ``new`` (an out-of-range gather) raises here and leaves ``stat`` as it was.
    (``scale`` applies in the update's kernel: ``new`` scaled first would be a kernel of its own.)"""
    raise_unread_errors(new)
    with no_grad():
        scaled = new.detach().cast(stat.dtype) * (momentum * scale)
        stat._assign((stat * (1.0 - momentum) + scaled).cast(stat.dtype))
        stat.realize()


def _from_channels_last(y: Any) -> Any:
    """(N, *spatial, C) as the (N, C, *spatial) view. Its gradient is stored channels-last: BatchNorm's
    backward reads it three times (two channel sums and the input's gradient), so as it arrives (NCHW,
    e.g. from a ReLU) every read would gather across work items; stored once channels-last, all stream."""
    order = (0, y.ndim - 1, *range(1, y.ndim - 1))
    if not needs_grad(y):
        return y.permute(*order)
    inverse = (0, *range(2, y.ndim), 1)
    with no_grad():
        out = y.permute(*order)
    return record("permute", out, [y], lambda g: (_dense(g.permute(*inverse)),))


def _dense(t: Any) -> Any:
    """``t`` stored dense in its own dim order: a copy kernel that computes pending work in that order (where
    ``contiguous`` would store the pending work in its order first, then permute it)."""
    return t if t.is_contiguous() else t.clone()


def _batch_stats(w: Any, dims: tuple[int, ...]) -> tuple[Any, Any]:
    """The mean and biased variance of ``w`` over ``dims`` (kept)."""
    mean = w.mean(dims, keepdim=True)
    d = w - mean
    return mean, (d * d).mean(dims, keepdim=True)


def _batch_norm_backward(g: Any, w: Any, weight: Any, bias: Any, mean: Any, rstd: Any, dims: tuple[int, ...],
                         shape: tuple[int, ...], eps: float) -> tuple[Any, Any, Any]:
    """The gradients of a training batch norm's input ``w``, ``weight`` and ``bias`` from ``g``: two channel
    sums (of ``g`` and ``g * xhat``) and one elementwise pass, where the composed rule reduces and
    accumulates over the full tensor several more times. Under ``create_graph`` the statistics are
    recomputed from ``w``, so higher derivatives see them depend on it."""
    if is_grad_enabled():
        mean, var = _batch_stats(w, dims)
        rstd = (var + eps).rsqrt()
    count = math.prod(w.shape[d] for d in dims)
    xhat = (w - mean) * rstd
    # stored once each: the input's gradient and the weight's or bias's read them
    sg = g.sum(dims, keepdim=True).realize()
    sgx = (g * xhat).sum(dims, keepdim=True).realize()
    # every per-channel operand read as it is stored (a computed one read broadcast would be stored first)
    gx = (g * float(count) - sg - xhat * sgx) * rstd
    gx = (gx * weight.reshape(shape) if weight is not None else gx) * (1.0 / count)
    return (gx, sgx.reshape(-1).cast(weight.dtype) if weight is not None else None,
            sg.reshape(-1).cast(bias.dtype) if bias is not None else None)


def batch_norm(input: Any, running_mean: Any, running_var: Any, weight: Any = None, bias: Any = None,  # noqa: A002 - PyTorch's name
               training: bool = False, momentum: float = 0.1, eps: float = 1e-5) -> Any:
    """Normalize each channel of (N, C, *) over the batch and spatial dims: with the batch's statistics
    (biased variance) when ``training`` (updating the running ones in place, unbiased variance, as
    PyTorch), else with the running ones."""
    if input.ndim < 2:
        raise ShapeError(f"batch_norm: expected an input of at least 2 dims (N, C, *), got shape {tuple(input.shape)}")
    _check_per_channel("batch_norm", input, running_mean=running_mean, running_var=running_var, weight=weight,
                       bias=bias)
    shape = _channel_shape(input)
    w, out_dt = float_work(input)
    if training:
        count = input.shape[0] * math.prod(input.shape[2:])  # values per channel (also when C is 0)
        if count <= 1:
            raise ShapeError(f"batch_norm: expected more than 1 value per channel when training, got input "
                             f"shape {tuple(input.shape)}")
        # an input lying channels-last (a convolution's output) is normalized as (N, *spatial, C): the
        # statistics and the backward's reduces then read consecutive channels instead of gathering
        cl = is_channels_last(input)
        if cl:
            w = w.permute(0, *range(2, w.ndim), 1)
            shape = (1,) * (w.ndim - 1) + (w.shape[-1],)
        dims = tuple(range(w.ndim - 1)) if cl else (0,) + tuple(range(2, w.ndim))
        grad = needs_grad(w, weight, bias)
        with no_grad():  # the gradient is recorded below, in one pass
            # stored once: the running statistics, the output and the backward all read them
            mean, var = (t.realize() for t in _batch_stats(w, dims))
            rstd = (var + eps).rsqrt()
            out = _affine((w - mean) * rstd, weight, bias, shape)
        if running_mean is not None:
            _update(running_mean, mean.reshape(-1), momentum)
        if running_var is not None:
            _update(running_var, var.reshape(-1), momentum, count / (count - 1))
        if grad:
            out = record("batch_norm", out, [w, weight, bias],  # saved: an in-place write to the input raises
                         lambda g, x: _batch_norm_backward(g, x, weight, bias, mean, rstd, dims, shape, eps),
                         saved=(w,))
        return (_from_channels_last(out) if cl else out).cast(out_dt)
    else:
        if running_mean is None or running_var is None:
            raise ShapeError("batch_norm: running_mean and running_var are needed when not training")
        out = (w - running_mean.reshape(shape)) * (running_var.reshape(shape) + eps).rsqrt()
    return _affine(out, weight, bias, shape).cast(out_dt)


def instance_norm(input: Any, running_mean: Any = None, running_var: Any = None, weight: Any = None,  # noqa: A002 - PyTorch's name
                  bias: Any = None, use_input_stats: bool = True, momentum: float = 0.1, eps: float = 1e-5) -> Any:
    """Normalize each (sample, channel) of (N, C, *) over its spatial dims; the running statistics (when
    given) track the batch mean of the instance statistics."""
    if input.ndim < 3:
        raise ShapeError(f"instance_norm: expected an input of at least 3 dims (N, C, *), got shape "
                         f"{tuple(input.shape)}")
    _check_per_channel("instance_norm", input, running_mean=running_mean, running_var=running_var, weight=weight,
                       bias=bias)
    shape = _channel_shape(input)
    w, out_dt = float_work(input)
    if not use_input_stats:
        if running_mean is None or running_var is None:
            raise ShapeError("instance_norm: running_mean and running_var are needed when use_input_stats=False")
        out = (w - running_mean.reshape(shape)) * (running_var.reshape(shape) + eps).rsqrt()
        return _affine(out, weight, bias, shape).cast(out_dt)
    dims = tuple(range(2, input.ndim))
    count = math.prod(input.shape[2:])
    mean = w.mean(dims, keepdim=True)
    d = w - mean
    var = (d * d).mean(dims, keepdim=True)
    if running_mean is not None:
        _update(running_mean, mean.mean(0).reshape(-1), momentum)
    if running_var is not None:
        _update(running_var, var.mean(0).reshape(-1) * (count / max(count - 1, 1)), momentum)
    return _affine(d * (var + eps).rsqrt(), weight, bias, shape).cast(out_dt)


def group_norm(input: Any, num_groups: int, weight: Any = None, bias: Any = None, eps: float = 1e-5) -> Any:  # noqa: A002 - PyTorch's name
    """Normalize (N, C, *) over each group of ``C/num_groups`` channels and the spatial dims, then scale and
    shift per channel."""
    if input.ndim < 2 or num_groups <= 0 or input.shape[1] % num_groups:
        raise ShapeError(f"group_norm: expected an input (N, C, *) with C divisible by num_groups={num_groups}, "
                         f"got shape {tuple(input.shape)}")
    _check_per_channel("group_norm", input, weight=weight, bias=bias)
    n = input.shape[0]
    w, out_dt = float_work(input)
    g = w.reshape(n, num_groups, input.numel() // max(n * num_groups, 1))  # explicit: -1 fails for n == 0
    mean = g.mean(-1, keepdim=True)
    d = g - mean
    var = (d * d).mean(-1, keepdim=True)
    out = (d * (var + eps).rsqrt()).reshape(input.shape)
    return _affine(out, weight, bias, _channel_shape(input)).cast(out_dt)


def rms_norm(input: Any, normalized_shape: Any, weight: Any = None, eps: float | None = None) -> Any:  # noqa: A002 - PyTorch's name
    """``x / sqrt(mean(x**2 over the trailing normalized_shape dims) + eps) * weight``, 16-bit floats computed
    in float32 and rounded once; ``eps=None`` is the machine epsilon of the dtype it computes in (float32's
    for 16-bit inputs), as PyTorch."""
    return rms_norm_as(input, normalized_shape, weight, eps, "rms_norm")


def rms_norm_as(x: Any, normalized_shape: Any, weight: Any, eps: float | None, fn: str) -> Any:
    """``rms_norm`` with ``fn`` naming the caller in errors (``nn.RMSNorm``)."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    k = len(shape)
    if k > x.ndim or tuple(x.shape[x.ndim - k:]) != shape:
        raise ShapeError(f"{fn}: normalized_shape {shape} does not match the trailing dims of input shape "
                         f"{tuple(x.shape)}")
    w, out_dt = float_work(x)
    if eps is None:
        eps = float(np.finfo(w.dtype.np_dtype).eps)  # of float32 or float64: 16-bit floats compute in float32
    dims = tuple(range(x.ndim - k, x.ndim))
    out = w * ((w * w).mean(dims, keepdim=True) + eps).rsqrt()
    if weight is not None:
        out = out * weight
    return out.cast(out_dt)


def local_response_norm(input: Any, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> Any:  # noqa: A002 - PyTorch's name
    """``x / (k + alpha * mean of x**2 over a window of `size` neighbouring channels) ** beta``
    (the window zero-padded at the channel ends, as PyTorch)."""
    if input.ndim < 3:
        raise ShapeError(f"local_response_norm: expected an input of at least 3 dims, got shape {tuple(input.shape)}")
    if size < 1:
        raise ShapeError(f"local_response_norm: size must be a positive number of channels, got {size}")
    w, out_dt = float_work(input)
    sq = w * w
    pads = [0, 0] * (input.ndim - 2) + [size // 2, (size - 1) // 2]
    div = sq.pad(pads).unfold(1, size, 1).sum(-1) * (alpha / size) + k
    return (w / div ** beta).cast(out_dt)
