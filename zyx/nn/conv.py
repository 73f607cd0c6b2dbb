"""Convolution layers: ``Conv1d``, ``Conv2d``, ``Conv3d``, ``ConvTranspose1d/2d/3d``, with
PyTorch's parameter names, shapes, default initialization and reprs; ``padding_mode`` zeros, reflect,
replicate or circular (transposed: zeros)."""
from __future__ import annotations

import math
from typing import Any

from zyx.errors import ShapeError
from zyx.nn import functional as F
from zyx.nn import init
from zyx.nn.module import Module


def _ntuple(v: Any, nd: int, name: str, cls: str) -> tuple[int, ...]:
    t = (int(v),) * nd if isinstance(v, int) else tuple(int(x) for x in v)
    if len(t) != nd:
        raise ShapeError(f"{cls}: {name} must be an int or {nd} ints, got {v!r}")
    return t


_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


class _ConvNd(Module):
    """The shared constructor, initialization and repr; subclasses set ``_nd`` and ``_transposed``."""

    _nd = 2
    _transposed = False

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 dilation: Any = 1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 output_padding: Any = 0, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        cls, nd = type(self).__name__, self._nd
        if groups <= 0 or in_channels % groups or out_channels % groups:
            raise ValueError(f"{cls}: in_channels={in_channels} and out_channels={out_channels} must be divisible "
                             f"by groups={groups} (a positive integer)")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"{cls}: padding_mode must be one of {', '.join(map(repr, _PADDING_MODES))}, got "
                             f"{padding_mode!r}")
        if self._transposed and padding_mode != "zeros":
            raise ValueError(f"{cls}: only padding_mode='zeros' is supported for a transposed convolution")
        if isinstance(padding, str):
            if self._transposed or padding not in ("same", "valid"):
                raise ValueError(f"{cls}: invalid padding string {padding!r}, expected 'same' or 'valid'"
                                 + (" (and not for a transposed convolution)" if self._transposed else ""))
            if padding == "same" and any(s != 1 for s in _ntuple(stride, nd, "stride", cls)):
                raise ValueError(f"{cls}: padding='same' is not supported for strided convolutions")
            self.padding: Any = padding
        else:
            self.padding = _ntuple(padding, nd, "padding", cls)
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = _ntuple(kernel_size, nd, "kernel_size", cls)
        self.stride = _ntuple(stride, nd, "stride", cls)
        self.dilation = _ntuple(dilation, nd, "dilation", cls)
        self.transposed = self._transposed
        self.output_padding = _ntuple(output_padding, nd, "output_padding", cls)
        self.groups = groups
        self.padding_mode = padding_mode
        shape = ((in_channels, out_channels // groups) if self._transposed
                 else (out_channels, in_channels // groups)) + self.kernel_size
        # the non-zero padding modes pad the input first (``Tensor.pad``, last dim first), then convolve unpadded
        if isinstance(self.padding, str):
            totals = [0 if self.padding == "valid" else d * (k - 1) for d, k in zip(self.dilation, self.kernel_size)]
            amounts = [(t // 2, t - t // 2) for t in totals]
        else:
            amounts = [(p, p) for p in self.padding]
        self._reversed_padding_repeated_twice = [a for pair in reversed(amounts) for a in pair]
        self._weight_and_bias(shape, out_channels, bias, dtype, device)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        # PyTorch's default: kaiming_uniform_(a=sqrt(5)) is U(-1/sqrt(fan_in), 1/sqrt(fan_in)); the bias the same
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.weight.shape[1] * math.prod(self.kernel_size)
            bound = 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0
            init.uniform_(self.bias, -bound, bound)

    def _padded(self, x: Any) -> tuple[Any, Any]:
        """The input and the ``padding`` to convolve it with: a non-zero ``padding_mode`` pads it here."""
        if self.padding_mode == "zeros":
            return x, self.padding
        return x.pad(self._reversed_padding_repeated_twice, mode=self.padding_mode), 0

    def extra_repr(self) -> str:
        nd = self._nd
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}")
        if self.padding != (0,) * nd:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * nd:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * nd:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class Conv1d(_ConvNd):
    """1-D convolution of (N, C_in, L) or (C_in, L); ``weight`` (C_out, C_in/groups, K)."""

    _nd = 1

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 dilation: Any = 1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, device=device, dtype=dtype)

    def forward(self, x: Any) -> Any:
        x, padding = self._padded(x)
        return F.conv1d(x, self.weight, self.bias, self.stride, padding, self.dilation, self.groups)


class Conv2d(_ConvNd):
    """2-D convolution of (N, C_in, H, W) or (C_in, H, W); ``weight`` (C_out, C_in/groups, KH, KW)."""

    _nd = 2

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 dilation: Any = 1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, device=device, dtype=dtype)

    def forward(self, x: Any) -> Any:
        x, padding = self._padded(x)
        return F.conv2d(x, self.weight, self.bias, self.stride, padding, self.dilation, self.groups)


class Conv3d(_ConvNd):
    """3-D convolution of (N, C_in, D, H, W) or (C_in, D, H, W); ``weight`` (C_out, C_in/groups, KD, KH, KW)."""

    _nd = 3

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 dilation: Any = 1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, device=device, dtype=dtype)

    def forward(self, x: Any) -> Any:
        x, padding = self._padded(x)
        return F.conv3d(x, self.weight, self.bias, self.stride, padding, self.dilation, self.groups)


class _ConvTransposeNd(_ConvNd):
    _transposed = True

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 output_padding: Any = 0, groups: int = 1, bias: bool = True, dilation: Any = 1,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, output_padding, device=device, dtype=dtype)

    def _output_padding(self, x: Any, output_size: Any) -> tuple[int, ...]:
        """The ``output_padding`` that makes the output's spatial size ``output_size`` (PyTorch's rule)."""
        if output_size is None:
            return self.output_padding
        nd, cls = self._nd, type(self).__name__
        size = tuple(int(s) for s in output_size)[-nd:]
        if len(size) != nd:
            raise ShapeError(f"{cls}: output_size must have {nd} or {nd + 2} elements, got {output_size!r}")
        out = []
        for i in range(nd):
            smallest = ((x.shape[x.ndim - nd + i] - 1) * self.stride[i] - 2 * self.padding[i]
                        + self.dilation[i] * (self.kernel_size[i] - 1) + 1)
            if not smallest <= size[i] < smallest + self.stride[i]:
                raise ShapeError(f"{cls}: requested output_size {size} is invalid: dim {i} must be within "
                                 f"[{smallest}, {smallest + self.stride[i] - 1}] for input shape {tuple(x.shape)}")
            out.append(size[i] - smallest)
        return tuple(out)


