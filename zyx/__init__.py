"""zyx: PyTorch-style tensors fused into OpenCL kernels (see API.md)."""
from __future__ import annotations

from zyx import autograd, distributed, linalg, nn, onnx, optim, profiler, settings, utils
from zyx import contracts as _contracts_package
from zyx.backend.device import Device, default_device, devices, set_default_device
from zyx.backend.launch import kernel_count
from zyx.contracts.listing import ContractsEntry
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
    AutogradError,
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
from zyx.frontend.advanced_index import index_put
from zyx.frontend.autograd.engine import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from zyx.frontend.contract_ops import cat, concat, stack, write_slice, write_slice_doff, write_slice_rotating
from zyx.frontend.creation import (
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
from zyx.frontend.dlpack import from_dlpack
from zyx.frontend.einsum import bmm, dot, einsum, outer, tensordot
from zyx.frontend.elementwise import (
    abs,  # noqa: A004 - the API names it zyx.abs
    broadcast_shapes,
    ceil,
    clamp,
    clip,
    cos,
    erf,
    exp,
    exp2,
    floor,
    gelu,
    isinf,
    isnan,
    log,
    log2,
    logical_not,
    maximum,
    minimum,
    neg,
    pow,  # noqa: A004 - the API names it zyx.pow
    reciprocal,
    relu,
    round,  # noqa: A004 - the API names it zyx.round
    rsqrt,
    sigmoid,
    sign,
    silu,
    sin,
    sqrt,
    square,
    tan,
    tanh,
    trunc,
    where,
)
from zyx.frontend.elementwise_math import (
    acos,
    acosh,
    allclose,
    asin,
    asinh,
    atan,
    atan2,
    atanh,
    copysign,
    cosh,
    expm1,
    fmod,
    hypot,
    isclose,
    isfinite,
    lerp,
    log1p,
    log10,
    logical_and,
    logical_or,
    logical_xor,
    nan_to_num,
    remainder,
    sinh,
)
from zyx.frontend.gather_scatter import (
    gather,
    index_select,
    masked_select,
    nonzero,
    scatter,
    scatter_add,
    scatter_reduce,
    take_along_dim,
)
from zyx.frontend.index_access import are_deterministic_algorithms_enabled, use_deterministic_algorithms
from zyx.frontend.movement import chunk, pad, split
from zyx.frontend.reduce import (
    all,  # noqa: A004 - the API's reduction, as torch.all
    any,  # noqa: A004 - the API's reduction, as torch.any
    argmax,
    argmin,
    logsumexp,
    matmul,
    max,  # noqa: A004 - the API's reduction (values only, as torch.amax)
    mean,
    min,  # noqa: A004 - the API's reduction (values only, as torch.amin)
    prod,
    std,
    std_mean,
    sum,  # noqa: A004 - the API's reduction, as torch.sum
    var,
    var_mean,
)
from zyx.frontend.shape_ops import (
    diag,
    diagonal,
    meshgrid,
    movedim,
    repeat_interleave_fn,
    swapaxes,
    tile,
    tril_indices,
    triu_indices,
)
from zyx.frontend.sorting import (
    ValuesIndices,
    argsort,
    bucketize,
    kthvalue,
    median,
    msort,
    searchsorted,
    sort,
    topk,
    unique,
)
from zyx.frontend.tape import Tape, Variable, jit
from zyx.frontend.tensor import Tensor
from zyx.io import load, load_file, load_file_metadata, save, save_file
from zyx.nn import parallel as _parallel  # noqa: F401 - loaded so `import zyx` gives zyx.nn.parallel, as torch's
from zyx.runtime import build_stats, debug, memory_stats, synchronize
from zyx.version import __version__ as __version__

repeat_interleave = repeat_interleave_fn
moveaxis = movedim
swapdims = swapaxes

# zyx.contracts() lists the loaded contracts; zyx.contracts.<name> stays the package's
contracts = ContractsEntry(_contracts_package)

half = float16
float = float32  # noqa: A001 - the API names it zyx.float
double = float64
amax, amin = max, min


__all__ = [
    "AllocationError", "CompileError", "ContractError", "DType", "DTypeError", "Device", "DeviceError",
    "DivisionByZeroError", "IndexOutOfRange", "IntegerArithmeticError", "IntegerOverflowError", "ShapeError", "Tensor",
    "ZyxError", "arange", "argmax", "argmin", "bfloat16", "bool", "build_stats", "cat", "chunk", "concat", "debug",
    "default_device",
    "devices", "double", "eye", "float", "float16", "float32", "float64", "float8_e4m3", "float8_e5m2", "from_dlpack",
    "from_numpy",
    "full", "full_like", "half", "int8", "int16", "int32", "int64", "kernel_count", "linspace", "logsumexp",
    "manual_seed", "matmul", "mean", "memory_stats", "nn", "ones", "ones_like", "pad", "prod", "promote_types", "rand",
    "randint", "randn", "result_type", "set_default_device", "settings", "split", "stack", "std", "synchronize",
    "tensor", "uint8", "uint16", "uint32", "uint64", "var", "write_slice", "write_slice_doff", "write_slice_rotating",
    "zeros", "zeros_like",
]
__all__ += ["std_mean", "var_mean"]
__all__ += ["all", "amax", "amin", "any", "max", "min", "sum"]  # API.md "Reductions" as functions
__all__ += ["AutogradError", "autograd", "enable_grad", "inference_mode", "is_grad_enabled", "no_grad",
            "set_grad_enabled"]
__all__ += ["load", "load_file", "load_file_metadata", "onnx", "optim", "profiler", "save", "save_file", "utils"]
__all__ += ["distributed"]
__all__ += [  # the elementwise functions
    "abs", "broadcast_shapes", "ceil", "clamp", "clip", "cos", "erf", "exp", "exp2", "floor", "gelu", "isinf", "isnan",
    "log", "log2", "logical_not", "maximum", "minimum", "neg", "pow", "reciprocal", "relu", "round", "rsqrt",
    "sigmoid", "sign", "silu", "sin", "sqrt", "square", "tan", "tanh", "trunc", "where",
]
__all__ += [  # API.md "More elementwise, activations and comparisons"
    "acos", "acosh", "allclose", "asin", "asinh", "atan", "atan2", "atanh", "copysign", "cosh", "expm1", "fmod",
    "hypot", "isclose", "isfinite", "lerp", "log1p", "log10", "logical_and", "logical_or", "logical_xor",
    "nan_to_num", "remainder", "sinh",
]
__all__ += ["Tape", "Variable", "jit"]  # API.md "Tapes and variables"
__all__ += [  # API.md "Advanced indexing, gather and scatter"
    "are_deterministic_algorithms_enabled", "gather", "index_put", "index_select", "masked_select", "nonzero",
    "scatter", "scatter_add", "scatter_reduce", "take_along_dim", "use_deterministic_algorithms",
]
__all__ += [  # API.md "Sorting and selection"
    "ValuesIndices", "argsort", "bucketize", "kthvalue", "median", "msort", "searchsorted", "sort", "topk", "unique",
]
__all__ += [  # API.md "More movement and shape ops", einsum and the small contractions, linalg
    "bmm", "diag", "diagonal", "dot", "einsum", "linalg", "meshgrid", "moveaxis", "movedim", "outer",
    "repeat_interleave", "swapaxes", "swapdims", "tensordot", "tile", "tril_indices", "triu_indices",
]
