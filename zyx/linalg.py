"""``zyx.linalg`` (PyTorch's ``torch.linalg`` names): norms; implemented in ``zyx/frontend/linalg.py``."""
from zyx.frontend.linalg import matrix_norm, norm, vector_norm

__all__ = ["matrix_norm", "norm", "vector_norm"]