class ConvTranspose1d(_ConvTransposeNd):
    """Transposed 1-D convolution of (N, C_in, L) or (C_in, L); ``weight`` (C_in, C_out/groups, K)."""

    _nd = 1

    def forward(self, x: Any, output_size: Any = None) -> Any:
        return F.conv_transpose1d(x, self.weight, self.bias, self.stride, self.padding,
                                  self._output_padding(x, output_size), self.groups, self.dilation)


class ConvTranspose2d(_ConvTransposeNd):
    """Transposed 2-D convolution of (N, C_in, H, W) or (C_in, H, W); ``weight`` (C_in, C_out/groups, KH, KW).
    ``forward(x, output_size)`` picks the ``output_padding`` that gives that size."""

    _nd = 2

    def forward(self, x: Any, output_size: Any = None) -> Any:
        return F.conv_transpose2d(x, self.weight, self.bias, self.stride, self.padding,
                                  self._output_padding(x, output_size), self.groups, self.dilation)


class ConvTranspose3d(_ConvTransposeNd):
    """Transposed 3-D convolution of (N, C_in, D, H, W) or (C_in, D, H, W); ``weight``
    (C_in, C_out/groups, KD, KH, KW)."""

    _nd = 3

    def forward(self, x: Any, output_size: Any = None) -> Any:
        return F.conv_transpose3d(x, self.weight, self.bias, self.stride, self.padding,
                                  self._output_padding(x, output_size), self.groups, self.dilation)
