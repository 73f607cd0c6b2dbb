"""Weights kept in GGUF (ggml) blocks: ``QuantizedWeight`` (the blocks of a (rows, cols) matrix on the
device) and ``QuantizedLinear`` (``y = x @ W^T + bias`` with W in blocks, the matmul dequantizing inside its
kernel, ``zyx.kernels.quantized_matmul``).

A decode step (one token) reads every weight once, so its time is the weight's bytes over the memory
bandwidth: Q8_0 moves 34 bytes a 32 values, Q4_0 18, Q4_K 144 a 256, against 128 (or 1024) in float32.
``dequantize`` expands blocks to float32 on the device (``zyx.kernels.gguf_dequant``), bit for bit what
``gguf.quants.dequantize`` gives. The layer is for inference: its weight has no gradient (the input's
flows through the dequantized weight).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from zyx import dtype as dtypes
from zyx.backend.pool import Buffer
from zyx.errors import DTypeError, ShapeError
from zyx.frontend.autograd.engine import needs_grad, record
from zyx.frontend.base import concrete, extern_tensor, from_storage_start
from zyx.frontend.creation import zeros
from zyx.frontend.reduce import matmul
from zyx.kernels import gguf_dequant, quantized_matmul
from zyx.kernels.gguf_dequant import QTYPES
from zyx.nn.module import Module, Parameter


def _qtype(name: str) -> gguf_dequant.QType:
    q = QTYPES.get(name)
    if q is None:
        raise DTypeError(f"unknown GGUF type {name!r}; expected one of {', '.join(QTYPES)}")
    return q


def dequantize(raw: Any, qtype: str, shape: tuple[int, ...]) -> Any:
    """The float32 tensor of ``shape`` whose values are stored in ``raw`` (a uint8 tensor of ggml type
    ``qtype``'s bytes: blocks, or F16/BF16 words), expanded on ``raw``'s device."""
    q = _qtype(qtype)
    if qtype == "F32":
        raise DTypeError("dequantize: F32 values need no expansion (upload them as float32)")
    n = math.prod(shape)
    raw = concrete(raw)
    if raw.dtype != dtypes.uint8:
        raise DTypeError(f"dequantize: expected the raw bytes as uint8, got {raw.dtype.name}")
    if n % q.block or raw.numel() != n // q.block * q.type_size:
        raise ShapeError(f"dequantize: {raw.numel()} bytes do not hold {n} {qtype} values "
                         f"(expected {n // q.block * q.type_size} bytes in blocks of {q.block})")
    raw = from_storage_start(raw.reshape(-1))  # the kernel reads whole blocks from the buffer's first byte
    device = raw.device

    def run(bufs: list[Buffer]) -> Buffer:
        out = device.pool.allocate(max(n, 1) * 4)
        gguf_dequant.dequantize(device, out, bufs[0], qtype, n)
        return out

    return extern_tensor(f"gguf dequantize {qtype}", run, [raw], dtypes.float32, tuple(shape), device)


@dataclass(frozen=True)
class QuantizedWeight:
    """A (rows, cols) matrix in ggml blocks: ``blocks`` is a uint8 tensor (rows, bytes a row), each row
    ``cols / block`` blocks of type ``qtype`` (a quantized name of ``zyx.kernels.gguf_dequant.QTYPES``)."""
    blocks: Any
    qtype: str
    shape: tuple[int, int]

    def __post_init__(self) -> None:
        q = _qtype(self.qtype)
        rows, cols = self.shape
        if not q.quantized:
            raise DTypeError(f"QuantizedWeight: {self.qtype} is not a block type (keep it as a float tensor)")
        if cols % q.block:
            raise ShapeError(f"QuantizedWeight: rows of {cols} values are not whole {self.qtype} blocks of {q.block}")
        if tuple(self.blocks.shape) != (rows, q.row_bytes(cols)) or self.blocks.dtype != dtypes.uint8:
            raise ShapeError(f"QuantizedWeight: blocks of shape {tuple(self.blocks.shape)} "
                             f"({self.blocks.dtype.name}) do not hold a {self.qtype} ({rows}, {cols}) matrix; "
                             f"expected uint8 ({rows}, {q.row_bytes(cols)})")

    @property
    def device(self) -> Any:
        return self.blocks.device

    @property
    def nbytes(self) -> int:
        return self.blocks.numel()

    def dequantize(self) -> Any:
        """The float32 (rows, cols) matrix, expanded on the device."""
        return dequantize(self.blocks, self.qtype, self.shape)

    def embedding(self, ids: Any) -> Any:
        """Rows ``ids`` (an integer tensor of any shape) as float32 (``ids.shape`` + (cols,)): the rows of blocks
        gathered, then only they expanded (an embedding table stays in its blocks)."""
        rows = self.blocks[ids.reshape(-1)]
        return dequantize(rows, self.qtype, (*ids.shape, self.shape[1]))

    def to(self, device: Any) -> QuantizedWeight:
        return QuantizedWeight(self.blocks.to(device), self.qtype, self.shape)


def quantized_linear(x: Any, weight: QuantizedWeight, bias: Any = None) -> Any:
    """``x @ weight^T + bias`` for float32 ``x`` (..., cols): the matmul reads ``weight``'s blocks and
    dequantizes them inside the kernel."""
    return quantized_linears(x, [weight], [bias])[0]


def quantized_linears(x: Any, weights: Sequence[QuantizedWeight], biases: Sequence[Any] | None = None) -> list:
    """``[x @ w^T + b for w, b in zip(weights, biases)]`` in one kernel launch: weights of one block type and
    input width (a layer's Q, K and V projections) whose outputs are column slices of one result."""
    x = concrete(x)
    biases = [None] * len(weights) if biases is None else list(biases)
    if not weights or len(biases) != len(weights):
        raise ShapeError(f"quantized_linears: {len(weights)} weights and {len(biases)} biases")
    qtype, cols = weights[0].qtype, weights[0].shape[1]
    if any(w.qtype != qtype or w.shape[1] != cols for w in weights):
        raise ShapeError("quantized_linears: the weights differ in block type or input features: "
                         + ", ".join(f"{w.qtype} {w.shape}" for w in weights))
    if x.dtype != dtypes.float32:
        raise DTypeError(f"quantized_linear: expected float32 activations, got {x.dtype.name}")
    if x.ndim < 1 or x.shape[-1] != cols:
        raise ShapeError(f"quantized_linear: input of shape {tuple(x.shape)} does not end in the weight's "
                         f"{cols} input features")
    lead = tuple(x.shape[:-1])
    m = math.prod(lead)
    x2 = from_storage_start(x.reshape(m, cols))
    blocks = [from_storage_start(w.blocks) for w in weights]
    parts = tuple(w.shape[0] for w in weights)
    device = x.device

    def run(bufs: list[Buffer]) -> Buffer:
        return quantized_matmul.qmatmul(device, bufs[0], bufs[1:], qtype, m, cols, parts)

    name = f"quantized matmul {qtype}" + (f" x{len(parts)}" if len(parts) > 1 else "")
    y = extern_tensor(name, run, [x2, *blocks], dtypes.float32, (m, sum(parts)), device)
    if needs_grad(x):
        y = record("quantized_linear", y, [x],
                   lambda g: (sum(matmul(g[:, a:a + w.shape[0]], w.dequantize())
                                  for a, w in zip(_starts(parts), weights)).reshape(x.shape),))
    outs = [y] if len(parts) == 1 else [y[:, a:a + n] for a, n in zip(_starts(parts), parts)]
    outs = [o.reshape(*lead, o.shape[-1]) for o in outs]
    return [o if b is None else o + b for o, b in zip(outs, biases)]


def _starts(parts: tuple[int, ...]) -> list[int]:
    return [sum(parts[:i]) for i in range(len(parts))]


class QuantizedLinear(Module):
    """``y = x @ W^T + bias`` with W (out_features, in_features) kept in GGUF blocks of ``qtype`` (the
    buffer ``weight_blocks``, uint8 (out_features, bytes a row)); float32 activations of any leading dims.
    Build one from loaded blocks with ``from_weight``; the constructor makes zero blocks (for
    ``load_state_dict``)."""

    def __init__(self, in_features: int, out_features: int, qtype: str, bias: bool = True,
                 device: Any = None) -> None:
        super().__init__()
        q = _qtype(qtype)
        self.in_features, self.out_features, self.qtype = in_features, out_features, qtype
        if not q.quantized or in_features % q.block:
            raise ShapeError(f"QuantizedLinear: in_features {in_features} is not whole {qtype} blocks of {q.block}")
        self.register_buffer("weight_blocks", zeros(out_features, q.row_bytes(in_features), dtype=dtypes.uint8,
                                                    device=device))
        if bias:
            self.bias = Parameter(zeros(out_features, device=device))
        else:
            self.register_parameter("bias", None)

    @classmethod
    def from_weight(cls, weight: QuantizedWeight, bias: Any = None) -> QuantizedLinear:
        """The layer over ``weight``'s blocks (no copy) with ``bias`` (out_features,) or none."""
        layer = cls.__new__(cls)
        Module.__init__(layer)
        layer.out_features, layer.in_features = weight.shape
        layer.qtype = weight.qtype
        layer.register_buffer("weight_blocks", weight.blocks)
        if bias is not None:
            layer.bias = bias if isinstance(bias, Parameter) else Parameter(bias)
        else:
            layer.register_parameter("bias", None)
        return layer

    @property
    def weight(self) -> QuantizedWeight:
        return QuantizedWeight(self.weight_blocks, self.qtype, (self.out_features, self.in_features))

    def forward(self, x: Any) -> Any:
        return quantized_linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, qtype={self.qtype}, "
                f"bias={self.bias is not None}")


__all__ = ["QuantizedLinear", "QuantizedWeight", "dequantize", "quantized_linear", "quantized_linears"]
