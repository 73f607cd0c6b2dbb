"""zyx: PyTorch-style tensors fused into OpenCL kernels (see API.md)."""
from __future__ import annotations

from zyx import settings
from zyx.backend.device import Device, default_device, devices, set_default_device
from zyx.backend.launch import kernel_count
from zyx.creation import (
    arange, eye, from_numpy, full, full_like, linspace, manual_seed, ones, ones_like, rand, randint,
    randn, tensor, zeros, zeros_like,
)
from zyx.dtype import (
    DType, bfloat16, float8_e4m3, float8_e5m2, float16, float32, float64, int8, int16, int32, int64,
    promote_types, result_type, uint8, uint16, uint32, uint64,
)
from zyx.dtype import bool_ as bool  # noqa: A001 - the API names it zyx.bool
from zyx.errors import (
    AllocationError, CompileError, ContractError, DeviceError, DTypeError, IndexOutOfRange, ShapeError,
    ZyxError,
)
from zyx.runtime import debug, memory_stats, synchronize
from zyx.tensor import Tensor

half = float16
float = float32  # noqa: A001 - the API names it zyx.float
double = float64

__version__ = "0.1.0"
