"""The spec's formulas as pipelined hardware: a register after every multiply.

:mod:`sim.spec` writes region extents (and latencies) as formulas that take their arithmetic
as an argument (:class:`sim.spec.Arith`), so that they evaluate on Python ints and on Amaranth
values alike. Evaluated on plain Amaranth values (:data:`HDL`), an extent such as
``(M-1)*lda + K`` is one combinational path: subtract, multiply (an ECP5 DSP, about 4 ns), add.
That does not fit in a 10 ns cycle. :func:`evaluate` evaluates the same formula on
:class:`Term`\\ s instead (:data:`PIPELINED`): values that know the pipeline stage they are
valid in. Additions, subtractions and multiplexers stay combinational; a multiply of two terms
gets registered operands and a registered product; a multiply by a constant becomes shifts and
adds (``3 * ceil(len/4)`` in SM's latency); operands of different stages are aligned with delay
registers. The formula's text is not touched.

:func:`depth` gives the number of stages a formula takes, without building anything.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from amaranth.hdl import Module, Mux, Signal, Value

from sim import spec


class Pipeline:
    """Where a formula's registers go: a module and the enable they load on.

    ``Pipeline(None)`` is a dry run: terms carry stages only, no hardware is built.
    """

    def __init__(self, m: Module | None, en: Value | int = 1, name: str = "p"):
        self.m = m
        self.en = en
        self.name = name
        self._count = 0
        self._delays: dict[tuple[int, int], Value] = {}

    @property
    def dry(self) -> bool:
        return self.m is None

    def register(self, value: Value | None) -> Value | None:
        """value, one cycle later (loaded when en)."""
        if self.dry:
            return None
        value = Value.cast(value)
        reg = Signal(value.shape(), name=f"{self.name}_r{self._count}")
        self._count += 1
        with self.m.If(self.en):
            self.m.d.sync += reg.eq(value)
        return reg

    def input(self, value: Value | None, stage: int = 0) -> Term:
        """A register output (or a formula input) valid at ``stage``."""
        return Term(self, value, stage, fresh=True)


class Term:
    """A value in a pipelined formula: valid in pipeline stage ``stage`` (None for a constant,
    valid in every stage); ``fresh`` when it is a register output (no logic after its last
    register)."""

    def __init__(self, pipe: Pipeline, value: Value | None, stage: int | None, fresh: bool):
        self.pipe = pipe
        self.value = value
        self.stage = stage
        self.fresh = fresh
        self._later: Term | None = None   # this term one stage later (its delay register)

    def at(self, stage: int) -> Term:
        """This term delayed to a later stage (a term's delay registers serve all its uses)."""
        if self.stage is None:
            return Term(self.pipe, self.value, stage, fresh=True)
        if stage < self.stage:
            raise ValueError(f"cannot move a term from stage {self.stage} back to stage {stage}")
        term = self
        while term.stage < stage:
            if term._later is None:
                term._later = Term(self.pipe, self.pipe.register(term.value), term.stage + 1, fresh=True)
            term = term._later
        return term

    def registered(self) -> Term:
        """A register output: this term if fresh, else its value registered."""
        if self.fresh:
            return self
        return Term(self.pipe, self.pipe.register(self.value), self.stage + 1, fresh=True)

    def _combine(self, others: tuple[Any, ...], fn: Callable[..., Value], *, multiply: bool = False) -> Term:
        """fn over this term and the others (terms or ints), at the latest of their stages. A
        multiply takes registered operands and registers its product."""
        operands = [self, *others]
        if multiply:
            operands = [o.registered() if isinstance(o, Term) else o for o in operands]
        stages = [o.stage for o in operands if isinstance(o, Term) and o.stage is not None]
        stage = max(stages) if stages else None
        values = [(o.at(stage) if stage is not None else o).value if isinstance(o, Term) else o
                  for o in operands]
        out = Term(self.pipe, None if self.pipe.dry else fn(*values), stage, fresh=stage is None)
        return out.registered() if multiply and stage is not None else out

    def __add__(self, o: Any) -> Term:
        return self._combine((o,), lambda a, b: a + b)

    def __radd__(self, o: Any) -> Term:
        return self._combine((o,), lambda a, b: b + a)

    def __sub__(self, o: Any) -> Term:
        return self._combine((o,), lambda a, b: a - b)

    def __rsub__(self, o: Any) -> Term:
        return self._combine((o,), lambda a, b: b - a)

    def __mul__(self, o: Any) -> Term:
        if isinstance(o, int):
            return self._combine((o,), _times_constant)
        return self._combine((o,), lambda a, b: a * b, multiply=True)

    def __rmul__(self, o: Any) -> Term:
        return self.__mul__(o)

    def __floordiv__(self, o: Any) -> Term:
        if not isinstance(o, int):
            raise TypeError("a pipelined formula divides by constants only")
        return self._combine((o,), lambda a, b: a // b)


def _times_constant(value: Value, factor: int) -> Value:
    """value * factor as shifts and adds (``3 * x`` is ``x + (x << 1)``): Yosys would otherwise
    give a constant factor a DSP block, a combinational 4 ns on the ECP5, unregistered."""
    if factor < 0:
        raise ValueError(f"a pipelined formula multiplies by non-negative constants only, not {factor}")
    value = Value.cast(value)
    terms = [value << k for k in range(factor.bit_length()) if factor >> k & 1]
    out = terms[0] if terms else Value.cast(0)
    for term in terms[1:]:
        out = out + term
    return out


class HdlArith:
    """:class:`sim.spec.Arith` on plain Amaranth values: one combinational path per formula
    (hw/stub.py's latency; the checker uses :class:`PipelinedArith`)."""

    @staticmethod
    def max(a: Any, b: Any) -> Value:
        return Mux(a > b, a, b)

    @staticmethod
    def select(cond: Any, if_true: Any, if_false: Any) -> Value:
        return Mux(cond, if_true, if_false)

    @staticmethod
    def ceil_div(a: Any, n: int) -> Value:
        return (a + (n - 1)) // n

    @staticmethod
    def const(name: str) -> int:
        return spec.TIMING_CONSTANTS[name]


HDL = HdlArith()
"""The arithmetic of plain Amaranth values (:class:`HdlArith`)."""


class PipelinedArith(HdlArith):
    """:class:`sim.spec.Arith` on :class:`Term`\\ s (and ints: a formula's constants): the
    selects and maxima are multiplexers at the latest of their operands' stages; the operators
    (and so ``ceil_div``) are :class:`Term`'s."""

    @staticmethod
    def max(a: Any, b: Any) -> Any:
        if isinstance(a, Term):
            return a._combine((b,), lambda x, y: Mux(x > y, x, y))
        if isinstance(b, Term):
            return b._combine((a,), lambda y, x: Mux(x > y, x, y))
        return max(a, b)

    @staticmethod
    def select(cond: Any, if_true: Any, if_false: Any) -> Any:
        if not isinstance(cond, Term):
            return if_true if cond else if_false
        return cond._combine((if_true, if_false), lambda c, t, f: Mux(c, t, f))


PIPELINED = PipelinedArith()
"""The arithmetic of pipelined terms (:class:`PipelinedArith`)."""


def evaluate(pipe: Pipeline, fn: Callable[..., Any], fields: Mapping[str, Term], *args: Any) -> Term:
    """``fn(PIPELINED, fields, *args)`` (a spec formula) on terms of ``pipe``; the result is a
    register output, or a constant (stage None) when the formula does not depend on its fields."""
    out = fn(PIPELINED, fields, *args)
    if not isinstance(out, Term):
        return Term(pipe, None if pipe.dry else Value.cast(out), None, fresh=True)
    return out.registered()


def depth(fn: Callable[..., Any], field_names: list[str], *args: Any) -> int:
    """Stages ``evaluate`` takes for this formula, its inputs at stage 0 (0: the result is an
    input, or a constant)."""
    pipe = Pipeline(None)
    return evaluate(pipe, fn, {name: pipe.input(None) for name in field_names}, *args).stage or 0
