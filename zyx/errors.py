"""The zyx exception hierarchy (API.md, "Errors").

Every user-facing failure raises one of these; OpenCL errors never escape bare.
"""
from __future__ import annotations


class ZyxError(Exception):
    """Base class of every error zyx raises on purpose."""


class ShapeError(ZyxError, ValueError, RuntimeError):
    """Shapes that do not fit together (also a ValueError and a RuntimeError, as in PyTorch)."""


class IndexOutOfRange(ShapeError, IndexError):
    """A dimension or index out of range: both a ShapeError and an IndexError."""


class UnknownModeError(ShapeError, NotImplementedError):
    """A ``mode`` string no op variant has (``pad(mode="typo")``): also a NotImplementedError, as PyTorch raises."""


class DTypeError(ZyxError, TypeError):
    """A dtype that is unknown, not accepted, or not supported by the device."""


class OpDTypeError(DTypeError, RuntimeError):
    """An op with no kernel for a dtype, or needing operands of one dtype: also a RuntimeError, as PyTorch raises."""


class IndexDTypeError(DTypeError, IndexError):
    """A float tensor used as an index: also an IndexError, as PyTorch raises there."""


class IntegerArithmeticError(ZyxError, ArithmeticError, RuntimeError):
    """Integer arithmetic with no integer result: a negative integer power (also a RuntimeError, as in PyTorch)."""


class IntegerOverflowError(IntegerArithmeticError, OverflowError):
    """A Python int operand outside the 64-bit range (also an OverflowError, as PyTorch raises)."""


class DivisionByZeroError(IntegerArithmeticError, ZeroDivisionError):
    """Integer ``//`` or ``%`` by zero (also a ZeroDivisionError and a RuntimeError)."""


class ContractError(ZyxError, ValueError):
    """Input that a kernel contract does not accept, or a malformed contract document."""


class ContractShapeError(ContractError, ShapeError):
    """A contract rejecting axes (e.g. one named twice): also a ShapeError, so a RuntimeError as in PyTorch."""


class ContractIndexError(ContractError, IndexOutOfRange):
    """A contract rejecting an axis out of range: also an IndexError, as API.md promises for every op."""


class DeviceError(ZyxError):
    """No usable OpenCL device, or a device string that matches nothing."""


class AllocationError(ZyxError, MemoryError):
    """A device allocation failed; the message gives requested and free bytes."""


class CompileError(ZyxError):
    """An OpenCL program failed to build; carries the source and the build log."""

    def __init__(self, message: str, source: str = "", build_log: str = "") -> None:
        super().__init__(message)
        self.source = source
        self.build_log = build_log

    def __str__(self) -> str:
        text = super().__str__()
        if self.build_log:
            text += "\n--- build log ---\n" + self.build_log.strip()
        return text


class AutogradError(ZyxError, RuntimeError):
    """A gradient cannot be computed as asked: a freed graph, a modified saved tensor, a non-scalar
    output without ``gradient``."""


class DistributedError(ZyxError, RuntimeError):
    """A ``zyx.distributed`` call failed: no process group, a peer rank that died or did not answer
    within the group's timeout, or ranks that disagree on what they reduce (a ``RuntimeError``, as
    PyTorch's ``DistBackendError`` is)."""
