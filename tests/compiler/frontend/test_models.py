"""The front end on real models: dropout, identities and flatten at inference, F.linear and a
bare nn.Linear, refusals named by module path, partial batches, layers larger than the
scratchpad (compiler/frontend/inference.py, batch.py; values from PyTorch and the interpreter)."""

from __future__ import annotations

import re

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

from compiler import CompileError, compile_graph  # noqa: E402
from compiler.frontend import Feed, UnsupportedModel, from_torch, run_torch  # noqa: E402
from compiler.frontend.fx_lower import SUPPORTED  # noqa: E402
from compiler.interpret import interpret  # noqa: E402

from .test_torch_fx import Wrap, check, lin, ops, refusal_lines, seeded  # noqa: E402

pytestmark = pytest.mark.torch


IDENTITIES = {
    "nn.Dropout in eval mode": lambda m, x: m.drop(m.fc(x)),
    "F.dropout(x, p, self.training) in eval mode": lambda m, x: F.dropout(m.fc(x), 0.3, m.training),
    "F.dropout(training=False)": lambda m, x: F.dropout(m.fc(x), p=0.5, training=False),
    "torch.dropout(x, p, False)": lambda m, x: torch.dropout(m.fc(x), 0.5, False),
    "nn.AlphaDropout in eval mode": lambda m, x: m.alpha(m.fc(x)),
    "nn.Identity": lambda m, x: m.same(m.fc(x)),
    "nn.Flatten on (batch, features)": lambda m, x: m.flat(m.fc(x)),
    "torch.flatten(x, 1)": lambda m, x: torch.flatten(m.fc(x), 1),
    "Tensor.flatten(1)": lambda m, x: m.fc(x).flatten(1),
}


def layers():
    return {"fc": lin(16, 8), "drop": nn.Dropout(0.5), "alpha": nn.AlphaDropout(0.2), "same": nn.Identity(),
            "flat": nn.Flatten()}


@pytest.mark.parametrize("fn", IDENTITIES.values(), ids=IDENTITIES.keys())
def test_what_changes_nothing_at_inference_is_left_out(fn):
    model = seeded(lambda: Wrap(fn, **layers())).eval()
    lowered = check(model, (4, 16))
    assert ops(lowered) == ["input", "weight", "matmul", "output"]


def test_a_relu_and_a_factor_still_fuse_through_a_dropout():
    model = seeded(lambda: Wrap(lambda m, x: (torch.relu(m.drop(m.fc(x))), m.drop(m.fc2(x)) * 0.5),
                                fc=lin(16, 8), fc2=lin(16, 4), drop=nn.Dropout(0.1))).eval()
    lowered = check(model, (4, 16))
    assert ops(lowered) == ["input", "weight", "matmul", "relu", "weight", "matmul", "output", "output"]
    assert lowered.graph.nodes[5].factor == 0.5


def test_a_model_in_training_mode_is_refused_at_its_dropouts():
    model = seeded(lambda: nn.Sequential(lin(16, 12), nn.ReLU(), nn.Dropout(0.2), lin(12, 4)))
    lines = refusal_lines(model, (4, 16))
    assert lines == ["REFUSED _2: Dropout module '2': the model is in training mode, where a dropout zeroes "
                     "random values; call model.eval() before tracing (in eval mode it is the identity)"]
    lowered = check(model.eval(), (4, 16))
    assert ops(lowered) == ["input", "weight", "matmul", "relu", "weight", "matmul", "output"]


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = lin(16, 16)

    def forward(self, x):
        return F.dropout(F.softplus(self.fc(x)), 0.1, self.training)


def test_a_refusal_inside_a_submodule_names_its_module_path():
    model = seeded(lambda: nn.Sequential(nn.Linear(16, 16), nn.ReLU(), Block()))
    lines = refusal_lines(model, (4, 16))
    assert lines == [
        f"REFUSED softplus: torch.nn.functional.softplus in '2': GA-2 has no operation for it; the front "
        f"end lowers {SUPPORTED}",
        "REFUSED dropout: torch.nn.functional.dropout in '2': is called with training=True, so it zeroes "
        "random values; call model.eval() before tracing and pass training=self.training (F.dropout's "
        "default is True)",
    ]


def test_f_linear_with_parameters_is_a_linear_layer():
    weight, bias = seeded(lambda: (torch.randn(8, 16) * 0.3, torch.randn(8) * 0.1))
    lowered = check(Wrap(lambda m, x: F.linear(x, m.w, m.b), w=weight, b=bias), (4, 16))
    assert ops(lowered) == ["input", "weight", "matmul", "output"]   # the bias: the matmul's
    assert [n.name for n in lowered.graph.nodes if n.op == "weight"] == ["w.T"]
    assert np.array_equal(lowered.graph.nodes[1].array, weight.double().numpy().T)
    assert np.array_equal(lowered.graph.nodes[2].bias, bias.double().numpy())
    relu = check(Wrap(lambda m, x: torch.relu(F.linear(x, m.w)), w=weight), (4, 16))
    assert ops(relu) == ["input", "weight", "matmul", "relu", "output"]


def test_f_linear_by_a_computed_weight_reads_it_transposed():
    lowered = check(Wrap(lambda m, x, y: F.linear(x, y)), (4, 16), (6, 16))
    assert ops(lowered) == ["input", "input", "matmul", "output"] and lowered.graph.nodes[2].transpose_b


@pytest.mark.parametrize("bias", [False, True])
def test_a_bare_linear_module(bias):
    layer = seeded(lambda: nn.Linear(16, 8, bias=bias))
    lowered = from_torch(layer, (16,), batch=4)
    assert lowered.inputs == ("input",)
    assert [n.name for n in lowered.graph.nodes if n.op == "weight"] == ["weight.T"]
    assert (lowered.graph.nodes[2].bias is not None) == bias
    check(layer, (4, 16))


