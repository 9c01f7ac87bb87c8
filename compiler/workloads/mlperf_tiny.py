"""MLPerf Tiny's convolutional networks written in PyTorch (issue 25), for compiling unchanged with
``from_torch``, and the per-layer table of a compiled one.

* :func:`resnet8`: image classification, 32 x 32 x 3, as the benchmark's Keras reference model
  (``resnet_v1_eembc``): conv 3x3 16 + BN + ReLU; three stacks of 16, 32, 64 filters (two
  conv 3x3 + BN, the first of stacks 2 and 3 of stride 2, a 1 x 1 convolution of stride 2 as
  the shortcut of stacks 2 and 3, a residual add and ReLU); global average pool, dense 10
  (the softmax left out: the logits are compared). 78,042 parameters, 12.5 M multiply-adds
  in the convolutions. Keras pads ``same`` with stride 2 on the bottom and right only;
  PyTorch's symmetric padding 1 gives the same output sizes.
* :func:`ds_cnn`: keyword spotting, 49 x 10 x 1 (MFCC frames x coefficients), as the
  benchmark's ``ds_cnn`` model: conv 10x4 of stride 2 to 64 channels + BN + ReLU (25 x 5),
  four depthwise-separable blocks (depthwise 3x3 + BN + ReLU, pointwise 1x1 64 -> 64 + BN +
  ReLU), global average pool, dense 12.

CIFAR-10 and Speech Commands are not reachable offline, so the weights are PyTorch's default
initialisation under a seed and the BatchNorm statistics are drawn to look trained
(:func:`realistic_batchnorm`): running means and variances such that a layer's output is
roughly normalised, gains and shifts near 1 and 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sim.spec import latency

if TYPE_CHECKING:
    from torch import nn

    from ..program import Program

RESNET8_SHAPE = (3, 32, 32)
"""ResNet-8's input (C, H, W)."""
DS_CNN_SHAPE = (1, 49, 10)
"""DS-CNN's input (C, H, W): 49 MFCC frames of 10 coefficients."""
CORTEX_M4_RESNET8_MS = 222.0
"""ResNet-8 on a Cortex-M4 at 120 MHz, the MLPerf Tiny v1.1 reference figure (issue 25)."""


def resnet8(seed: int = 0) -> nn.Module:
    """ResNet-8 (module docstring) with seeded weights and realistic BatchNorm statistics, in
    eval mode."""
    import torch
    from torch import nn

    class Stack(nn.Module):
        def __init__(self, cin: int, cout: int, stride: int):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, padding=1)
            self.bn2 = nn.BatchNorm2d(cout)
            self.shortcut = nn.Conv2d(cin, cout, 1, stride=stride) if stride != 1 else None

        def forward(self, x):
            y = torch.relu(self.bn1(self.conv1(x)))
            y = self.bn2(self.conv2(y))
            if self.shortcut is not None:
                x = self.shortcut(x)
            return torch.relu(x + y)

    class ResNet8(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 16, 3, padding=1)
            self.bn = nn.BatchNorm2d(16)
            self.stack1 = Stack(16, 16, 1)
            self.stack2 = Stack(16, 32, 2)
            self.stack3 = Stack(32, 64, 2)
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(64, 10)

        def forward(self, x):
            x = torch.relu(self.bn(self.conv(x)))
            x = self.stack3(self.stack2(self.stack1(x)))
            return self.fc(torch.flatten(self.pool(x), 1))

    torch.manual_seed(seed)
    model = ResNet8()
    realistic_batchnorm(model, RESNET8_SHAPE, seed)
    return model.eval()


def ds_cnn(seed: int = 0) -> nn.Module:
    """DS-CNN (module docstring) with seeded weights and realistic BatchNorm statistics, in eval
    mode."""
    import torch
    from torch import nn

    def separable() -> list[nn.Module]:
        return [nn.Conv2d(64, 64, 3, padding=1, groups=64), nn.BatchNorm2d(64), nn.ReLU(),
                nn.Conv2d(64, 64, 1), nn.BatchNorm2d(64), nn.ReLU()]

    torch.manual_seed(seed)
    model = nn.Sequential(
        nn.Conv2d(1, 64, (10, 4), stride=2, padding=(5, 1)), nn.BatchNorm2d(64), nn.ReLU(),
        *separable(), *separable(), *separable(), *separable(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 12))
    realistic_batchnorm(model, DS_CNN_SHAPE, seed)
    return model.eval()


def realistic_batchnorm(model: nn.Module, shape: Sequence[int], seed: int) -> None:
    """Give every BatchNorm2d the statistics training would have left: run a batch of 32
    seeded normal inputs through the model in training mode with momentum 1 (each running mean
    and variance becomes that batch's, so every layer's output is about normalised), then
    draw gains in [0.5, 1.5] and shifts in [-0.2, 0.2] (seeded)."""
    import torch
    from torch import nn

    norms = [m for m in model.modules() if isinstance(m, nn.BatchNorm2d)]
    generator = torch.Generator().manual_seed(seed)
    for bn in norms:
        bn.momentum = 1.0
    model.train()
    with torch.no_grad():
        model(torch.randn(32, *shape, generator=generator))
        for bn in norms:
            bn.weight.uniform_(0.5, 1.5, generator=generator)
            bn.bias.uniform_(-0.2, 0.2, generator=generator)
            bn.momentum = 0.1
    model.eval()


