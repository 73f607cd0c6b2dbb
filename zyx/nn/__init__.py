"""``zyx.nn``: modules and layers (PyTorch's names, parameter names and initialization),
``zyx.nn.functional`` and ``zyx.nn.init``."""
from zyx.nn import functional, init, utils
from zyx.nn.activation import (
    GELU,
    Dropout,
    Flatten,
    LeakyReLU,
    LogSoftmax,
    ReLU,
    Sigmoid,
    SiLU,
    Softmax,
    Tanh,
    Unflatten,
)
from zyx.nn.attention import MultiheadAttention, TransformerEncoder, TransformerEncoderLayer
from zyx.nn.containers import ModuleDict, ModuleList, Sequential
from zyx.nn.linear import Bilinear, Embedding, Identity, Linear
from zyx.nn.loss import CrossEntropyLoss, L1Loss, MSELoss
from zyx.nn.module import IncompatibleKeys, Module, Parameter, StateDictError
from zyx.nn.normalization import LayerNorm, RMSNorm

__all__ = [
    "GELU", "Bilinear", "CrossEntropyLoss", "Dropout", "Embedding", "Flatten", "Identity", "IncompatibleKeys",
    "L1Loss", "LayerNorm", "LeakyReLU", "Linear", "LogSoftmax", "MSELoss", "Module", "ModuleDict", "ModuleList",
    "MultiheadAttention", "Parameter", "RMSNorm", "ReLU", "Sequential", "SiLU", "Sigmoid", "Softmax",
    "StateDictError", "Tanh", "TransformerEncoder", "TransformerEncoderLayer", "Unflatten", "functional", "init",
    "utils",
]
