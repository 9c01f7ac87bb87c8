"""Capra's table of operations: every operation declared once, as ``sim/spec.py`` declares the
instructions.

An operation's kind is an :class:`~compiler.ops.names.Op`; its entry, an
:class:`~compiler.ops.spec.OpSpec`, says what it is: its operands and attributes, its shape
rule, its meanings (float, integer, real number) and its traits (role, place, scale rule,
limits, fusion, constants). The rules and meanings of each operation are in a module of its
own in this package (:mod:`.matmul`, :mod:`.softmax`, ...), the shared parts in :mod:`.spec`,
:mod:`.shapes` and :mod:`.semantics`. Nothing here knows how an operation lowers: the back end
registers a lowering against each operation (:mod:`compiler.lowering.table`), and the passes
read the traits, never the names.

A new operation is a member of :class:`~compiler.ops.names.Op`, an entry below, a module of its
own in this package (its shape rule and its three meanings), a one-line builder on
:class:`compiler.ir.Graph`, and its lowering, registered in :mod:`compiler.lowering.table`.
A table activation (an int8 -> int8 lookup: gelu, silu, tanh), say, is an operand-shaped
COMPUTE entry with a FREE scale, a float meaning from its function, an integer meaning from
its table (a :class:`~compiler.ops.spec.Constant` region) and a lowering that writes the
lookup. ``tests/compiler/ops/test_table.py`` fails when an entry lacks a hook, an operation
lacks a lowering, or a pass meets an operation it does not cover (the counterpart of the
assert at the bottom of ``sim/machine.py``).

The largest level of an int8 tensor's encoding is its ``levels`` (127; 7 for an int4 weight).

Sources: seed chapter 11 (the operations and their rules), chapter 13 (int4 weights),
chapter 16 (slices); GA2.md sections 3 and 4 (the instructions and the fixed-point formats
the pins come from).
"""

from __future__ import annotations

from .activation import ENTRIES, float_table, int_table, real_table, table_shape
from .add import add_shape, float_add, int_add, real_add
from .argmax import argmax_shape, float_argmax, int_argmax
from .concat import concat_shape, float_concat, int_concat
from .conv2d import (
    CHANNEL_TABLE,
    CONV_BIAS,
    DEPTHWISE_DIAGONALS,
    PADDING_ZEROS,
    SHARED_TAPS,
    conv2d_shape,
    float_conv2d,
    int_conv2d,
    real_conv2d,
)
from .embedding import EMBEDDING_SCALES, TABLE_ROWS_LIMIT, embedding_shape, float_embedding, int_embedding
from .input import float_input, input_shape, int_input
from .layernorm import BIAS_ROW, LN_ROW_LIMIT, float_layernorm, int_layernorm, layernorm_shape, real_layernorm
from .matmul import BIAS, REQUANT_ENTRY, float_matmul, int_matmul, matmul_shape, real_matmul
from .names import Op
from .output import output_shape
from .pool import float_maxpool, int_maxpool, maxpool_shape
from .relu import float_relu, int_relu
from .reshape import float_reshape, int_reshape, reshape_shape
from .semantics import no_arithmetic, same_as_operand
from .shapes import same_shape
from .slice import float_slice, int_slice, slice_shape
from .softmax import (
    SOFTMAX_ROW_LIMIT,
    SOFTMAX_SCALES,
    ZEROS,
    float_softmax,
    int_softmax,
    real_softmax,
    softmax_shape,
)
from .spec import FREE, NAME, SHARES_OPERAND, OpSpec, Place, Role, ScaleRule
from .weight import float_weight, int_weight, weight_levels, weight_shape


