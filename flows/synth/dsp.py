"""The DSP budget: which products of the systolic array are built from LUTs on the ECP5-85F.

The core's multipliers, each at most 18 x 18 bits and so one MULT18X18D when Yosys maps it:

* the systolic array: T*T products of two int8 (hw/systolic.py);
* the requantizer: Requantizer.PARTIAL_PRODUCTS (4) per lane, LANES lanes (hw/requant.py);
* the illegal-program checks: one per product of two fields in the spec's region extents
  and latencies (hw/checker.py evaluates them with a register after every such multiply);
* the LayerNorm unit: its squares, x * A and its once-a-row products, cut into 18 x 18 pieces
  (``hw.layernorm.LayerNormUnit.multipliers``); the DMA: a GATHER's row offset (one).

The 85F has 156. A machine that needs more (T = 16: 256 + 64 + 4) keeps the requantizer's and
the checks' products in DSP blocks (a 32 x 24 product in LUTs would cost several hundred LUTs
a lane) and builds whole rows of the array from LUTs instead, the last rows first: Yosys's
``booth`` pass maps their products to Booth-encoded adder trees (about 170 LUT4 each,
measured) before ``synth_ecp5`` runs and would give them DSP blocks. The rows are found by the name
of the multiplier's output in the flattened netlist (``hw.systolic.PRODUCT_NAME``).
"""

from __future__ import annotations

from typing import Any

from hw.dma import DMA
from hw.layernorm import LayerNormUnit
from hw.requant import Requantizer
from hw.systolic import PRODUCT_NAME
from sim import spec
from sim.spec import Params

from .report import PART_TOTALS

ARRAY_PATH = "core.mxu.array"
"""The systolic array's instance path in the flattened netlist of the synthesis top."""


class _Probe:
    """A value in a spec formula that counts the products of two values (a multiplier each)."""

    def __init__(self, count: list[int]):
        self.count = count

    def __add__(self, other: Any) -> _Probe:
        return self

    __radd__ = __sub__ = __rsub__ = __floordiv__ = __add__

    def __mul__(self, other: Any) -> _Probe:
        if isinstance(other, _Probe):
            self.count[0] += 1
        return self

    __rmul__ = __mul__


class _ProbeArith:
    """:class:`sim.spec.Arith` on probes: selects and maxima keep both sides' products."""

    def __init__(self, count: list[int]):
        self.count = count

    def max(self, a: Any, b: Any) -> _Probe:
        return _Probe(self.count)

    def select(self, cond: Any, if_true: Any, if_false: Any) -> _Probe:
        return _Probe(self.count)

    def ceil_div(self, a: Any, n: int) -> _Probe:
        return _Probe(self.count)

    def const(self, name: str) -> int:
        return spec.TIMING_CONSTANTS[name]


def check_multipliers(params: Params) -> int:
    """Products of two fields in the spec's region extents and latencies: the multipliers of
    the checker (4: MM's (M-1)*lda, (N-1)*ldb, (K-1)*ldb and (M-1)*ldc; 4 more for MMRQ's at
    OVERLAP = 2), of the instructions the machine has."""
    count = [0]
    arith = _ProbeArith(count)
    for ispec in spec.instructions(params):
        fields = {name: _Probe(count) for name in ispec.field_names}
        for region in ispec.regions:
            region.formula(arith, fields)
        if ispec.counter is not None:
            ispec.latency_formula(arith, fields, params)
    return count[0]


def dsp_demand(params: Params) -> dict[str, int]:
    """The multipliers of the core by block (each one MULT18X18D when it is given one)."""
    chained = params.T if spec.built(spec.BY_NAME["MMRQ"], params) else 0   # MMRQ's lanes (hw/mxu.py)
    return {"array": params.T * params.T,
            "requantizer": Requantizer.PARTIAL_PRODUCTS * (params.LANES + chained),
            "checks": check_multipliers(params),
            "layernorm": LayerNormUnit.multipliers(params),
            "dma": DMA.MULTIPLIERS}


def lut_rows(params: Params, available: int = PART_TOTALS["MULT18X18D"]) -> int:
    """Rows of the array whose products are built from LUTs so that the rest fits ``available``
    DSP blocks (0 when everything fits).

    Raises:
        ValueError: the requantizer and the checks alone need more than ``available``.
    """
    demand = dsp_demand(params)
    rest = sum(demand.values()) - demand["array"]
    if rest > available:
        raise ValueError(f"the requantizer ({demand['requantizer']}), the checks ({demand['checks']}), the "
                         f"LayerNorm unit ({demand['layernorm']}) and the DMA ({demand['dma']}) need {rest} "
                         f"DSP blocks, more than the {available} of the part")
    excess = sum(demand.values()) - available
    return 0 if excess <= 0 else -(-excess // params.T)


def lut_products_commands(params: Params, rows: int, top: str, array_path: str = ARRAY_PATH) -> str:
    """Yosys commands, run on the design as read (before ``synth_ecp5``), that build the products
    of the array's last ``rows`` rows from LUTs: flatten, shrink the multipliers to their operands
    (``wreduce``: 8 x 8), then ``booth`` on those of the rows. ``array_path``: the array's
    instance path under ``top``. Empty for 0 rows."""
    if rows == 0:
        return ""
    # one pattern a row, joined into one selection (%u: each selection operator works on the
    # top of Yosys's selection stack only), then the multipliers driving those wires
    patterns = [f"w:{array_path}.{PRODUCT_NAME}{i}_*" for i in range(params.T - rows, params.T)]
    wires = " ".join([patterns[0], *(f"{p} %u" for p in patterns[1:])])
    return (f"hierarchy -top {top}; proc; flatten; opt_expr; opt_clean; wreduce; "
            f"booth {wires} %ci1 t:$mul %i")


def summary(params: Params) -> str:
    """One sentence: the demand by block, and the rows built from LUTs."""
    demand = dsp_demand(params)
    rows = lut_rows(params)
    text = (f"multipliers: {demand['array']} in the array, {demand['requantizer']} in the requantizer, "
            f"{demand['checks']} in the checks, {demand['layernorm']} in the LayerNorm unit, "
            f"{demand['dma']} in the DMA ({sum(demand.values())}; the part has {PART_TOTALS['MULT18X18D']})")
    if rows:
        text += f"; the array's last {rows} rows ({rows * params.T} products) built from LUTs (Booth)"
    return text + "."