@pytest.fixture(scope="module")
def mlp():
    """A 16-12-5 MLP with a biased output layer and an argmax, traced for batches of 8."""
    model = seeded(lambda: nn.Sequential(lin(16, 12), nn.ReLU(), nn.Dropout(0.1), lin(12, 5, bias=True)))
    model.eval()
    head = Wrap(lambda m, x: (m.net(x), m.net(x).argmax(dim=-1)), net=model).eval()
    lowered = from_torch(head, (16,), batch=8)
    rng = np.random.default_rng(0)
    program = lowered.compile([lowered.feed(rng.normal(size=(8, 16))) for _ in range(20)])
    return head, lowered, program


def test_a_partial_batch_is_padded_and_the_padding_dropped(mlp):
    head, lowered, program = mlp
    rng = np.random.default_rng(5)
    x = rng.normal(size=(8, 16))
    feed = lowered.feed(x[:3])
    assert isinstance(feed, Feed) and feed.rows == 3 and feed["x"].shape == (8, 16)
    assert not feed["x"][3:].any()
    logits, classes = lowered.unpack(program.run(feed))
    assert logits.shape == (3, 5) and classes.shape == (3,)
    full_logits, full_classes = lowered.unpack(program.run(lowered.feed(x)))
    assert np.array_equal(logits, full_logits[:3]) and np.array_equal(classes, full_classes[:3])
    want, _ = run_torch(head, x[:3])
    assert np.linalg.norm(logits - want) / np.linalg.norm(want) < 0.05
    padded = program.run(feed)
    assert np.array_equal(padded.outputs[lowered.outputs[0]].ints, interpret(program, feed)[program.ext[
        lowered.outputs[0]].node])
    assert [a.shape for a in lowered.unpack(padded, rows=8)] == [(8, 5), (8,)]


def test_a_batch_that_cannot_be_padded_is_refused(mlp):
    _, lowered, _ = mlp
    with pytest.raises(ValueError, match=r"input 'x' has 9 rows; the model was traced for a batch of 8: "
                                         r"feed it in batches of 1 to 8 rows"):
        lowered.feed(np.ones((9, 16)))
    attention = from_torch(Wrap(lambda m, x: F.softmax(x @ x.T, dim=-1)), (8,), batch=4)
    with pytest.raises(ValueError, match=r"cannot pad a partial batch of 2 rows to 4: node 1 \(matmul\) "
                                         "multiplies by a tensor computed from the inputs"):
        attention.feed(np.ones((2, 8)))
    two = from_torch(Wrap(lambda m, x, y: x + y), (8,), (8,), batch=4)
    with pytest.raises(ValueError, match="the inputs have different numbers of rows"):
        two.feed(np.ones((2, 8)), np.ones((3, 8)))
    assert two.feed(np.ones((4, 8)), np.ones((4, 8))).rows is None


def test_a_model_larger_than_the_scratchpad_compiles_and_runs(mlp):
    """64-64-32-10 at a batch of 16: 6,464 words of weights; the first layer streams."""
    model = seeded(lambda: nn.Sequential(lin(64, 64), nn.ReLU(), lin(64, 32), nn.ReLU(), lin(32, 10))).eval()
    lowered = check(model, (16, 64), samples=16)
    program = lowered.compile([lowered.feed(np.random.default_rng(1).normal(size=(16, 64)))])
    assert sum(n.words for n in lowered.graph.nodes if n.op == "weight") == 6464
    assert [b.stream_b for b in program.blockings.values()] == [True, False, False]


def test_a_layer_no_blocking_fits_is_refused_by_its_module_path():
    model = seeded(lambda: nn.Sequential(lin(16, 64)))
    lowered = from_torch(model, (16,), batch=64)
    with pytest.raises(UnsupportedModel) as info:
        lowered.compile([lowered.feed(np.ones((64, 16)))])
    lines = str(info.value).splitlines()
    assert lines[0] == "Sequential: 1 node cannot run on GA-2; nothing was compiled"
    assert lines[1].startswith("REFUSED _0: Linear module '0': Capra refuses it: scratchpad is full at "
                               "node 2 (matmul), the 64 x 16 by 16 x 64 product of node 0 (input 'input') "
                               "and node 1 (weight '0.weight.T'): its smallest blocking")
    with pytest.raises(CompileError, match="scratchpad is full at node 2"):
        compile_graph(lowered.graph, [lowered.feed(np.ones((64, 16)))])


@pytest.mark.parametrize("value, why", [
    (torch.ones(8, 16, dtype=torch.complex64) * (1 + 2j), "it holds complex numbers"),   # not its real part
    (np.full((8, 16), 1 - 1j), "it holds complex numbers"),
    ("0.5", "it holds text, not numbers"),
    ([[0.0] * 16, [0.0] * 15], "its rows have different lengths"),
    ([[0.0] * 16, [None] * 16], "element [1, 0] is None, not a number"),
])
def test_feed_refuses_what_is_not_real_numbers(mlp, value, why):
    _, lowered, _ = mlp
    with pytest.raises(ValueError, match=rf"^input 'x': {re.escape(why)}; feed a real tensor or array"):
        lowered.feed(value)


def test_unpack_refuses_what_is_not_a_run(mlp):
    _, lowered, _ = mlp
    for wrong in (None, 3, [1, 2]):
        with pytest.raises(TypeError, match=rf"unpack takes what Program.run returned \(a RunOutcome\) or "
                                            rf"its outputs, got {type(wrong).__name__}"):
            lowered.unpack(wrong)
    with pytest.raises(ValueError, match=r"the outcome has no output '.*' \(it has 'other'\)"):
        lowered.unpack({"other": None})
