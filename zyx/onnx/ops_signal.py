"""Signal ONNX operators: DFT (forward, inverse, one-sided, inverse one-sided), STFT and the
Hann/Hamming/Blackman windows. A DFT along an axis is two matmuls with cosine and sine matrices of
the transform length (built on the host from the length alone); the windows are arange and cos."""
from __future__ import annotations

import math

import numpy as np

from zyx import dtype as dtypes
from zyx.frontend.contract_ops import stack
from zyx.frontend.creation import arange
from zyx.frontend.movement import pad
from zyx.frontend.reduce import matmul
from zyx.frontend.tensor import Tensor
from zyx.onnx.registry import Node, axis_of, onnx_dtype, onnx_op, upload


def _fit(x: Tensor, length: int) -> Tensor:
    """``x`` cut or zero-padded to ``length`` along its last axis."""
    if x.shape[-1] >= length:
        return x.narrow(-1 + x.ndim, 0, length)
    return pad(x, [0, length - x.shape[-1]])


def dft_last(re: Tensor, im: Tensor | None, n: int, inverse: bool, onesided: bool) -> tuple[Tensor, Tensor | None]:
    """The DFT of length ``n`` along the last axis of ``re + i im``: (real, imaginary) parts; inverse
    one-sided (irfft) gives a real signal only (imaginary None)."""
    dt = re.dtype
    if inverse and onesided:  # Hermitian input: bins 0..n/2 given, the rest mirrored
        bins = n // 2 + 1
        re, im = _fit(re, bins), None if im is None else _fit(im, bins)
        k = np.arange(bins)[:, None]
        t = np.arange(n)[None, :]
        weight = np.where((k == 0) | ((n % 2 == 0) & (k == n // 2)), 1.0, 2.0) / n
        angle = 2 * math.pi * k * t / n
        out = matmul(re, upload((weight * np.cos(angle)).astype(dt.numpy)))
        if im is not None:
            out = out - matmul(im, upload((weight * np.sin(angle)).astype(dt.numpy)))
        return out, None
    re, im = _fit(re, n), None if im is None else _fit(im, n)
    bins = n // 2 + 1 if onesided else n
    angle = 2 * math.pi * np.arange(n)[:, None] * np.arange(bins)[None, :] / n
    scale = 1 / n if inverse else 1.0
    sign = 1.0 if inverse else -1.0
    cos = upload((np.cos(angle) * scale).astype(dt.numpy))
    sin = upload((np.sin(angle) * scale * sign).astype(dt.numpy))  # the imaginary part of the kernel
    out_re, out_im = matmul(re, cos), matmul(re, sin)
    if im is not None:
        out_re, out_im = out_re - matmul(im, sin), out_im + matmul(im, cos)
    return out_re, out_im


def _complex_parts(x: Tensor) -> tuple[Tensor, Tensor | None]:
    return x[..., 0], (x[..., 1] if x.shape[-1] == 2 else None)


@onnx_op("DFT", attrs={"axis": 1, "inverse": 0, "onesided": 0}, versions=(17, 10**6))
def _dft(node: Node, x: Tensor, dft_length: Tensor | None = None, axis: Tensor | None = None) -> Tensor:
    if node.version >= 20:
        signal_axis = -2 if axis is None else int(np.asarray(node.host(2, axis)).reshape(()))
    else:
        signal_axis = node["axis"]
    signal_axis = axis_of(signal_axis, x.ndim)
    if signal_axis == x.ndim - 1:
        raise node.unsupported("a DFT along the complex axis")
    inverse, onesided = bool(node["inverse"]), bool(node["onesided"])
    size = x.shape[signal_axis]
    n = int(np.asarray(node.host(1, dft_length)).reshape(())) if dft_length is not None and dft_length.numel() \
        else (2 * (size - 1) if inverse and onesided else size)
    re, im = _complex_parts(x)
    re, im = re.movedim(signal_axis, -1), None if im is None else im.movedim(signal_axis, -1)
    out_re, out_im = dft_last(re, im, n, inverse, onesided)
    parts = [out_re] if out_im is None else [out_re, out_im]
    return stack([p.movedim(-1, signal_axis) for p in parts], -1)


@onnx_op("STFT", attrs={"onesided": 1})
def _stft(node: Node, signal: Tensor, frame_step: Tensor, window: Tensor | None = None,
          frame_length: Tensor | None = None) -> Tensor:
    step = int(np.asarray(node.host(1, frame_step)).reshape(()))
    length = window.shape[0] if window is not None else int(np.asarray(node.host(3, frame_length)).reshape(()))
    frames = 1 + (signal.shape[1] - length) // step
    re, im = _complex_parts(signal)  # (batch, samples)
    cut = [stack([part.narrow(1, f * step, length) for f in range(frames)], 1) if part is not None else None
           for part in (re, im)]
    if window is not None:
        cut = [None if part is None else part * window for part in cut]
    out_re, out_im = dft_last(cut[0], cut[1], length, False, bool(node["onesided"]))
    return stack([out_re, out_im], -1)


def _window(formula: str) -> object:
    def run(node: Node, size: Tensor) -> Tensor:
        n = int(np.asarray(node.host(0, size)).reshape(()))
        period = n if node["periodic"] else n - 1
        t = arange(n, dtype=dtypes.float64) * (2 * math.pi / period)
        if formula == "hann":
            y = (t * 0.5).sin() * (t * 0.5).sin()
        elif formula == "hamming":
            y = 25.0 / 46.0 - t.cos() * (21.0 / 46.0)
        else:
            y = 0.42 - t.cos() * 0.5 + (t * 2).cos() * 0.08
        return y.cast(onnx_dtype(node, node["output_datatype"]))
    return run


for _name, _formula in (("HannWindow", "hann"), ("HammingWindow", "hamming"), ("BlackmanWindow", "blackman")):
    onnx_op(_name, attrs={"output_datatype": 1, "periodic": 1})(_window(_formula))
