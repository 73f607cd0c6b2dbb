"""The user API (API.md): ``Tensor`` composed from mixins, creation, and the module-level ops."""
from __future__ import annotations

from zyx.frontend.tensor import Tensor

__all__ = ["Tensor"]
