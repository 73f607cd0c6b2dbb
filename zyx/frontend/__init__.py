"""The user API (API.md): ``Tensor`` composed from mixins (and ``VarTensor``, its variable-size form),
creation, and the module-level ops."""
from __future__ import annotations

from zyx.frontend.tensor import Tensor, VarTensor

__all__ = ["Tensor", "VarTensor"]
