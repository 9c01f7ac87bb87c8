"""The lowerings, registered against the operations they lower: :data:`LOWERINGS`.

Each operation of the table (:mod:`compiler.ops`) has one
:class:`~compiler.lowering.emitter.Lowering` here; the pipeline gives the table to emission
(:mod:`compiler.emit`), which looks a node's lowering up by its operation, never by a name
compared in its own code. A new operation's lowering is a module of this package and one entry
below; ``tests/compiler/lowering/test_table.py`` fails while an operation has none.
"""

from __future__ import annotations

from ..addstep import add_step
from ..convstep import conv_step
from ..ops import Op
from ..streaming import lower_matmul_step
from .activation import lower_table
from .add import lower_add
from .argmax import lower_argmax
from .conv import lower_conv2d, lower_maxpool, lower_reshape
from .embedding import lower_embedding
from .emitter import Lowering
from .layernorm import lower_layernorm
from .matmul import lower_matmul
from .memory import lower_load, lower_output
from .relu import lower_relu
from .softmax import lower_softmax
from .view import lower_view

LOWERINGS: dict[Op, Lowering] = {
    Op.INPUT: Lowering(lower_load),
    Op.WEIGHT: Lowering(lower_load),
    Op.MATMUL: Lowering(lower_matmul, step=lower_matmul_step),
    Op.SOFTMAX: Lowering(lower_softmax),
    Op.ADD: Lowering(lower_add, step=add_step),
    Op.RELU: Lowering(lower_relu),
    Op.TABLE: Lowering(lower_table),
    Op.CONCAT: Lowering(lower_view),
    Op.SLICE: Lowering(lower_view),
    Op.ARGMAX: Lowering(lower_argmax),
    Op.LAYERNORM: Lowering(lower_layernorm),
    Op.EMBEDDING: Lowering(lower_embedding),
    Op.OUTPUT: Lowering(lower_output),
    Op.CONV2D: Lowering(lower_conv2d, step=conv_step),
    Op.MAXPOOL: Lowering(lower_maxpool),
    Op.RESHAPE: Lowering(lower_reshape),
}
"""Every operation's lowering. Emission looks an entry up when it uses it
(``LOWERINGS[node.op]``), never keeps a copy, so a test may substitute an entry."""

assert set(LOWERINGS) == set(Op), "every operation has a lowering"
