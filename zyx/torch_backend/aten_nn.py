"""Core ATen's network ops as zyx ops: convolution and its backward, pooling, batch/layer/group norm,
dropout, and the fused encoder layer PyTorch's fast path calls.

A backward op PyTorch's decompositions leave whole (``convolution_backward``, pooling backwards) is the
vector-Jacobian product of the zyx forward (``_vjp``): the forward is recorded again on the saved
inputs and zyx's autograd runs it backward, so the gradients are zyx's own rules for that op.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from zyx import autograd
from zyx import dtype as dtypes
from zyx.frontend import creation
from zyx.frontend.autograd import engine
from zyx.nn import functional as F
from zyx.torch_backend.aten_ops import ATEN, aten


def _vjp(forward: Callable[..., Any], inputs: Sequence[Any], grad: Any, wanted: Sequence[bool]) -> list[Any]:
    """The gradients of ``forward(*inputs)`` with respect to the ``wanted`` inputs, for the output gradient
    ``grad`` (None where not wanted)."""
    leaves = [x.detach().requires_grad_(True) if w else x.detach() for x, w in zip(inputs, wanted)]
    with engine.enable_grad():
        out = forward(*leaves)
    wrt = [leaf for leaf, w in zip(leaves, wanted) if w]
    grads = iter(autograd.grad(out, wrt, grad, allow_unused=True) if wrt else ())
    return [next(grads) if w else None for w in wanted]


def _conv(x: Any, w: Any, b: Any, stride: Any, padding: Any, dilation: Any, transposed: bool,
          output_padding: Any, groups: int) -> Any:
    nd = w.ndim - 2
    if nd not in (1, 2, 3):
        raise NotImplementedError(f"aten.convolution over {nd} spatial dims")
    if transposed:
        fn = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[nd - 1]
        return fn(x, w, b, tuple(stride), tuple(padding), tuple(output_padding), groups, tuple(dilation))
    fn = (F.conv1d, F.conv2d, F.conv3d)[nd - 1]
    return fn(x, w, b, tuple(stride), tuple(padding), tuple(dilation), groups)


ATEN["convolution"] = _conv


@aten("convolution_backward")
def convolution_backward(grad: Any, x: Any, w: Any, bias_sizes: Any, stride: Any, padding: Any, dilation: Any,
                         transposed: bool, output_padding: Any, groups: int, output_mask: Sequence[bool]) -> tuple:
    gx, gw = _vjp(lambda a, b: _conv(a, b, None, stride, padding, dilation, transposed, output_padding, groups),
                  [x, w], grad, output_mask[:2])
    gb = grad.sum([d for d in range(grad.ndim) if d != 1]) if output_mask[2] else None
    return gx, gw, gb


def _pool_args(stride: Any, kernel: Any) -> Any:
    return tuple(stride) if stride else tuple(kernel)


@aten("max_pool2d_with_indices")
def max_pool2d_with_indices(x: Any, kernel: Any, stride: Any = (), padding: Any = 0, dilation: Any = 1,
                            ceil_mode: bool = False) -> tuple[Any, Any]:
    return F.max_pool2d(x, tuple(kernel), _pool_args(stride, kernel), padding, dilation, ceil_mode,
                        return_indices=True)


@aten("max_pool2d_with_indices_backward")
def max_pool2d_with_indices_backward(grad: Any, x: Any, kernel: Any, stride: Any, padding: Any, dilation: Any,
                                     ceil_mode: bool, indices: Any) -> Any:
    lead = tuple(x.shape[:-2])
    plane = x.shape[-2] * x.shape[-1]
    flat = creation.zeros((*lead, plane), dtype=grad.dtype, device=grad.device)
    out = flat.scatter_add(len(lead), indices.reshape(*lead, -1), grad.reshape(*lead, -1))
    return out.reshape(*x.shape)


@aten("avg_pool2d")
def avg_pool2d(x: Any, kernel: Any, stride: Any = (), padding: Any = 0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: Any = None) -> Any:
    return F.avg_pool2d(x, tuple(kernel), _pool_args(stride, kernel), padding, ceil_mode, count_include_pad,
                        divisor_override)


@aten("avg_pool2d_backward")
def avg_pool2d_backward(grad: Any, x: Any, kernel: Any, stride: Any, padding: Any, ceil_mode: bool,
                        count_include_pad: bool, divisor_override: Any) -> Any:
    (gx,) = _vjp(lambda a: avg_pool2d(a, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override),
                 [x], grad, [True])
    return gx


ATEN["_adaptive_avg_pool2d"] = ATEN["adaptive_avg_pool2d"] = lambda x, size: F.adaptive_avg_pool2d(x, tuple(size))


@aten("_adaptive_avg_pool2d_backward")
def adaptive_avg_pool2d_backward(grad: Any, x: Any) -> Any:
    (gx,) = _vjp(lambda a: F.adaptive_avg_pool2d(a, tuple(grad.shape[-2:])), [x], grad, [True])
    return gx


# -- normalization ---------------------------------------------------------------------------------------
def _channel_shape(x: Any) -> tuple[int, ...]:
    return (1, x.shape[1]) + (1,) * (x.ndim - 2)


def _affine(y: Any, weight: Any, bias: Any, shape: tuple[int, ...]) -> Any:
    if weight is not None:
        y = y * weight.reshape(*shape)
    if bias is not None:
        y = y + bias.reshape(*shape)
    return y


@aten("_native_batch_norm_legit_functional")
def batch_norm(x: Any, weight: Any, bias: Any, running_mean: Any, running_var: Any, training: bool,
               momentum: float, eps: float) -> tuple:
    shape = _channel_shape(x)
    dims = [d for d in range(x.ndim) if d != 1]
    if training:
        mean = x.mean(dims)
        var = x.var(dims, correction=0)
        invstd = (var + eps).rsqrt()
        y = _affine((x - mean.reshape(*shape)) * invstd.reshape(*shape), weight, bias, shape)
        if running_mean is None:
            return y, mean, invstd, None, None
        n = x.numel() // x.shape[1]
        new_mean = running_mean * (1 - momentum) + mean * momentum
        new_var = running_var * (1 - momentum) + var * (momentum * n / max(n - 1, 1))
        return y, mean, invstd, new_mean, new_var
    invstd = (running_var + eps).rsqrt()
    y = _affine((x - running_mean.reshape(*shape)) * invstd.reshape(*shape), weight, bias, shape)
    empty = creation.zeros((0,), dtype=x.dtype, device=x.device)
    return y, empty, empty, running_mean, running_var


@aten("_native_batch_norm_legit_no_training")
def batch_norm_eval(x: Any, weight: Any, bias: Any, running_mean: Any, running_var: Any, momentum: float,
                    eps: float) -> tuple:
    return batch_norm(x, weight, bias, running_mean, running_var, False, momentum, eps)[:3]


@aten("native_layer_norm")
def layer_norm(x: Any, normalized_shape: Sequence[int], weight: Any, bias: Any, eps: float) -> tuple:
    dims = list(range(x.ndim - len(normalized_shape), x.ndim))
    mean = x.mean(dims, keepdim=True)
    d = x - mean
    rstd = ((d * d).mean(dims, keepdim=True) + eps).rsqrt()  # methods with variable-size forms (not var)
    y = d * rstd
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y, mean, rstd


@aten("native_group_norm")
def group_norm(x: Any, weight: Any, bias: Any, n: int, c: int, hw: int, group: int, eps: float) -> tuple:
    g = x.reshape(n, group, -1)
    mean = g.mean(2, keepdim=True)
    rstd = (g.var(2, correction=0, keepdim=True) + eps).rsqrt()
    y = ((g - mean) * rstd).reshape(*x.shape)
    y = _affine(y, weight, bias, _channel_shape(x))
    return y, mean.reshape(n, group), rstd.reshape(n, group)


@aten("native_dropout")
def native_dropout(x: Any, p: float, train: Any) -> tuple[Any, Any]:
    if train is False or p == 0:
        return x, creation.ones(tuple(x.shape), dtype=dtypes.bool_, device=x.device)
    if p >= 1:
        return x * 0, creation.zeros(tuple(x.shape), dtype=dtypes.bool_, device=x.device)
    keep = creation.rand(*x.shape, device=x.device) >= p
    return x * keep * (1.0 / (1.0 - p)), keep


# -- the encoder layer of PyTorch's fast path (eval mode, no grad) ---------------------------------------
@aten("_transformer_encoder_layer_fwd")
def transformer_encoder_layer(src: Any, embed_dim: int, num_heads: int, qkv_weight: Any, qkv_bias: Any,
                              proj_weight: Any, proj_bias: Any, use_gelu: bool, norm_first: bool, eps: float,
                              norm_weight_1: Any, norm_bias_1: Any, norm_weight_2: Any, norm_bias_2: Any,
                              ffn_weight_1: Any, ffn_bias_1: Any, ffn_weight_2: Any, ffn_bias_2: Any,
                              mask: Any = None, mask_type: Any = None) -> Any:
    head = embed_dim // num_heads
    batch, t = src.shape[0], src.shape[1]
    keep = None
    if mask is not None:
        if mask_type != 1 or not mask.dtype.is_bool:
            raise NotImplementedError("aten._transformer_encoder_layer_fwd: only a boolean key padding mask")
        keep = mask.logical_not().reshape(batch, 1, 1, t)  # True marks padding

    def attention(h: Any) -> Any:
        qkv = F.linear(h, qkv_weight, qkv_bias).reshape(batch, t, 3, num_heads, head).permute(2, 0, 3, 1, 4)
        out = F.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], attn_mask=keep)
        return F.linear(out.permute(0, 2, 1, 3).reshape(batch, t, embed_dim), proj_weight, proj_bias)

    def feed_forward(h: Any) -> Any:
        a = F.linear(h, ffn_weight_1, ffn_bias_1)
        return F.linear(a.gelu() if use_gelu else a.relu(), ffn_weight_2, ffn_bias_2)

    def norm(h: Any, w: Any, b: Any) -> Any:
        return layer_norm(h, (embed_dim,), w, b, eps)[0]

    x = src
    if norm_first:
        x = x + attention(norm(x, norm_weight_1, norm_bias_1))
        return x + feed_forward(norm(x, norm_weight_2, norm_bias_2))
    x = norm(x + attention(x), norm_weight_1, norm_bias_1)
    return norm(x + feed_forward(x), norm_weight_2, norm_bias_2)

