"""The 15 zyx dtypes, their NumPy/OpenCL mappings and PyTorch-style type promotion."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np

from zyx.errors import DTypeError


@dataclass(frozen=True, eq=False)
class DType:
    """A tensor element type.

    ``cl_storage`` is the OpenCL type a buffer element is stored as; ``emulated``
    marks dtypes that are never computed natively (bfloat16, float8: stored in their
    own width, computed in float32). float16 is emulated only on devices without
    ``cl_khr_fp16`` (the codegen decides per device).
    """

    name: str
    itemsize: int
    kind: str  # "bool" | "int" | "uint" | "float"
    np_dtype: Any
    cl_storage: str
    fkc: str  # the dtype token FKC contract documents use (F32, BF16, ...)
    mantissa_bits: int = 0  # significand precision (with the implicit bit) for floats
    emulated: bool = False

    # One instance per dtype, compared and hashed by identity (object's C-level slots): the
    # schedule cache hashes a tuple holding dozens of dtypes on every realize, where hashing
    # all fields (a NumPy dtype among them), or even a Python-level hash of the name, showed.
    # Copies and pickles come back as the same instance (``__reduce__``).
    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return to_dtype, (self.name,)

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_int(self) -> bool:
        return self.kind in ("int", "uint")

    @property
    def is_signed(self) -> bool:
        return self.kind in ("int", "float")

    @property
    def is_bool(self) -> bool:
        return self.kind == "bool"

    @property
    def numpy(self) -> np.dtype:
        """The NumPy (or ml_dtypes) dtype of this dtype's values on the host."""
        return np.dtype(self.np_dtype)

    def __repr__(self) -> str:
        return f"zyx.{self.name}"


bool_ = DType("bool", 1, "bool", np.bool_, "uchar", "BOOL")
uint8 = DType("uint8", 1, "uint", np.uint8, "uchar", "U8")
int8 = DType("int8", 1, "int", np.int8, "char", "I8")
uint16 = DType("uint16", 2, "uint", np.uint16, "ushort", "U16")
int16 = DType("int16", 2, "int", np.int16, "short", "I16")
uint32 = DType("uint32", 4, "uint", np.uint32, "uint", "U32")
int32 = DType("int32", 4, "int", np.int32, "int", "I32")
uint64 = DType("uint64", 8, "uint", np.uint64, "ulong", "U64")
int64 = DType("int64", 8, "int", np.int64, "long", "I64")
float16 = DType("float16", 2, "float", np.float16, "ushort", "F16", 11)
bfloat16 = DType("bfloat16", 2, "float", ml_dtypes.bfloat16, "ushort", "BF16", 8, emulated=True)
float32 = DType("float32", 4, "float", np.float32, "float", "F32", 24)
float64 = DType("float64", 8, "float", np.float64, "double", "F64", 53)
# float8_e4m3 is the "fn" variant (no infinities, max 448) as in PyTorch's float8_e4m3fn.
float8_e4m3 = DType("float8_e4m3", 1, "float", ml_dtypes.float8_e4m3fn, "uchar", "F8E4M3", 4, emulated=True)
float8_e5m2 = DType("float8_e5m2", 1, "float", ml_dtypes.float8_e5m2, "uchar", "F8E5M2", 3, emulated=True)

ALL_DTYPES: tuple[DType, ...] = (
    bool_, uint8, int8, uint16, int16, uint32, int32, uint64, int64,
    float16, bfloat16, float32, float64, float8_e4m3, float8_e5m2,
)
_BY_NAME: dict[str, DType] = {d.name: d for d in ALL_DTYPES}
# PyTorch's dtype names (torch.int is int32, where NumPy's "int" would give int64)
_BY_NAME.update({"half": float16, "float": float32, "double": float64, "float8_e4m3fn": float8_e4m3,
                 "short": int16, "int": int32, "long": int64})