def _table() -> dict[Op, OpSpec]:
    entries = [
        OpSpec(Op.INPUT, arity=0, builder="input", attrs=NAME, shape=input_shape,
               role=Role.SOURCE, place=Place.OWN, scale=FREE,
               evaluate=float_input, interpret=int_input, real=no_arithmetic),
        OpSpec(Op.WEIGHT, arity=0, builder="weight", attrs={**NAME, "bits": 8},
               shape=weight_shape, role=Role.SOURCE, place=Place.OWN, scale=FREE, levels=weight_levels,
               evaluate=float_weight, interpret=int_weight, real=no_arithmetic),
        OpSpec(Op.MATMUL, arity=2, builder="matmul",
               attrs={"transpose_b": False, "factor": 1.0, "bias": None},
               shape=matmul_shape, role=Role.COMPUTE, place=Place.OWN, scale=FREE,
               constants=(BIAS, REQUANT_ENTRY),
               evaluate=float_matmul, interpret=int_matmul, real=real_matmul),
        OpSpec(Op.SOFTMAX, arity=1, builder="softmax", attrs={"causal": False}, shape=softmax_shape,
               role=Role.COMPUTE, place=Place.OWN, limits=(SOFTMAX_ROW_LIMIT,), scale=SOFTMAX_SCALES,
               constants=(ZEROS,),
               evaluate=float_softmax, interpret=int_softmax, real=real_softmax),
        OpSpec(Op.ADD, arity=2, builder="add", shape=add_shape,
               role=Role.COMPUTE, place=Place.OWN, scale=ScaleRule(covers=(0, 1)), tolerance=2,
               evaluate=float_add, interpret=int_add, real=real_add),
        OpSpec(Op.RELU, arity=1, builder="relu", shape=same_shape,
               role=Role.VIEW, place=Place.HOSTS_OPERAND, scale=SHARES_OPERAND,
               fuses_into=(Op.MATMUL, Op.ADD, Op.CONV2D),
               evaluate=float_relu, interpret=int_relu, real=no_arithmetic),
        OpSpec(Op.TABLE, arity=1, builder="table", attrs={"fn": ""}, shape=table_shape,
               role=Role.COMPUTE, place=Place.OWN, scale=FREE, tolerance=2, constants=(ENTRIES,),
               clips_input=True, evaluate=float_table, interpret=int_table, real=real_table),
        OpSpec(Op.CONCAT, arity=2, builder="concat_rows", shape=concat_shape,
               role=Role.VIEW, place=Place.STACKS_OPERANDS, scale=ScaleRule(joins=(0, 1)),
               evaluate=float_concat, interpret=int_concat, real=no_arithmetic),
        OpSpec(Op.SLICE, arity=1, builder="slice_rows", attrs={"start": None, "count": None},
               shape=slice_shape, role=Role.VIEW, place=Place.VIEW_OF_OPERAND, scale=SHARES_OPERAND,
               evaluate=float_slice, interpret=int_slice, real=no_arithmetic),
        OpSpec(Op.ARGMAX, arity=1, builder="argmax", shape=argmax_shape,
               role=Role.COMPUTE, place=Place.OWN_LAST, scale=FREE, scaled=False,
               evaluate=float_argmax, interpret=int_argmax, real=no_arithmetic),
        OpSpec(Op.CONV2D, arity=2, builder="conv2d", attrs={"window": None, "factor": 1.0, "bias": None,
                                                                 "per_channel": False},
               shape=conv2d_shape, role=Role.COMPUTE, place=Place.OWN, scale=FREE,
               constants=(CONV_BIAS, PADDING_ZEROS, CHANNEL_TABLE, DEPTHWISE_DIAGONALS, SHARED_TAPS),
               evaluate=float_conv2d, interpret=int_conv2d, real=real_conv2d),
        OpSpec(Op.MAXPOOL, arity=1, builder="maxpool2d", attrs={"window": None}, shape=maxpool_shape,
               role=Role.COMPUTE, place=Place.OWN, scale=SHARES_OPERAND,
               evaluate=float_maxpool, interpret=int_maxpool, real=no_arithmetic),
        OpSpec(Op.RESHAPE, arity=1, builder="reshape", attrs={"count": None}, shape=reshape_shape,
               role=Role.VIEW, place=Place.VIEW_OF_OPERAND, scale=SHARES_OPERAND,
               evaluate=float_reshape, interpret=int_reshape, real=no_arithmetic),
        OpSpec(Op.LAYERNORM, arity=1, builder="layernorm", attrs={"eps": 1e-5, "gain": 1.0, "bias": None},
               shape=layernorm_shape, role=Role.COMPUTE, place=Place.OWN, scale=FREE, tolerance=2,
               limits=(LN_ROW_LIMIT,), constants=(BIAS_ROW,),
               evaluate=float_layernorm, interpret=int_layernorm, real=real_layernorm),
        OpSpec(Op.EMBEDDING, arity=2, builder="embedding", shape=embedding_shape,
               role=Role.COMPUTE, place=Place.OWN, scale=EMBEDDING_SCALES, limits=(TABLE_ROWS_LIMIT,),
               external=(1,),
               evaluate=float_embedding, interpret=int_embedding, real=no_arithmetic),
        OpSpec(Op.OUTPUT, arity=1, builder="output", attrs=NAME, shape=output_shape,
               role=Role.SINK, place=Place.NOWHERE, scale=SHARES_OPERAND,
               evaluate=same_as_operand, interpret=same_as_operand, real=no_arithmetic),
    ]
    return {entry.op: entry for entry in entries}


OPS: dict[Op, OpSpec] = _table()
"""The table: every :class:`~compiler.ops.names.Op` and its :class:`~compiler.ops.spec.OpSpec`. Passes look an
entry up when they use it (``OPS[node.op]``), never keep a copy, so a test may substitute an
entry."""

assert set(OPS) == set(Op), "every operation has an entry in the table"
