"""``zyx.linalg`` (PyTorch's ``torch.linalg`` names): norms (``zyx/frontend/linalg.py``) and the singular
value decomposition (``zyx/frontend/svd.py``)."""
from zyx.frontend.linalg import matrix_norm, norm, vector_norm
from zyx.frontend.svd import SVD, svd, svdvals

__all__ = ["SVD", "matrix_norm", "norm", "svd", "svdvals", "vector_norm"]
