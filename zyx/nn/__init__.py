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
    Softmin,
    Tanh,
    Unflatten,
)
from zyx.nn.attention import MultiheadAttention, TransformerEncoder, TransformerEncoderLayer
from zyx.nn.containers import ModuleDict, ModuleList, Sequential
from zyx.nn.conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from zyx.nn.distance import CosineSimilarity, PairwiseDistance
from zyx.nn.fold import Fold, Unfold
from zyx.nn.linear import Bilinear, Embedding, Identity, Linear
from zyx.nn.loss import (
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    HingeEmbeddingLoss,
    HuberLoss,
    KLDivLoss,
    L1Loss,
    MarginRankingLoss,
    MSELoss,
    NLLLoss,
    SmoothL1Loss,
)
from zyx.nn.module import IncompatibleKeys, Module, Parameter, StateDictError
from zyx.nn.normalization import (
    BatchNorm1d,
    BatchNorm2d,
    BatchNorm3d,
    GroupNorm,
    InstanceNorm1d,
    InstanceNorm2d,
    InstanceNorm3d,
    LayerNorm,
    LocalResponseNorm,
    RMSNorm,
)
from zyx.nn.pooling import (
    AdaptiveAvgPool1d,
    AdaptiveAvgPool2d,
    AdaptiveMaxPool1d,
    AdaptiveMaxPool2d,
    AvgPool1d,
    AvgPool2d,
    AvgPool3d,
    MaxPool1d,
    MaxPool2d,
    MaxPool3d,
)
from zyx.nn.quantized import QuantizedLinear, QuantizedWeight
from zyx.nn.resample import PixelShuffle, PixelUnshuffle, Upsample, UpsamplingBilinear2d, UpsamplingNearest2d

__all__ = [
    "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveMaxPool2d", "AvgPool1d", "AvgPool2d", "BatchNorm1d",
    "BatchNorm2d", "Bilinear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
    "CrossEntropyLoss", "Dropout", "Embedding", "Flatten", "GELU", "GroupNorm", "Identity", "IncompatibleKeys",
    "L1Loss", "LayerNorm", "LeakyReLU", "Linear", "LogSoftmax", "MSELoss", "MaxPool1d", "MaxPool2d", "Module",
    "ModuleDict", "ModuleList", "MultiheadAttention", "Parameter", "RMSNorm", "ReLU", "Sequential", "SiLU",
    "Sigmoid", "Softmax", "Softmin", "StateDictError", "Tanh", "TransformerEncoder", "TransformerEncoderLayer",
    "Unflatten",
    "functional", "init", "utils",
]
__all__ += ["PixelShuffle", "PixelUnshuffle", "Upsample", "UpsamplingBilinear2d", "UpsamplingNearest2d"]
__all__ += ["BCELoss", "BCEWithLogitsLoss", "CosineSimilarity", "HingeEmbeddingLoss", "HuberLoss", "KLDivLoss",
            "MarginRankingLoss", "NLLLoss", "PairwiseDistance", "SmoothL1Loss"]
__all__ += ["AdaptiveMaxPool1d", "AvgPool3d", "BatchNorm3d", "ConvTranspose3d", "Fold", "LocalResponseNorm",
            "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "MaxPool3d", "Unfold"]
__all__ += ["QuantizedLinear", "QuantizedWeight"]
