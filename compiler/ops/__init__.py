"""What each of Capra's operations is: the table of operations (:mod:`.table`), at the bottom of
the compiler, importing no pass and no lowering.

An operation's kind is an :class:`Op`; its entry in :data:`OPS`, an :class:`OpSpec`, says as
data and hooks all that the compiler's passes need to know about it:

=========== ===============================================================================
field       what it decides, and which pass reads it
=========== ===============================================================================
arity       how many operands (the IR builders, the text form's parser)
builder     the :class:`compiler.ir.Graph` method that builds it (named in messages)
attrs       the node fields the operation uses, with defaults (the text form, CSE)
shape       the shape rule: operand checks and the result's (rows, cols)
role        source, compute, view or sink (:class:`Role`: lifetimes, layout, emission, CSE)
place       where its result lives (:class:`Place`: placement)
scale       which scale group it joins, what it must hold, what the hardware pins
            (:class:`ScaleRule`: scale planning)
scaled      its result is int8 levels with a scale; False: row indices (argmax)
levels      the largest level of its integer encoding (127; 7 for an int4 weight)
fuses_into  the operations whose last instruction can carry it (relu fusion: RQ's or VADD's relu)
limits      the unit limits it must respect (:class:`Limit`: the limits pass)
constants   the external regions it reads besides its operands (:class:`Constant`: layout,
            the host's image)
clips_input its meaning sees its operand clipped to int8 (calibration's notes)
evaluate    its float meaning (calibration, the float reference)
interpret   its integer meaning (the interpreter)
real        its real-number meaning in levels, or no arithmetic (the stage-wise check)
tolerance   how many levels the stage-wise check allows
=========== ===============================================================================

The package, one module a concern: the operations' names (:mod:`.names`), the form of an
entry and its traits (:mod:`.spec`), what the shape rules and the meanings share
(:mod:`.shapes`, :mod:`.semantics`), one module per operation (:mod:`.input`, :mod:`.weight`,
:mod:`.matmul`, :mod:`.softmax`, :mod:`.add`, :mod:`.relu`, :mod:`.activation` for the table
activation, :mod:`.concat`, :mod:`.slice`, :mod:`.argmax`, :mod:`.output`) and the table
itself (:mod:`.table`). How each operation lowers to GA-2 instructions is the back end's:
:mod:`compiler.lowering`.
"""

from .names import Op
from .softmax import PROBABILITY_SCALE, SOFTMAX_IN_SCALE
from .spec import FREE, NAME, RESULT, SHARES_OPERAND, Constant, Limit, OpSpec, Pin, Place, Role, ScaleRule
from .table import OPS

__all__ = ["FREE", "NAME", "OPS", "PROBABILITY_SCALE", "RESULT", "SHARES_OPERAND", "SOFTMAX_IN_SCALE",
           "Constant", "Limit", "Op", "OpSpec", "Pin", "Place", "Role", "ScaleRule"]
