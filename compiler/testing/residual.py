"""A ResNet-style residual block with a ReLU after the sum, written in PyTorch:

    y = relu(x + lin2(relu(lin1(x))))          # nn.Linear, no bias

The ReLU after the sum fuses into the VADD that forms the sum (its relu field, GA2.md section
3), so the block compiles to two matmuls and one VADD. Before VADD had that field, the only
way to write the block for GA-2 was to carry the sum through a third, identity ``nn.Linear``
whose requantizer applies the ReLU (``carry=True``): an extra MM per tile and an extra RQ.
docs/add-an-instruction.md shows both listings and their cycles; tests/compiler/testing/
test_residual.py runs the block on the reference machine, the interpreter, PyTorch and the RTL.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from sim.spec import Params


@dataclass
class Compiled:
    """A compiled residual block: the PyTorch module, its lowering, the program and one feed."""

    module: Any
    lowered: Any
    program: Any
    x: np.ndarray
    feed: Any


def residual_block(dim: int, seed: int = 0, carry: bool = False):
    """The block as an ``nn.Module`` on (rows, dim) float inputs, weights from torch.manual_seed(seed).

    With ``carry``, the sum goes through an identity ``nn.Linear`` before the ReLU (the way to
    write it for a machine whose VADD has no relu field).
    """
    import torch
    from torch import nn

    class Residual(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin1 = nn.Linear(dim, dim, bias=False)
            self.lin2 = nn.Linear(dim, dim, bias=False)
            if carry:
                self.carry = nn.Linear(dim, dim, bias=False)
                with torch.no_grad():
                    self.carry.weight.copy_(torch.eye(dim))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            total = x + self.lin2(torch.relu(self.lin1(x)))
            return torch.relu(self.carry(total) if carry else total)

    torch.manual_seed(seed)
    return Residual().eval()


def compile_residual(dim: int = 8, rows: int = 4, seed: int = 0, carry: bool = False, samples: int = 16,
                     *, params: Params) -> Compiled:
    """Lower the block from PyTorch, calibrate on ``samples`` normal (rows, dim) inputs and compile;
    ``x`` and ``feed`` are one more input drawn after them (numpy default_rng(seed))."""
    from compiler import compile_graph
    from compiler.frontend import from_torch

    module = residual_block(dim, seed, carry)
    lowered = from_torch(module, (rows, dim), params=params)
    rng = np.random.default_rng(seed)
    calibration = [lowered.feed(rng.normal(size=(rows, dim))) for _ in range(samples)]
    program = compile_graph(lowered.graph, calibration, params=params)
    x = rng.normal(size=(rows, dim))
    return Compiled(module, lowered, program, x, lowered.feed(x))
