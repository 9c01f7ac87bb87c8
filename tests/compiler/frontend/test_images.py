"""The front end's images (issue 25; compiler/frontend/images.py): from_torch(model, (C, H, W),
batch=B) for Conv2d (kernels, strides, zero padding), BatchNorm2d folded, ReLU and ReLU6,
MaxPool2d, AvgPool2d, AdaptiveAvgPool2d(1), flatten into Linear, a residual add; the machine
equal to the integer interpreter, close to PyTorch; everything else refused naming the layer
and the attribute."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402

from compiler.frontend import UnsupportedModel, from_torch, run_torch  # noqa: E402
from compiler.frontend.images import from_rows, hwc_columns, to_rows  # noqa: E402
from compiler.interpret import interpret  # noqa: E402
from sim.spec import DEFAULT  # noqa: E402


class Block(nn.Module):
    """conv-bn-relu, max pool, a residual pair (conv-bn-relu6 ... + ReLU), avg pool, global
    average, flatten, linear."""

    def __init__(self, c: int = 2):
        super().__init__()
        self.c1 = nn.Conv2d(c, 8, 3, padding=1)
        self.b1 = nn.BatchNorm2d(8)
        self.pool = nn.MaxPool2d(2)
        self.c2 = nn.Conv2d(8, 8, (3, 1), padding=(1, 0), bias=False)
        self.b2 = nn.BatchNorm2d(8)
        self.six = nn.ReLU6()
        self.c3 = nn.Conv2d(8, 8, 1)
        self.avg = nn.AvgPool2d(2)
        self.c4 = nn.Conv2d(8, 6, 2, stride=1, padding="valid")
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(6, 5)

    def forward(self, x):
        h = self.pool(torch.relu(self.b1(self.c1(x))))
        r = self.c3(self.six(self.b2(self.c2(h))))
        h = torch.relu(h + r)
        h = self.c4(self.avg(h))
        return self.fc(torch.flatten(self.gap(h), 1))


def calibrated(model: nn.Module, shape: tuple[int, ...], batch: int, seed: int = 0):
    torch.manual_seed(seed)
    for bn in (m for m in model.modules() if isinstance(m, nn.BatchNorm2d)):
        bn.running_mean.uniform_(-0.3, 0.3)
        bn.running_var.uniform_(0.5, 2.0)
        bn.weight.data.uniform_(0.5, 1.5)
        bn.bias.data.uniform_(-0.2, 0.2)
    model.eval()
    lowered = from_torch(model, shape, batch=batch)
    rng = np.random.default_rng(seed)
    calibration = [lowered.feed(rng.normal(size=(batch, *shape))) for _ in range(6)]
    return lowered, lowered.compile(calibration), rng


def test_the_layout_helpers_by_hand():
    x = np.arange(2 * 3 * 2 * 2).reshape(2, 3, 2, 2)    # (B, C, H, W)
    rows = to_rows(x)
    assert rows.shape == (8, 3) and rows[1].tolist() == [1, 5, 9]   # image 0, pixel (0, 1), channels 0-2
    assert (from_rows(rows, x.shape) == x).all()
    w = np.arange(12).reshape(1, 12)    # columns (c, y, x) of C=3, H=2, W=2
    assert hwc_columns(w, (2, 2, 3)).ravel().tolist() == [0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11]


def test_a_block_of_every_layer_equals_the_interpreter_and_pytorch():
    torch.manual_seed(1)
    model = Block()
    lowered, program, rng = calibrated(model, (2, 8, 8), batch=3)
    ops = [node.op for node in lowered.graph.nodes]
    assert ops.count("conv2d") == 6 and ops.count("maxpool") == 1 and ops.count("reshape") == 1
    # the BatchNorms folded, relu6 a table
    assert ops.count("relu") == 2 and ops.count("table") == 1 and ops.count("add") == 1
    images = rng.normal(size=(3, 2, 8, 8))
    outcome = program.run(lowered.feed(images), warn=False)
    ints = interpret(program, lowered.feed(images))
    (name,) = lowered.outputs
    assert (outcome.outputs[name].ints == ints[program.graph.outputs()[0].id]).all()
    (got,) = lowered.unpack(outcome)
    (want,) = run_torch(model, images)
    assert got.shape == want.shape == (3, 5)
    assert np.linalg.norm(got - want) / np.linalg.norm(want) < 0.15


class Separable(nn.Module):
    """A depthwise-separable block as DS-CNN's: depthwise 3x3 + BN + ReLU, pointwise 1x1 + BN +
    ReLU, global average, linear."""

    def __init__(self, c: int = 6, stride: int = 1):
        super().__init__()
        self.dw = nn.Conv2d(c, c, 3, stride=stride, padding=1, groups=c, bias=False)
        self.b1 = nn.BatchNorm2d(c)
        self.pw = nn.Conv2d(c, 8, 1, bias=False)
        self.b2 = nn.BatchNorm2d(8)
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        h = torch.relu(self.b2(self.pw(torch.relu(self.b1(self.dw(x))))))
        return self.fc(torch.flatten(self.gap(h), 1))


@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("stride", [1, 2])
def test_a_depthwise_separable_block_equals_the_interpreter_and_pytorch(stride, per_channel):
    torch.manual_seed(3)
    model = Separable(stride=stride)
    for bn in (m for m in model.modules() if isinstance(m, nn.BatchNorm2d)):
        bn.running_mean.uniform_(-0.3, 0.3)
        bn.running_var.uniform_(0.5, 2.0)
    model.eval()
    lowered = from_torch(model, (6, 7, 5), batch=2, per_channel=per_channel)
    windows = [node.window for node in lowered.graph.nodes if node.op == "conv2d"]
    assert windows[0].endswith(" dw") and windows[2].endswith(" avg")   # the BN folded into the depthwise
    rng = np.random.default_rng(3)
    program = lowered.compile([lowered.feed(rng.normal(size=(2, 6, 7, 5))) for _ in range(6)])
    images = rng.normal(size=(2, 6, 7, 5))
    outcome = program.run(lowered.feed(images), warn=False)
    (name,) = lowered.outputs
    ints = interpret(program, lowered.feed(images))[program.graph.outputs()[0].id]
    assert (outcome.outputs[name].ints == ints).all()
    (got,) = lowered.unpack(outcome)
    (want,) = run_torch(model, images)
    assert np.linalg.norm(got - want) / np.linalg.norm(want) < 0.1


def test_a_partial_batch_of_images_is_padded():
    torch.manual_seed(2)
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 4 * 4, 3))
    lowered, program, rng = calibrated(model, (1, 4, 4), batch=4)
    two = rng.normal(size=(2, 1, 4, 4))
    fed = lowered.feed(two)
    assert fed.rows == 2 and next(iter(fed.values())).shape == (4 * 16, 1)
    (got,) = lowered.unpack(program.run(fed, warn=False))
    full = lowered.feed(np.concatenate([two, np.zeros((2, 1, 4, 4))]))
    (whole,) = lowered.unpack(program.run(full, warn=False))
    assert got.shape == (2, 3) and (got == whole[:2]).all()


def test_flatten_permutes_the_linear_weights_to_hwc():
    """PyTorch flattens (c, y, x); Capra's rows hold (y, x, c): the linear layer's columns follow,
    so a model whose linear weights pick single pixels computes the same thing."""
    model = nn.Sequential(nn.Flatten(), nn.Linear(2 * 2 * 3, 12, bias=False))
    with torch.no_grad():
        model[1].weight.copy_(torch.eye(12))
    lowered, program, rng = calibrated(model, (3, 2, 2), batch=1)
    x = rng.normal(size=(1, 3, 2, 2))
    (got,) = lowered.unpack(program.run(lowered.feed(x), warn=False))
    assert np.abs(got - x.reshape(1, 12)).max() < 0.05


def test_an_image_output_comes_back_as_images():
    model = nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.MaxPool2d(2))
    lowered, program, rng = calibrated(model, (2, 4, 6), batch=2)
    x = rng.normal(size=(2, 2, 4, 6))
    (got,) = lowered.unpack(program.run(lowered.feed(x), warn=False))
    (want,) = run_torch(model, x)
    assert got.shape == want.shape == (2, 4, 2, 3)
    assert np.abs(got - want).max() < 0.05 * np.abs(want).max()


def one_layer(layer: nn.Module) -> nn.Module:
    return nn.Sequential(nn.Conv2d(4, 4, 3, padding=1), layer)


REFUSED = [
    (nn.Sequential(nn.Conv2d(4, 4, 3, groups=2)), "0",
     "is groups=2; Capra lowers groups=1 and the depthwise convolution (groups = in_channels = "
     "out_channels)"),
    (nn.Sequential(nn.Conv2d(4, 8, 3, groups=4)), "0",
     "is groups=4 with out_channels=8 (a depth multiplier above 1)"),
    (nn.Sequential(nn.Conv2d(4, 4, 3, padding=1, padding_mode="reflect")), "0",
     "has padding_mode='reflect'; the padded image's border is zeros only"),
    (one_layer(nn.MaxPool2d(2, ceil_mode=True)), "1", "has ceil_mode=True"),
    (one_layer(nn.MaxPool2d(3, padding=1)), "1", "has padding=1; GA-2's max pool takes no padding"),
    (one_layer(nn.AdaptiveAvgPool2d(2)), "1", "has output_size=2; Capra lowers the global average"),
    (nn.Sequential(nn.ReLU(), nn.BatchNorm2d(4)), "1",
     "folds only into an nn.Conv2d that nothing else reads"),
    (one_layer(nn.Upsample(scale_factor=2)), "1", "GA-2 has no operation for an Upsample layer"),
]


@pytest.mark.parametrize("model, layer, why", REFUSED, ids=[why for _, _, why in REFUSED])
def test_a_layer_it_cannot_lower_is_refused_naming_the_attribute(model, layer, why):
    model.eval()
    with pytest.raises(UnsupportedModel) as caught:
        from_torch(model, (4, 6, 6), batch=1, params=DEFAULT)
    lines = [r.line() for r in caught.value.refusals]
    assert any(line.startswith(f"REFUSED _{layer}: ") and why in line for line in lines), lines


def test_a_batchnorm_in_training_mode_is_refused():
    model = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2))
    model.train()
    with pytest.raises(UnsupportedModel) as caught:
        from_torch(model, (1, 5, 5), batch=2, params=DEFAULT)
    assert "REFUSED _1: BatchNorm2d module '1': is in training mode" in str(caught.value)
