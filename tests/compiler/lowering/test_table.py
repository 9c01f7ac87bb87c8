"""compiler/lowering/table.py: every operation has its lowering, registered against it, and the
table of operations knows nothing of them."""

import dataclasses

from compiler.addstep import add_step
from compiler.convstep import conv_step
from compiler.lowering.table import LOWERINGS, Lowering
from compiler.ops import OPS, Op, OpSpec
from compiler.streaming import lower_matmul_step


def test_every_operation_has_a_lowering_and_only_those():
    assert set(LOWERINGS) == set(Op)
    assert all(isinstance(lowering, Lowering) and callable(lowering.lower) for lowering in LOWERINGS.values())


def test_only_a_matmul_a_convolution_and_an_add_place_their_own_operands():
    """A matmul's step may stream its operands (compiler/streaming.py), a convolution's and an
    add's may read and write them in external memory in bands (compiler/convstep.py,
    compiler/addstep.py); every other operation's operands are loaded whole by emission."""
    assert {op for op, lowering in LOWERINGS.items() if lowering.step is not None} == {Op.MATMUL, Op.CONV2D,
                                                                                         Op.ADD}
    assert LOWERINGS[Op.MATMUL].step is lower_matmul_step
    assert LOWERINGS[Op.CONV2D].step is conv_step and LOWERINGS[Op.ADD].step is add_step


def test_an_entry_of_the_table_of_operations_holds_no_lowering():
    """What an operation is (compiler/ops/) is apart from how it lowers: no field of an entry is
    a function of the back end's."""
    fields = {f.name for f in dataclasses.fields(OpSpec)}
    assert not fields & {"lower", "blocked", "step"}
    for spec in OPS.values():
        hooks = [getattr(spec, f) for f in fields if callable(getattr(spec, f))]
        assert all(not getattr(h, "__module__", "").startswith(("compiler.lowering", "compiler.streaming"))
                   for h in hooks), spec.op
