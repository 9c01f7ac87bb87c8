"""The names of Capra's operations: :class:`Op`, the kind of a node (its entry in the table of
:mod:`compiler.ops.table` says what the operation is)."""

import enum


class Op(enum.StrEnum):
    """The kind of a node. A str enum: ``Op.MATMUL == "matmul"``, and it prints as its value."""

    INPUT = "input"
    WEIGHT = "weight"
    MATMUL = "matmul"
    SOFTMAX = "softmax"
    ADD = "add"
    RELU = "relu"
    TABLE = "table"
    CONCAT = "concat"
    SLICE = "slice"
    ARGMAX = "argmax"
    LAYERNORM = "layernorm"
    EMBEDDING = "embedding"
    OUTPUT = "output"
    CONV2D = "conv2d"
    MAXPOOL = "maxpool"
    RESHAPE = "reshape"