_BY_FKC: dict[str, DType] = {d.fkc: d for d in ALL_DTYPES}
_BY_NUMPY: dict[np.dtype, DType] = {np.dtype(d.np_dtype): d for d in ALL_DTYPES}


def from_fkc(token: str) -> DType:
    """The dtype an FKC contract token (``F32``, ``BF16``, ``F8E4M3`` ...) names."""
    try:
        return _BY_FKC[token]
    except KeyError:
        raise DTypeError(f"unknown FKC dtype token {token!r}; known: {sorted(_BY_FKC)}") from None


def to_dtype(spec: Any) -> DType:
    """Resolve a zyx dtype, a dtype name, a NumPy dtype or a Python type to a ``DType``."""
    if isinstance(spec, DType):
        return spec
    if spec is bool:
        return bool_
    if spec is int:
        return int64
    if spec is float:
        return float32
    if isinstance(spec, str) and spec in _BY_NAME:
        return _BY_NAME[spec]
    try:
        npd = np.dtype(spec)
    except (TypeError, ValueError):
        npd = None
    if npd is not None and npd in _BY_NUMPY:
        return _BY_NUMPY[npd]
    known = ", ".join(d.name for d in ALL_DTYPES)
    raise DTypeError(f"unknown dtype {spec!r}; expected one of: {known}")


# ---------------------------------------------------------------- promotion

_SIGNED_INTS = (int8, int16, int32, int64)
_UNSIGNED_INTS = (uint8, uint16, uint32, uint64)

#: The unsigned integer of each itemsize: how byte kernels move an element's bits (the one
#: itemsize -> unsigned type table; templates/common/dtypes.mako reads it too).
UINT_OF_SIZE: dict[int, DType] = {d.itemsize: d for d in _UNSIGNED_INTS}


def index_type(*extents: int) -> str:
    """The OpenCL index type of a kernel whose indices, extents and offsets are ``extents``: ``int``
    when each magnitude stays below 2**31 - 1 (so one past it still fits), else ``long``."""
    return "int" if max((abs(e) for e in extents), default=0) < 2**31 - 1 else "long"


def index_np(index_t: str) -> type[np.integer]:
    """The NumPy type of a run-time index argument of OpenCL type ``index_t`` (``int``/``long``)."""
    return np.int32 if index_t == "int" else np.int64


def _promote_ints(a: DType, b: DType) -> DType:
    if a.kind == b.kind:
        return a if a.itemsize >= b.itemsize else b
    u, s = (a, b) if a.kind == "uint" else (b, a)
    if s.itemsize > u.itemsize:
        return s
    for cand in _SIGNED_INTS:
        if cand.itemsize > u.itemsize:
            return cand
    raise DTypeError(f"no integer dtype holds both {a.name} and {b.name}; cast one operand explicitly")


def promote_types(a: DType, b: DType) -> DType:
    """The dtype two tensor operands of these dtypes promote to (PyTorch's rules).

    Where PyTorch refuses (float8 mixed with another dtype) zyx raises ``DTypeError``;
    where PyTorch has no rule for unsigned 16/32/64-bit integers mixed with signed
    ones, zyx takes the smallest signed integer holding both (NumPy's choice).
    """
    a, b = to_dtype(a), to_dtype(b)
    if a is b:
        return a
    for d in (a, b):
        if d in (float8_e4m3, float8_e5m2):
            raise DTypeError(f"type promotion of {a.name} with {b.name} is not defined; cast explicitly")
    if a.is_bool:
        return b
    if b.is_bool:
        return a
    if a.is_float and b.is_float:
        if {a, b} == {float16, bfloat16}:
            return float32
        return a if a.itemsize >= b.itemsize else b
    if a.is_float:
        return a
    if b.is_float:
        return b
    return _promote_ints(a, b)


