"""What the frontend mixins know of the concrete tensor class, without importing it.

Every mixin derives from ``TensorBase``; the class that completes them (``frontend/tensor.py``)
is declared with ``concrete=True`` and is then the class that module-level functions with no
tensor in hand (creation, ``from_node``) construct. Its constructor is the one primitive the
mixins share: ``cls(data, view, dtype, device)``.
"""
from __future__ import annotations

from typing import Any


class TensorBase:
    """The root of ``Tensor``'s mixins: isinstance checks use it, constructors come from ``tensor_class()``."""

    __slots__ = ()
    __zyx_tensor__ = True  # the protocol ``dtype.result_type`` recognizes tensors by
    _concrete: Any = None  # the concrete tensor class (set when it is defined)

    def __init_subclass__(cls, concrete: bool = False, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if concrete:
            TensorBase._concrete = cls


#: tensor classes of variable size (``frontend.varsize``): module functions that have a variable form
#: (``where``, ``softmax``, ``matmul``) hand such operands to it; a set lookup keeps that test cheap
VARSIZE: set[type] = set()


def concrete(x: Any) -> Any:
    """``x`` at its bound values when it is a tensor of variable size (a plain tensor whose shape holds
    ints; ``_view`` reports the read, so a capture keys its plan by the values); anything else as it is.
    Ops with no variable form call it on their operands: they read ``shape`` and hand sizes to kernels."""
    if type(x) in VARSIZE:
        return TensorBase._concrete(x._data, x._view, x._dtype, x._device)
    return x


def tensor_class() -> Any:
    """The concrete tensor class (``zyx.frontend.tensor`` must have been imported)."""
    cls = TensorBase._concrete
    if cls is None:
        raise RuntimeError("no concrete tensor class yet: import zyx.frontend.tensor (or zyx) first")
    return cls
