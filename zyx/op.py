"""The primitive op set: one ``Op`` enum, grouped by what an op does.

Graph nodes (``zyx.graph``), kernel IR expressions (``zyx.ir.expr``) and the code generator
all name ops by these members; the groups below are the only lists of op names. ``Op`` is a
``str`` enum whose value is the op's lower-case name, so a member formats as that name in
generated source, debug output and cache keys.
"""
from __future__ import annotations

from enum import Enum


class Op(str, Enum):
    """Every primitive op (ALU, reduce) and every kind of graph node that is not an ALU op."""

    # unary ALU ops
    NEG = "neg"
    ABS = "abs"
    EXP = "exp"
    EXP2 = "exp2"
    LOG = "log"
    LOG2 = "log2"
    SQRT = "sqrt"
    RSQRT = "rsqrt"
    SIN = "sin"
    COS = "cos"
    TAN = "tan"
    TANH = "tanh"
    SIGMOID = "sigmoid"
    RELU = "relu"
    GELU = "gelu"
    GELU_TANH = "gelu_tanh"
    SILU = "silu"
    ERF = "erf"
    RECIPROCAL = "reciprocal"
    FLOOR = "floor"
    CEIL = "ceil"
    ROUND = "round"
    TRUNC = "trunc"
    SIGN = "sign"
    SQUARE = "square"
    ISNAN = "isnan"
    ISINF = "isinf"
    NOT = "not"
    INVERT = "invert"
    # float only: the value itself where it lies in [0, 1]; NaN and an error-flag bit elsewhere (NaN too), so a
    # value-dependent precondition is checked by the kernel that reads the value (backend/errorflags.py)
    CHECK_PROB_INPUT = "check_prob_input"  # binary_cross_entropy's input
    CHECK_PROB_TARGET = "check_prob_target"  # binary_cross_entropy's target
    # binary ALU ops
    ADD = "add"
    SUB = "sub"
    MUL = "mul"
    DIV = "div"
    FLOORDIV = "floordiv"
    MOD = "mod"
    POW = "pow"
    MAXIMUM = "maximum"
    MINIMUM = "minimum"
    EQ = "eq"
    NE = "ne"
    LT = "lt"
    LE = "le"
    GT = "gt"
    GE = "ge"
    AND = "and"
    OR = "or"
    XOR = "xor"
    SHL = "shl"  # integers only: PyTorch's <<, 0 for a shift outside [0, bits)
    SHR = "shr"  # integers only: PyTorch's >> (arithmetic for signed), sign fill for a shift outside [0, bits)
    ATAN2 = "atan2"  # float only: no composition of the other ops is accurate
    COPYSIGN = "copysign"  # float only: |a| with the sign bit of b (NaN and -0.0 included)
    # ternary ALU op
    WHERE = "where"
    # reduce ops
    SUM = "sum"
    PROD = "prod"
    MAX = "max"
    MIN = "min"
    ARGMAX = "argmax"
    ARGMIN = "argmin"
    # graph node kinds that are not ALU or reduce ops
    BUFFER = "buffer"  # a realized device buffer
    CONST = "const"  # one value broadcast to a shape (full, zeros, ones)
    CAST = "cast"
    COPY = "copy"  # a dense copy; stored when its arg is True (clone, contiguous)
    PAD = "pad"
    GATHER = "gather"  # rows of a table picked by an integer index (embedding)
    EXTERN = "extern"  # a kernel that is not IR: a contract kernel, random bits

    # a member formats as its name: generated source, debug lines and keys read "add", not "Op.ADD"
    __str__ = str.__str__
    __format__ = str.__format__


UNARY = frozenset({
    Op.NEG, Op.ABS, Op.EXP, Op.EXP2, Op.LOG, Op.LOG2, Op.SQRT, Op.RSQRT, Op.SIN, Op.COS, Op.TAN, Op.TANH,
    Op.SIGMOID, Op.RELU, Op.GELU, Op.GELU_TANH, Op.SILU, Op.ERF, Op.RECIPROCAL, Op.FLOOR, Op.CEIL, Op.ROUND,
    Op.TRUNC, Op.SIGN, Op.SQUARE, Op.ISNAN, Op.ISINF, Op.NOT, Op.INVERT, Op.CHECK_PROB_INPUT, Op.CHECK_PROB_TARGET,
})
BINARY = frozenset({
    Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.FLOORDIV, Op.MOD, Op.POW, Op.MAXIMUM, Op.MINIMUM,
    Op.EQ, Op.NE, Op.LT, Op.LE, Op.GT, Op.GE, Op.AND, Op.OR, Op.XOR, Op.ATAN2, Op.COPYSIGN,
    Op.SHL, Op.SHR,
})
TERNARY = frozenset({Op.WHERE})
ALU = UNARY | BINARY | TERNARY
REDUCE = frozenset({Op.SUM, Op.PROD, Op.MAX, Op.MIN, Op.ARGMAX, Op.ARGMIN})
#: ALU ops whose result is a bool whatever their operands
COMPARISON = frozenset({Op.EQ, Op.NE, Op.LT, Op.LE, Op.GT, Op.GE, Op.ISNAN, Op.ISINF, Op.NOT})
#: ALU ops whose result is exact in the operands' dtype (a 16-bit/8-bit float emulation never rounds it)
EXACT = frozenset({Op.NEG, Op.ABS, Op.RELU, Op.FLOOR, Op.CEIL, Op.ROUND, Op.TRUNC, Op.SIGN, Op.MAXIMUM,
                   Op.MINIMUM, Op.WHERE, Op.CHECK_PROB_INPUT, Op.CHECK_PROB_TARGET})
#: ALU ops that pass a value through and report one outside its allowed range through the device's error flag
VALUE_CHECKS = frozenset({Op.CHECK_PROB_INPUT, Op.CHECK_PROB_TARGET})
#: reduces whose result is a position (int64), not a value
ARG_REDUCE = frozenset({Op.ARGMAX, Op.ARGMIN})