def scalar_dtype(value: Any) -> DType:
    """The default dtype of a Python scalar (bool, int64, float32) as in PyTorch."""
    if isinstance(value, (bool, np.bool_)):
        return bool_
    if isinstance(value, (int, np.integer)):
        return int64
    if isinstance(value, (float, np.floating)):
        return float32
    raise DTypeError(f"unsupported scalar {value!r} of type {type(value).__name__}; expected bool, int or float")


def _is_python_scalar(x: Any) -> bool:
    return isinstance(x, (bool, int, float, np.bool_, np.integer, np.floating)) and not isinstance(x, DType)


# PyTorch ranks operands: tensors with dims > zero-dim tensors > Python scalars.
_DIMENSIONED, _ZERO_DIM, _SCALAR = 0, 1, 2


def _operand(x: Any) -> tuple[int, DType]:
    """The promotion rank and dtype of one operand (a DType counts as a dimensioned tensor)."""
    if _is_python_scalar(x):
        return _SCALAR, scalar_dtype(x)
    if isinstance(x, DType):
        return _DIMENSIONED, x
    rank = _ZERO_DIM if getattr(x, "ndim", None) == 0 else _DIMENSIONED
    return rank, to_dtype(getattr(x, "dtype", x))


def _combine(higher: DType | None, lower: DType | None) -> DType | None:
    """PyTorch's ``combine_categories``: the higher-ranked dtype wins unless the lower-ranked
    one is of a higher category (bool < integer < float)."""
    if higher is None or lower is None:
        return lower if higher is None else higher
    if higher.is_float:
        return higher
    if higher.is_bool or lower.is_float:
        return promote_types(higher, lower)
    return higher


def result_type(a: Any, b: Any) -> DType:
    """PyTorch-style result dtype of a binary op on tensors, dtypes and/or Python scalars.

    Zero-dim tensors and Python scalars only change the result when they are of a higher
    category (bool < integer < float) than the tensors with dims: ``int8_tensor + 1000``
    and ``int8_tensor + zyx.tensor(1000)`` stay int8, ``int_tensor + 1.5`` becomes float32.
    """
    ka = _operand_key(a)
    kb = _operand_key(b)
    if ka is not None and kb is not None:
        key = (ka[0], id(ka[1]), kb[0], id(kb[1]))
        hit = _RESULT_CACHE.get(key)
        if hit is not None and hit[1] is ka[1] and hit[2] is kb[1]:
            return hit[0]
        result = _result_type_slow(a, b)
        if len(_RESULT_CACHE) >= 4096:
            _RESULT_CACHE.clear()
        _RESULT_CACHE[key] = (result, ka[1], kb[1])  # keeps the keyed dtypes alive (ids stay unique)
        return result
    return _result_type_slow(a, b)


# (rank, id(dtype)) pairs -> (result, dtype a, dtype b): promotion depends only on ranks and dtypes
_RESULT_CACHE: dict[tuple, tuple] = {}
_SCALAR_TYPES = {bool: bool_, int: int64, float: float32}


def _operand_key(x: Any) -> tuple[int, DType] | None:
    """``_operand`` for the common cases (exact Python scalars, DTypes, tensors with a DType); None otherwise."""
    t = type(x)
    d = _SCALAR_TYPES.get(t)
    if d is not None:
        return _SCALAR, d
    if t is DType:
        return _DIMENSIONED, x
    if getattr(t, "__zyx_tensor__", False):  # a tensor class (frontend/base.py; not importable here)
        return (_ZERO_DIM if not x._view.shape else _DIMENSIONED), x._dtype
    return None


def _result_type_slow(a: Any, b: Any) -> DType:
    by_rank: list[DType | None] = [None, None, None]
    for x in (a, b):
        rank, d = _operand(x)
        by_rank[rank] = d if by_rank[rank] is None else promote_types(by_rank[rank], d)
    result = _combine(by_rank[_DIMENSIONED], _combine(by_rank[_ZERO_DIM], by_rank[_SCALAR]))
    assert result is not None
    return result
