"""Neural-network helpers: ``zyx.nn.functional``."""
from zyx.nn import functional

__all__ = ["functional"]