@dataclass(frozen=True)
class LayerRow:
    """One node of a compiled network: its multiply-adds, instructions, cycles on the serial
    machine and MXU utilisation (useful multiply-adds over T x T x cycles)."""

    node: int
    name: str
    macs: int
    instructions: int
    cycles: int
    utilisation: float


def useful_macs(program: Program, nid: int) -> int:
    """The multiply-adds a node needs (a convolution: output values x taps (x C when not
    depthwise); a matmul: rows x K x N), none for the rest."""
    from ..ops import Op
    from ..ops.conv2d import window_of

    node = program.graph.nodes[nid]
    if node.op is Op.CONV2D:
        w = window_of(node)
        per_output = w.kh * w.kw * (1 if w.depthwise else w.C)
        return node.shape[0] * node.shape[1] * per_output
    if node.op is Op.MATMUL:
        a = program.graph.nodes[node.ins[0]]
        return a.shape[0] * a.shape[1] * node.shape[1]
    return 0


def layer_table(program: Program, images: int) -> list[LayerRow]:
    """Per node that wrote instructions, per image: multiply-adds, instructions and cycles (the
    latencies of the instructions its step wrote, ``Program.owners``; on the serial machine
    they sum to the program's cycles less the front end's and HALT's), utilisation."""
    t2 = program.machine.T ** 2
    cycles: dict[int, int] = {}
    count: dict[int, int] = {}
    for ins, owner in zip(program.code, program.owners, strict=True):
        cycles[owner] = cycles.get(owner, 0) + latency(ins.spec, ins.fields, program.machine)
        count[owner] = count.get(owner, 0) + 1
    rows = []
    for nid in sorted(k for k in cycles if k >= 0):
        node = program.graph.nodes[nid]
        macs = useful_macs(program, nid)
        label = f"{node.op} {node.window}".strip() if node.window else str(node.op)
        rows.append(LayerRow(nid, label, macs // images, count[nid] // images, cycles[nid] // images,
                             macs / (t2 * cycles[nid])))
    return rows


MODELS = {"resnet8": (resnet8, RESNET8_SHAPE), "ds_cnn": (ds_cnn, DS_CNN_SHAPE)}
"""The models by name: (builder, input shape (C, H, W))."""


@dataclass(frozen=True)
class Measured:
    """One model compiled from PyTorch and run on one image (:func:`measure`).

    Attributes:
        model, params: what ran where. program, lowered: the compiled program and the front
            end's graph (``feed``/``unpack``). image: the input (1, C, H, W), float64.
        cycles: the reference machine's cycles (the RTL's are the same). launches: programs
            the run took (:meth:`compiler.program.Program.launches`). equal: the outputs equal
            the integer interpreter's, value for value. error: relative L2 distance of the
            logits from PyTorch's. macs: the network's multiply-adds. rows: :func:`layer_table`.
        mxu: the run's ``mxu`` counter, summed over the launches: the cycles of the matrix
            unit's instructions (GA2.md section 5).
    """

    model: str
    params: object
    program: object
    lowered: object
    image: object
    cycles: int
    launches: int
    equal: bool
    error: float
    macs: int
    rows: list[LayerRow]
    mxu: int

    @property
    def utilisation(self) -> float:
        """Useful multiply-adds over T x T x cycles."""
        return self.macs / (self.params.T ** 2 * self.cycles)


def measure(name: str, params: object, seed: int = 0, per_channel: bool = True) -> Measured:
    """Build model ``name`` (:data:`MODELS`) with weights of ``seed``, lower it with
    ``from_torch(model, shape, batch=1, per_channel=...)``, compile it for ``params``
    (activations spilled and launches as needed), calibrate on 8 seeded normal images and run
    a ninth on the reference machine; compare with the integer interpreter and PyTorch."""
    import numpy as np

    from ..frontend import from_torch, run_torch
    from ..interpret import interpret

    build, shape = MODELS[name]
    model = build(seed)
    lowered = from_torch(model, shape, batch=1, params=params, per_channel=per_channel)
    rng = np.random.default_rng(seed)
    program = lowered.compile([lowered.feed(rng.normal(size=(1, *shape))) for _ in range(8)], launches=True)
    image = rng.normal(size=(1, *shape))
    outcome = program.run(lowered.feed(image), warn=False)
    (out,) = lowered.outputs
    want = interpret(program, lowered.feed(image))[program.graph.outputs()[0].id]
    (got,) = lowered.unpack(outcome)
    (reference,) = run_torch(model, image)
    rows = layer_table(program, 1)
    return Measured(name, params, program, lowered, image, outcome.counters.cycles, len(program.launches()),
                    bool((outcome.outputs[out].ints == want).all()),
                    float(np.linalg.norm(got - reference) / np.linalg.norm(reference)),
                    sum(r.macs for r in rows), rows, outcome.counters.mxu)
