"""zyx: PyTorch-style tensors fused into OpenCL kernels (see API.md)."""
from __future__ import annotations

from zyx import nn, settings
from zyx import ops_elementwise as _ew
from zyx import ops_movement as _mv
from zyx import ops_reduce as _red
from zyx.backend.device import Device, default_device, devices, set_default_device
from zyx.backend.launch import kernel_count
from zyx.contracts import listing as _contracts_listing
from zyx.contracts.ops import cat, concat, write_slice, write_slice_doff, write_slice_rotating
from zyx.creation import (
    arange,
    eye,
    from_numpy,
    full,
    full_like,
    linspace,
    manual_seed,
    ones,
    ones_like,
    rand,
    randint,
    randn,
    tensor,
    zeros,
    zeros_like,
)
from zyx.dtype import (
    DType,
    bfloat16,
    float8_e4m3,
    float8_e5m2,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    promote_types,
    result_type,
    uint8,
    uint16,
    uint32,
    uint64,
)
from zyx.dtype import bool_ as bool  # noqa: A004 - the API names it zyx.bool
from zyx.errors import (
    AllocationError,
    CompileError,
    ContractError,
    DeviceError,
    DivisionByZeroError,
    DTypeError,
    IndexOutOfRange,
    IntegerArithmeticError,
    IntegerOverflowError,
    ShapeError,
    ZyxError,
)
from zyx.ops_movement import chunk, pad, split, stack
from zyx.ops_reduce import argmax, argmin, logsumexp, matmul, mean, prod, std, var
from zyx.runtime import debug, memory_stats, synchronize
from zyx.tensor import Tensor
from zyx.version import __version__ as __version__

_ew.install(Tensor)
_red.install(Tensor)
_mv.install(Tensor)
Tensor.softmax = lambda self, dim=-1: nn.functional.softmax(self, dim)
Tensor.log_softmax = lambda self, dim=-1: nn.functional.log_softmax(self, dim)
globals().update(_ew.functions())

_contracts_listing.install()  # zyx.contracts() lists the loaded contracts; zyx.contracts.* stays the package

half = float16
float = float32  # noqa: A001 - the API names it zyx.float
double = float64


__all__ = [
    "AllocationError", "CompileError", "ContractError", "DType", "DTypeError", "Device", "DeviceError",
    "DivisionByZeroError", "IndexOutOfRange", "IntegerArithmeticError", "IntegerOverflowError", "ShapeError", "Tensor",
    "ZyxError", "arange", "argmax", "argmin", "bfloat16", "bool", "cat", "chunk", "concat", "debug", "default_device",
    "devices", "double", "eye", "float", "float16", "float32", "float64", "float8_e4m3", "float8_e5m2", "from_numpy",
    "full", "full_like", "half", "int8", "int16", "int32", "int64", "kernel_count", "linspace", "logsumexp",
    "manual_seed", "matmul", "mean", "memory_stats", "nn", "ones", "ones_like", "pad", "prod", "promote_types", "rand",
    "randint", "randn", "result_type", "set_default_device", "settings", "split", "stack", "std", "synchronize",
    "tensor", "uint8", "uint16", "uint32", "uint64", "var", "write_slice", "write_slice_doff", "write_slice_rotating",
    "zeros", "zeros_like",
]
__all__ += list(_ew.functions())  # exp, where, clip, ...: bound by globals().update above
