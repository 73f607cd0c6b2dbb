"""``zyx.autograd``: gradients of tensors (PyTorch's ``torch.autograd`` names); the engine and the
gradient rules live in ``zyx/frontend/autograd/`` (``engine.py`` and ``rules.py``)."""
from zyx.frontend.autograd.engine import (
    backward,
    enable_grad,
    grad,
    inference_mode,
    is_grad_enabled,
    no_grad,
    set_grad_enabled,
)

__all__ = ["backward", "enable_grad", "grad", "inference_mode", "is_grad_enabled", "no_grad", "set_grad_enabled"]
