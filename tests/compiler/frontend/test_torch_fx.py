"""The PyTorch front end (compiler/frontend/torch_fx.py and its rules, fx_lower.py).

Every supported operation is lowered from a small module and checked three ways: the Capra
graph evaluated in float against PyTorch (the lowering is exact: 1e-5), the reference
machine against the integer interpreter (exactly the same integers), and the machine's
result against PyTorch (a relative error bound for int8). Every refusal is checked for its
line: the node's name, its operation and the reason.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

from compiler import CompileError, compile_graph  # noqa: E402
from compiler.evaluate import evaluate  # noqa: E402
from compiler.frontend import TorchGraph, UnsupportedModel, from_torch, run_torch  # noqa: E402
from compiler.frontend.fx_lower import SUPPORTED, article  # noqa: E402
from compiler.interpret import interpret  # noqa: E402
from sim.spec import Params  # noqa: E402

pytestmark = pytest.mark.torch


class Layers(nn.Module):
    """Holds a test's layers (modules) and parameters (tensors), and the function to trace."""

    def __init__(self, fn, **layers: nn.Module | torch.Tensor):
        super().__init__()
        self.fn = fn
        for name, layer in layers.items():
            if isinstance(layer, nn.Module):
                self.add_module(name, layer)
            else:
                self.register_parameter(name, nn.Parameter(layer))


def Wrap(fn, **layers: nn.Module | torch.Tensor) -> nn.Module:
    """A module whose forward is ``fn(module, *inputs)``. forward takes the parameters of fn
    after the first, by name (torch.fx traces named arguments, not *args), so ``lambda m, q, k:``
    gives a module with inputs q and k."""
    names = ", ".join(list(inspect.signature(fn).parameters)[1:])
    namespace: dict = {}
    exec(f"def forward(self, {names}):\n    return self.fn(self, {names})\n", namespace)
    return type("Wrap", (Layers,), {"forward": namespace["forward"]})(fn, **layers)


def seeded(make):
    torch.manual_seed(0)
    return make()


def lin(n_in: int, n_out: int, bias: bool = False) -> nn.Linear:
    return nn.Linear(n_in, n_out, bias=bias)


def check(module: nn.Module, *shapes: tuple[int, int], bound: float = 0.05, samples: int = 24,
          seed: int = 0) -> TorchGraph:
    """Lower, compile and run; assert float exactness, machine == interpreter, int8 error < bound.

    The inputs are unit Gaussians. The sample run is one of the calibration samples, so that
    no value saturates and the error measured is int8 rounding alone (how well a calibration
    set covers new data is the compiler's business, not the front end's).
    """
    lowered = from_torch(module, *shapes)
    rng = np.random.default_rng(seed)

    def draw():
        return [rng.normal(size=shape) for shape in shapes]

    values = draw()
    feed = lowered.feed(*values)
    program = compile_graph(lowered.graph, [feed] + [lowered.feed(*draw()) for _ in range(samples)])
    want = run_torch(module, *values)

    floats = evaluate(lowered.graph, feed)
    outcome = program.run(feed)
    ints = interpret(program, feed)
    got = lowered.unpack(outcome)
    assert len(got) == len(want)
    for name, shape, g, w in zip(lowered.outputs, lowered.output_shapes, got, want, strict=True):
        node = lowered.graph.names[name]
        assert g.shape == w.shape == shape
        assert np.array_equal(outcome.outputs[name].ints, ints[program.graph.names[name]]), name
        if w.dtype == np.int64:  # argmax: the float graph's indices are PyTorch's
            assert np.array_equal(floats[node].reshape(shape), w), name
            continue
        assert np.allclose(floats[node], w, rtol=1e-5, atol=1e-5), name
        error = np.linalg.norm(g - w) / np.linalg.norm(w)
        assert error < bound, f"{name}: relative error {error:.4f}"
    return lowered


def ops(lowered: TorchGraph) -> list[str]:
    return [node.op for node in lowered.graph.nodes]


# ------------------------------------------------------------------ nn.Linear


def test_linear_without_bias_is_a_matmul_by_the_transposed_weight():
    layer = seeded(lambda: lin(16, 8))
    lowered = check(Wrap(lambda m, x: m.fc(x), fc=layer), (4, 16))
    assert ops(lowered) == ["input", "weight", "matmul", "output"]
    weight = lowered.graph.nodes[1]
    assert weight.name == "fc.weight.T" and weight.shape == (16, 8)
    assert np.array_equal(weight.array, layer.weight.detach().double().numpy().T)
    assert not lowered.graph.nodes[2].transpose_b


def test_linear_with_bias_puts_the_bias_in_the_accumulator():
    """The bias is the matmul's (compiler/bias.py): loaded into every row of the accumulator, the
    MMs add onto it (acc = 1), a relu after it fuses into the RQ; a constant factor after the
    layer scales the bias too."""
    layer = seeded(lambda: lin(16, 8, bias=True))
    lowered = check(Wrap(lambda m, x: m.fc(x), fc=layer), (4, 16))
    assert ops(lowered) == ["input", "weight", "matmul", "output"]
    assert np.array_equal(lowered.graph.nodes[2].bias, layer.bias.detach().double().numpy())
    relu = check(Wrap(lambda m, x: torch.relu(m.fc(x)) , fc=layer), (4, 16))
    assert ops(relu) == ["input", "weight", "matmul", "relu", "output"]
    program = relu.compile([relu.feed(np.random.default_rng(k).normal(size=(4, 16))) for k in range(8)])
    assert [ins.relu for ins in program.code if ins.op == "RQ"] == [1]
    assert [ins.acc for ins in program.code if ins.op == "MM"] == [1, 1]
    scaled = check(Wrap(lambda m, x: m.fc(x) * 0.5, fc=layer), (4, 16))
    assert np.allclose(scaled.graph.nodes[2].bias, 0.5 * layer.bias.detach().double().numpy())


def test_a_linear_called_twice_shares_its_weight():
    layer = seeded(lambda: lin(8, 8))
    lowered = check(Wrap(lambda m, x: m.fc(x) + m.fc(x), fc=layer), (4, 8))
    assert [n.name for n in lowered.graph.nodes if n.op == "weight"] == ["fc.weight.T"]
    merged = compile_graph(lowered.graph, [lowered.feed(np.ones((4, 8)))]).graph   # compiler/cse.py
    products = [n.op for n in merged.nodes].count("matmul")
    assert products == 1 < [n.op for n in lowered.graph.nodes].count("matmul")


# ------------------------------------------------------------------ matmul and its second operand

MATMULS = {
    "@ parameter": lambda m, x: x @ m.w,
    "torch.matmul parameter.T": lambda m, x: torch.matmul(x, m.wt.T),
    "torch.mm parameter.t()": lambda m, x: torch.mm(x, m.wt.t()),
    "Tensor.matmul parameter.mT": lambda m, x: x.matmul(m.wt.mT),
}


@pytest.mark.parametrize("fn", MATMULS.values(), ids=MATMULS.keys())
def test_matmul_by_a_parameter_or_its_transpose(fn):
    w = seeded(lambda: torch.randn(12, 6) / 4)
    lowered = check(Wrap(fn, w=w, wt=w.T.contiguous()), (5, 12))
    matmul = next(n for n in lowered.graph.nodes if n.op == "matmul")
    assert not matmul.transpose_b  # a parameter's transpose is taken at compile time
    assert lowered.graph.nodes[matmul.ins[1]].shape == (12, 6)


TRANSPOSED = {
    ".T": lambda m, q, k: q @ k.T,
    ".mT": lambda m, q, k: q @ k.mT,
    ".t()": lambda m, q, k: q @ k.t(),
    ".transpose(-2, -1)": lambda m, q, k: q @ k.transpose(-2, -1),
    "torch.transpose(k, 0, 1)": lambda m, q, k: torch.matmul(q, torch.transpose(k, 0, 1)),
    ".T.T.T": lambda m, q, k: q @ k.T.T.T,
}


@pytest.mark.parametrize("fn", TRANSPOSED.values(), ids=TRANSPOSED.keys())
def test_a_transposed_second_operand_sets_transpose_b(fn):
    lowered = check(Wrap(fn), (4, 8), (6, 8))
    assert ops(lowered) == ["input", "input", "matmul", "output"]
    assert lowered.graph.nodes[2].transpose_b


def test_matmul_of_two_computed_tensors():
    a, b = seeded(lambda: (lin(8, 8), lin(8, 6)))
    lowered = check(Wrap(lambda m, x, y: m.a(x) @ m.b(y), a=a, b=b), (4, 8), (8, 8))
    assert ops(lowered).count("matmul") == 3


# ------------------------------------------------------------------ a constant factor on a product

FACTORS = {
    "product * 0.25": (lambda m, q, k: q @ k.T * 0.25, 0.25),
    "0.5 * product": (lambda m, q, k: 0.5 * (q @ k.T), 0.5),
    "product / 4": (lambda m, q, k: (q @ k.T) / 4, 0.25),
    "torch.mul": (lambda m, q, k: torch.mul(q @ k.T, 3.0), 3.0),
    "Tensor.div": (lambda m, q, k: (q @ k.T).div(2), 0.5),
    "shape arithmetic": (lambda m, q, k: q @ k.T * q.shape[-1] ** -0.5, 8 ** -0.5),
    "size() arithmetic": (lambda m, q, k: q @ k.T / q.size(1), 1 / 8),
    "a chain": (lambda m, q, k: (q @ k.T) * 2 * 0.125 / 0.5, 0.5),
    "keyword arguments": (lambda m, q, k: torch.mul(input=q @ k.T, other=0.5), 0.5),
}


@pytest.mark.parametrize("fn, factor", FACTORS.values(), ids=FACTORS.keys())
def test_a_positive_constant_becomes_the_matmul_factor(fn, factor):
    lowered = check(Wrap(fn), (4, 8), (6, 8))
    assert ops(lowered) == ["input", "input", "matmul", "output"]
    assert lowered.graph.nodes[2].factor == pytest.approx(factor, rel=1e-12)


def test_a_factor_on_a_linear_without_bias():
    layer = seeded(lambda: lin(16, 8))
    lowered = check(Wrap(lambda m, x: m.fc(x) * 0.5, fc=layer), (4, 16))
    assert lowered.graph.nodes[2].factor == 0.5


# ------------------------------------------------------------------ relu

RELUS = {
    "torch.relu": lambda m, x: torch.relu(m.fc(x)),
    "F.relu": lambda m, x: F.relu(m.fc(x)),
    "F.relu inplace": lambda m, x: F.relu(m.fc(x), inplace=True),
    "nn.ReLU": lambda m, x: m.act(m.fc(x)),
    "Tensor.relu": lambda m, x: m.fc(x).relu(),
    "after a factor": lambda m, x: torch.relu(m.fc(x) * 2.0),
    "of a matmul": lambda m, x: torch.relu(x @ m.fc.weight.T),
    "nn.ReLU(inplace=True)": lambda m, x: m.act_inplace(m.fc(x)),
}


@pytest.mark.parametrize("fn", RELUS.values(), ids=RELUS.keys())
def test_relu_of_a_product(fn):
    layer = seeded(lambda: lin(16, 8))
    lowered = check(Wrap(fn, fc=layer, act=nn.ReLU(), act_inplace=nn.ReLU(inplace=True)), (4, 16))
    assert ops(lowered) == ["input", "weight", "matmul", "relu", "output"]


def test_an_mlp_with_relu_and_a_biased_output_layer():
    a, b = seeded(lambda: (lin(16, 12), lin(12, 5, bias=True)))
    lowered = check(Wrap(lambda m, x: m.b(torch.relu(m.a(x))), a=a, b=b), (8, 16))
    assert ops(lowered) == ["input", "weight", "matmul", "relu", "weight", "matmul", "output"]


# ------------------------------------------------------------------ softmax

SOFTMAXES = {
    "torch.softmax(-1)": lambda m, q, k: torch.softmax(q @ k.T, -1),
    "F.softmax(dim=-1)": lambda m, q, k: F.softmax(q @ k.T, dim=-1),
    "nn.Softmax(dim=-1)": lambda m, q, k: m.sm(q @ k.T),
    "Tensor.softmax(-1)": lambda m, q, k: (q @ k.T).softmax(-1),
    "dim=1 of a 2-D tensor": lambda m, q, k: F.softmax(q @ k.T, dim=1),
}


@pytest.mark.parametrize("fn", SOFTMAXES.values(), ids=SOFTMAXES.keys())
def test_softmax_of_each_row(fn):
    lowered = check(Wrap(fn, sm=nn.Softmax(dim=-1)), (4, 8), (6, 8), bound=0.06)
    assert ops(lowered) == ["input", "input", "matmul", "softmax", "output"]


# ------------------------------------------------------------------ add

ADDS = {
    "two products": lambda m, x, y: m.a(x) + m.a(y),
    "torch.add": lambda m, x, y: torch.add(m.a(x), y),
    "Tensor.add": lambda m, x, y: m.a(x).add(y),
    "a 1-D parameter, broadcast": lambda m, x, y: m.a(x) + m.b,
    "a number, broadcast": lambda m, x, y: 0.5 + m.a(x),
    "two inputs": lambda m, x, y: x + y,
}


@pytest.mark.parametrize("fn", ADDS.values(), ids=ADDS.keys())
def test_add(fn):
    a = seeded(lambda: lin(8, 8))
    lowered = check(Wrap(fn, a=a, b=torch.linspace(-1, 1, 8)), (4, 8), (4, 8))
    assert "add" in ops(lowered)


def test_a_broadcast_constant_is_a_weight_of_the_full_shape():
    a = seeded(lambda: lin(8, 8))
    lowered = check(Wrap(lambda m, x: m.a(x) + m.b, a=a, b=torch.linspace(-1, 1, 8)), (4, 8))
    bias = next(n for n in lowered.graph.nodes if n.name == "b")
    assert bias.shape == (4, 8) and np.allclose(bias.array[3], np.linspace(-1, 1, 8))


# ------------------------------------------------------------------ cat, argmax, outputs

CATS = {
    "torch.cat dim=0": lambda m, x, y: torch.cat([x, y], dim=0) @ m.w,
    "torch.cat positional 0": lambda m, x, y: torch.cat((x, y), 0) @ m.w,
    "torch.concat dim=-2": lambda m, x, y: torch.concat([x, y], dim=-2) @ m.w,
    "three parts": lambda m, x, y: torch.cat([x, y, m.c], dim=0) @ m.w,
}


@pytest.mark.parametrize("fn", CATS.values(), ids=CATS.keys())
def test_cat_of_rows(fn):
    w, c = seeded(lambda: (torch.randn(8, 4) / 3, torch.randn(2, 8)))
    lowered = check(Wrap(fn, w=w, c=c), (3, 8), (4, 8))
    assert "concat" in ops(lowered)


def test_cat_feeding_a_transposed_matmul_like_a_kv_cache():
    lowered = check(Wrap(lambda m, q, kc, kn: F.softmax(q @ torch.cat([kc, kn]).T * 0.35, dim=-1)),
                    (1, 8), (5, 8), (1, 8), bound=0.06)
    assert ops(lowered) == ["input", "input", "input", "concat", "matmul", "softmax", "output"]


ARGMAXES = {
    "Tensor.argmax(dim=-1)": lambda m, x: (x @ m.w).argmax(dim=-1),
    "torch.argmax(x, 1)": lambda m, x: torch.argmax(x @ m.w, 1),
    "keepdim=True": lambda m, x: torch.argmax(x @ m.w, dim=-1, keepdim=True),
}


@pytest.mark.parametrize("fn", ARGMAXES.values(), ids=ARGMAXES.keys())
def test_argmax_of_each_row(fn):
    w = seeded(lambda: torch.randn(8, 6))
    lowered = check(Wrap(fn, w=w), (16, 8))
    assert ops(lowered)[-2:] == ["argmax", "output"]


def test_tuple_outputs_nested_keep_their_order_names_and_shapes():
    a = seeded(lambda: lin(8, 6, bias=True))

    def fn(m, x):
        logits = m.a(x)
        return logits, (logits.argmax(dim=-1), F.softmax(logits, dim=-1))

    lowered = check(Wrap(fn, a=a), (4, 8), bound=0.06)
    assert lowered.outputs == ("a", "argmax", "softmax")
    assert lowered.output_shapes == ((4, 6), (4,), (4, 6))


def test_an_output_named_like_an_input_is_renamed():
    lowered = check(Wrap(lambda m, x: (x @ m.w, x), w=seeded(lambda: torch.randn(8, 4))), (4, 8))
    assert lowered.outputs == ("matmul", "x#2")


# ------------------------------------------------------------------ the API


def test_shapes_by_batch_by_full_shape_and_by_example_tensor_agree():
    model = Wrap(lambda m, x: m.fc(x), fc=seeded(lambda: lin(16, 8)))
    graphs = [from_torch(model, (16,), batch=4), from_torch(model, (4, 16)),
              from_torch(model, torch.ones(4, 16))]
    assert {g.graph.nodes[0].shape for g in graphs} == {(4, 16)}


def test_inputs_are_named_after_forwards_arguments():
    class Named(nn.Module):
        def forward(self, input, k):  # fx calls the first node input_1; the Capra input is "input"
            return input @ k.T

    lowered = check(Named(), (2, 4), (3, 4))
    assert lowered.inputs == ("input", "k")


def test_feed_and_unpack():
    lowered = from_torch(Wrap(lambda m, q, k: (q @ k.T).argmax(dim=-1)), (2, 3), (4, 3))
    feed = lowered.feed(torch.ones(2, 3), [[1.0] * 3] * 4)
    assert set(feed) == {"q", "k"} and feed["k"].dtype == np.float64
    with pytest.raises(ValueError, match="takes 2 input"):
        lowered.feed(torch.ones(2, 3))


def test_the_module_is_left_untouched():
    layer = seeded(lambda: lin(8, 4))
    before = layer.weight.detach().clone()
    model = Wrap(lambda m, x: m.fc(x), fc=layer)
    model.train()
    from_torch(model, (2, 8))
    assert model.training and torch.equal(layer.weight, before)


def test_examples_that_do_not_fit_forward():
    model = Wrap(lambda m, x, y: x + y)
    with pytest.raises(CompileError, match="takes 2 input"):
        from_torch(model, (2, 3))
    with pytest.raises(CompileError, match=r"does not run on inputs of shape \(2, 3\), \(4, 3\)"):
        from_torch(model, (2, 3), (4, 3))
    with pytest.raises(CompileError, match="batch= is given too"):
        from_torch(model, torch.ones(2, 3), torch.ones(2, 3), batch=2)


def test_a_module_fx_cannot_trace():
    def fn(m, x):
        if x.sum() > 0:  # control flow on a tensor's value
            return x
        return x + x

    with pytest.raises(CompileError, match=r"torch\.fx cannot trace Wrap") as caught:
        from_torch(Wrap(fn), (2, 3))
    assert not isinstance(caught.value, UnsupportedModel)


# ------------------------------------------------------------------ refusals


def _per_column_norm() -> nn.LayerNorm:
    norm = nn.LayerNorm(16)
    with torch.no_grad():
        norm.weight.copy_(torch.linspace(0.5, 1.5, 16))
    return norm


def refusal_lines(module: nn.Module, *shapes, **kwargs) -> list[str]:
    with pytest.raises(UnsupportedModel) as caught:
        from_torch(module, *shapes, **kwargs)
    error = caught.value
    assert isinstance(error, CompileError)
    lines = str(error).splitlines()
    assert lines[0].startswith(f"{type(module).__name__}: {len(error.refusals)} node")
    assert lines[1:] == [r.line() for r in error.refusals]
    return lines[1:]


REFUSALS = {
    "softplus": (lambda m, x: F.softplus(m.fc(x)), {},
                 "REFUSED softplus: torch.nn.functional.softplus: GA-2 has no operation for it; the front "
                 "end lowers nn.Linear"),
    "subtraction": (lambda m, x: m.fc(x) - x, {}, "REFUSED sub: operator -: GA-2 has no operation"),
    "dropout in training mode": (
        lambda m, x: m.drop(m.fc(x)), {"drop": nn.Dropout(0.1)},
        "REFUSED drop: Dropout module 'drop': the model is in training mode, where a dropout zeroes random "
        "values; call model.eval() before tracing"),
    "F.dropout without training=": (
        lambda m, x: F.dropout(m.fc(x), 0.1), {},
        "REFUSED dropout: torch.nn.functional.dropout: is called with training=True, so it zeroes random "
        "values; call model.eval() before tracing and pass training=self.training (F.dropout's default is "
        "True)"),
    "layer norm over two dims": (
        lambda m, x: m.norm(x), {"norm": nn.LayerNorm((4, 16))},
        "REFUSED norm: LayerNorm module 'norm': normalises over the shape (4, 16); GA-2's LN normalises each "
        "row, so give normalized_shape=(16,), the last dim"),
    "F.layer_norm with a negative eps": (
        lambda m, x: F.layer_norm(m.fc(x), (16,), eps=-1.0), {},
        "REFUSED layer_norm: torch.nn.functional.layer_norm: has eps=-1.0; a non-negative number is needed"),
    "a per-column layer norm read by an add": (
        lambda m, x: m.norm(x) + x, {"norm": _per_column_norm()},
        "REFUSED add: operator +: reads norm, a LayerNorm with a weight that differs between columns (or is "
        "not positive), as its operand; GA-2's requantizer has one factor per tensor, so only a Linear"),
    "RMS norm": (lambda m, x: m.norm(x), {"norm": nn.RMSNorm(16)},
                 "REFUSED norm: RMSNorm module 'norm': GA-2 has no exact integer method"),
    "flatten to 1-D": (lambda m, x: torch.flatten(m.fc(x)), {},
                       "REFUSED flatten: torch.flatten: flattens (4, 16) into (64,); Capra tensors are 2-D"),
    "softmax over dim 0": (lambda m, x: F.softmax(m.fc(x), dim=0), {},
                           "REFUSED softmax: torch.nn.functional.softmax: normalises over dim=0; GA-2's "
                           "softmax unit normalises each row (dim=-1) only"),
    "nn.Softmax over dim 0": (lambda m, x: m.sm(m.fc(x)), {"sm": nn.Softmax(dim=0)},
                              "REFUSED sm: Softmax module 'sm': normalises over dim=0"),
    "softmax with a dtype": (lambda m, x: torch.softmax(m.fc(x), -1, dtype=torch.float64), {},
                             "REFUSED softmax: torch.softmax: asks for dtype torch.float64; the softmax unit "
                             "reads int8 and writes probabilities"),
    "a negative factor": (lambda m, x: m.fc(x) * -0.5, {},
                          "REFUSED mul: operator *: the factor -0.5 is not a positive number; it can only "
                          "become a matmul's factor, and the requantizer's multiplier is unsigned"),
    "a factor on an input": (lambda m, x: m.fc(x * 0.5), {},
                             "REFUSED mul: operator *: a constant factor only folds into the matmul whose "
                             "result it scales, and x (input 'x') is not the result of a matmul"),
    "a factor on a product read twice": (
        lambda m, x: ((h := m.fc(x)) * 0.5, h), {},
        "REFUSED mul: operator *: fc is also read by output, which need(s) it without the factor"),
    "an elementwise product": (lambda m, x: m.fc(x) * x, {},
                               "REFUSED mul: operator *: multiplies two tensors element by element; GA-2 has "
                               "no elementwise product"),
    "a division by a tensor": (lambda m, x: m.fc(x) / x, {},
                               "REFUSED truediv: operator /: divides by a tensor; GA-2 has no reciprocal"),
    "add with alpha": (lambda m, x: torch.add(m.fc(x), x, alpha=2), {},
                       "REFUSED add: torch.add: scales its second operand by alpha=2; GA-2's add has no "
                       "factor"),
    "slicing": (lambda m, x: m.fc(x)[0:2], {}, "REFUSED getitem: operator []: GA-2 has no operation for it"),
    "cat along columns": (lambda m, x: torch.cat([x, x], dim=1) @ m.w2, {},
                          "REFUSED cat: torch.cat: joins along dim=1; GA-2 concatenates rows only (dim=0)"),
    "argmax without dim": (lambda m, x: torch.argmax(m.fc(x)), {},
                           "REFUSED argmax: torch.argmax: has no dim, so it would index the flattened "
                           "tensor; GA-2's argmax works on each row: give dim=-1"),
    "argmax over dim 0": (lambda m, x: m.fc(x).argmax(dim=0), {},
                          "REFUSED argmax: Tensor.argmax(): searches along dim=0; GA-2's argmax works on "
                          "each row (dim=-1) only"),
    "argmax read by an add": (lambda m, x: m.fc(x).argmax(dim=-1, keepdim=True) + 1, {},
                              "REFUSED add: operator +: reads argmax, the indices an argmax returns, as its "
                              "operand; indices have no int8 scale, so only an output may take them"),
    "a transposed first operand": (lambda m, x: x.T @ m.fc(x), {},
                                   "REFUSED matmul: operator @: reads getattr_1, a transposed view, as its "
                                   "first operand; GA-2 reads a transpose only as the second operand of a "
                                   "matmul"),
    "a transposed output": (lambda m, x: m.fc(x).T, {},
                            "REFUSED output: output: returns getattr_1, a transposed view; GA-2 stores a "
                            "tensor row by row as it was computed, so transpose it on the host"),
    "a parameter as output": (lambda m, x: (m.fc(x), m.w), {},
                              "REFUSED output: output: returns w, a value fixed at compile time; nothing on "
                              "GA-2 computes it"),
    "a 3-D result": (lambda m, x: x @ m.stack, {"stack": torch.ones(2, 16, 4)},
                     "REFUSED matmul: operator @: its result has shape (2, 4, 4); Capra tensors are 2-D "
                     "(rows, cols)"),
    "unsqueeze": (lambda m, x: m.fc(x).unsqueeze(0), {},
                  "REFUSED unsqueeze: Tensor.unsqueeze(): GA-2 has no operation for it"),
    "reshape": (lambda m, x: m.fc(x).reshape(8, 8), {},
                "REFUSED reshape: Tensor.reshape(): views a Linear as (8, 8); GA-2 takes a view into heads"),
}


@pytest.mark.parametrize("fn, layers, expected", REFUSALS.values(), ids=REFUSALS.keys())
def test_a_refusal_names_the_node_its_operation_and_why(fn, layers, expected):
    fc, w, w2 = seeded(lambda: (lin(16, 16), torch.randn(16, 4), torch.randn(32, 4)))
    lines = refusal_lines(Wrap(fn, fc=fc, w=w, w2=w2, **layers), (4, 16))
    assert any(line.startswith(expected) for line in lines), "\n".join(lines)


def test_every_refused_node_is_listed_once_and_its_users_stay_silent():
    def fn(m, x):
        h = F.softplus(m.fc(x))           # refused
        y = F.softmax(h, dim=-1)          # reads a refused node: silent
        z = torch.cat([y, y], dim=1)      # refused on its own (dim), despite its operand
        return z, F.softsign(x), m.fc(x) * -1.0

    lines = refusal_lines(Wrap(fn, fc=seeded(lambda: lin(16, 16))), (4, 16))
    assert [line.split(":")[0] for line in lines] == ["REFUSED softplus", "REFUSED cat", "REFUSED softsign",
                                                       "REFUSED mul"]


def test_a_3d_input_and_a_dilated_convolution():
    """Images are 4-D (batch, channels, height, width) (tests/compiler/frontend/test_images.py
    lowers them); a 3-D input and a dilated convolution are refused by name."""
    class Dilated(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(1, 4, 3, dilation=2)

        def forward(self, x):
            return self.conv(x)

    assert refusal_lines(seeded(Dilated), (8, 1, 8, 8)) == [
        "REFUSED conv: Conv2d module 'conv': has dilation=(2, 2); GA-2's convolution reads neighbouring "
        "pixels (dilation 1)"]
    assert refusal_lines(Wrap(lambda m, x: x), (2, 3, 4)) == [
        "REFUSED x: input 'x': has shape (2, 3, 4); Capra tensors are 2-D (rows, cols), or images (batch, "
        "channels, height, width) stored (batch*height*width, channels)"]


def test_a_computed_tensor_is_not_broadcast():
    model = Wrap(lambda m, x, r: x @ m.w + r, w=seeded(lambda: torch.randn(16, 4)))
    lines = refusal_lines(model, (4, 16), (1, 4))
    assert lines == ["REFUSED add: operator +: broadcasts r (1, 4) to (4, 4); GA-2 adds tensors of one "
                     "shape, and only a constant is broadcast (at compile time)"]


def test_an_inner_dimension_beyond_k_max():
    """Issue 14: a Linear of 150 inputs and x @ y over 65 compile, cut along K."""
    check(Wrap(lambda m, x: m.deep(x), deep=seeded(lambda: lin(150, 4, bias=True))), (4, 150))
    check(Wrap(lambda m, x, y: x @ y), (4, 65), (65, 3))


def test_a_softmax_row_longer_than_the_unit_takes():
    lines = refusal_lines(Wrap(lambda m, x: F.softmax(x @ x.T, dim=-1)), (65, 4))
    assert lines == ["REFUSED softmax: torch.nn.functional.softmax: its rows hold 65 values, more than the "
                     "softmax unit's 64 (SM_MAX_LEN)"]


def test_an_integer_input():
    lines = refusal_lines(Wrap(lambda m, x: x + x), torch.ones(2, 3, dtype=torch.int64))
    assert lines[0].startswith("REFUSED x: input 'x': has dtype torch.int64 and shape (2, 3); Capra "
                               "takes integers only as token ids, a 1-D tensor of one sequence's ids")
    lines = refusal_lines(Wrap(lambda m, x: x + x), torch.ones(3, dtype=torch.int64))   # 1-D: token ids
    assert lines == ["REFUSED add: operator +: its result has shape (3,); Capra tensors are 2-D (rows, cols)"]


def test_the_compilers_structural_refusals_are_named_by_the_fx_node():
    # one tensor as a part of two concatenations: placement cannot make it a view of both
    def fn(m, x, y, z):
        return torch.cat([x, y]) @ m.w, torch.cat([x, z]) @ m.w

    lines = refusal_lines(Wrap(fn, w=seeded(lambda: torch.randn(3, 2))), (2, 3), (2, 3), (2, 3))
    assert len(lines) == 1 and lines[0].startswith("REFUSED ")
    assert "Capra refuses it: " in lines[0] and "concatenation" in lines[0]


def test_a_graph_too_large_for_external_memory():
    big = seeded(lambda: lin(64, 64))
    model = Wrap(lambda m, x: m.a(m.b(m.c(x))), a=big, b=lin(64, 64), c=lin(64, 64))
    # the input's 256 words, then the weights of c and b packed four to a word (the default
    # packs them when they do not fit otherwise): 256 + 1,024 + 1,024 > 2,048 at b
    lines = refusal_lines(model, (4, 64), params=Params(EXT_WORDS=2048))
    assert lines[0].startswith("REFUSED b: Linear module 'b': Capra refuses it: external memory is full")



# ------------------------------------------------------------------ in-place operations


def add_in_place(m, x):
    h = m.fc(x)
    h.add_(m.fc2(x))  # the result is not used: torch.fx's dead-code elimination would drop it
    return h


def mul_in_place(m, x):
    h = m.fc(x)
    h.mul_(2.0)
    return h


def relu_in_place_unused(m, x):
    h = m.fc(x)
    F.relu(h, inplace=True)
    return h


def input_scaled_in_place(m, x):
    x.mul_(3.0)
    return m.fc(x)


def layer_in_place_on_an_input(m, x):
    return m.fc(m.act_inplace(x))


def relu_in_place_read_twice(m, x):
    h = m.fc(x)
    return F.relu(h, inplace=True), h


def writes_into_out(m, x):
    h = m.fc(x)
    torch.add(h, h, out=h)
    return h


INPLACE = {
    "Tensor.add_, result unused": (
        add_in_place,
        "REFUSED add_: Tensor.add_(): changes fc in place; the front end compiles values, not changes to "
        "them, so a later read of fc would get the old values and a result nothing reads would be dropped: "
        "write the out-of-place form, h = h.add(...)"),
    "Tensor.mul_, result unused": (
        mul_in_place,
        "REFUSED mul_: Tensor.mul_(): changes fc in place; the front end compiles values, not changes to "
        "them, so a later read of fc would get the old values and a result nothing reads would be dropped: "
        "write the out-of-place form, h = h.mul(...)"),
    "Tensor.mul_, result returned": (
        lambda m, x: m.fc(x).mul_(2.0),
        "REFUSED mul_: Tensor.mul_(): changes fc in place;"),
    "Tensor.relu_": (
        lambda m, x: m.fc(x).relu_(),
        "REFUSED relu_: Tensor.relu_(): changes fc in place; the front end compiles values, not changes to "
        "them, so a later read of fc would get the old values and a result nothing reads would be dropped: "
        "write the out-of-place form, h = h.relu(...)"),
    "torch.relu_": (
        lambda m, x: torch.relu_(m.fc(x)),
        "REFUSED relu_: torch.relu_: changes fc in place; the front end compiles values, not changes to "
        "them, so a later read of fc would get the old values and a result nothing reads would be dropped: "
        "write the out-of-place form, h = torch.relu(h, ...)"),
    "F.relu(inplace=True), result unused": (
        relu_in_place_unused,
        "REFUSED relu: torch.nn.functional.relu: changes fc in place (inplace=True), and fc is also read by "
        "output; in PyTorch a read after the change sees the changed values, in the compiled graph it would "
        "not: drop inplace=True and use the result"),
    "F.relu(inplace=True), operand read again": (
        relu_in_place_read_twice,
        "REFUSED relu: torch.nn.functional.relu: changes fc in place (inplace=True), and fc is also read by "
        "output;"),
    "Tensor.mul_ on an input": (
        input_scaled_in_place,
        "REFUSED mul_: Tensor.mul_(): changes x in place; the front end compiles values, not changes to "
        "them, so a later read of x would get the old values"),
    "nn.ReLU(inplace=True) on an input": (
        layer_in_place_on_an_input,
        "REFUSED act_inplace: ReLU module 'act_inplace': changes x in place (inplace=True), and x is an "
        "input of forward, which the caller would see changed: build the layer without it (the default "
        "inplace=False)"),
    "out=": (
        writes_into_out,
        "REFUSED add: torch.add: writes its result into fc (out=); the front end compiles values, not "
        "changes to them: drop out= and assign the result, y = f(...)"),
}


@pytest.mark.parametrize("fn, expected", INPLACE.values(), ids=INPLACE.keys())
def test_an_operation_in_place_is_refused_not_dropped(fn, expected):
    fc, fc2 = seeded(lambda: (lin(8, 4), lin(8, 4)))
    model = Wrap(fn, fc=fc, fc2=fc2, act_inplace=nn.ReLU(inplace=True))
    lines = refusal_lines(model, (4, 8))
    assert len(lines) == 1 and lines[0].startswith(expected), lines[0]


def test_the_refused_in_place_ops_change_what_pytorch_returns():
    # what the compiled program would have computed had the in-place node been dropped
    fc, fc2 = seeded(lambda: (lin(8, 4), lin(8, 4)))
    x = np.random.default_rng(0).normal(size=(4, 8))
    (plain,) = run_torch(Wrap(lambda m, x: m.fc(x), fc=fc), x)
    for fn in (add_in_place, mul_in_place, relu_in_place_unused):
        (want,) = run_torch(Wrap(fn, fc=fc, fc2=fc2), x)
        assert not np.allclose(plain, want), fn.__name__


def test_an_in_place_op_refused_before_the_module_runs():
    class Scales(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.ones(8, 4))

        def forward(self, x):
            self.w.mul_(2.0)
            return x @ self.w

    model = Scales()
    lines = refusal_lines(model, (4, 8))
    assert lines[0].startswith("REFUSED mul_: Tensor.mul_(): changes w in place;")
    assert torch.equal(model.w.detach(), torch.ones(8, 4))


def augmented_add(m, x):
    h = m.fc(x)
    h += m.fc2(x)
    return h


def augmented_mul(m, x):
    h = m.fc(x)
    h *= 0.5
    return h


@pytest.mark.parametrize("fn", [augmented_add, augmented_mul])
def test_an_augmented_assignment_is_its_out_of_place_form(fn):
    fc, fc2 = seeded(lambda: (lin(8, 4), lin(8, 4)))
    lowered = check(Wrap(fn, fc=fc, fc2=fc2), (4, 8))
    assert ops(lowered).count("matmul") == (2 if fn is augmented_add else 1)


def test_the_out_of_place_rewrite_of_a_refused_op_compiles():
    def rewritten(m, x):
        h = m.fc(x)
        h = h.add(m.fc2(x))
        return h

    fc, fc2 = seeded(lambda: (lin(8, 4), lin(8, 4)))
    check(Wrap(rewritten, fc=fc, fc2=fc2), (4, 8))


def aliased_augmented_add(m, x):
    h = m.fc(x)
    g = h           # g and h are one tensor: in PyTorch h += ... changes g too
    h += m.fc2(x)   # torch.fx records h = h + fc2(x), and g stays fc(x)
    return g


def test_an_augmented_assignment_to_an_aliased_tensor_is_refused():
    fc, fc2 = seeded(lambda: (lin(8, 4), lin(8, 4)))
    model = Wrap(aliased_augmented_add, fc=fc, fc2=fc2)
    with pytest.raises(CompileError) as caught:
        from_torch(model, (4, 8))
    assert not isinstance(caught.value, UnsupportedModel)
    message = str(caught.value)
    assert message.startswith("Wrap: the graph torch.fx traced computes something else than forward on the "
                              "same inputs: output 0 (fc) differs from forward's by up to ")
    assert ("; nothing reads the result of add (operator +). torch.fx records an augmented assignment "
            "(h += y, h *= c) as h = h + y") in message
    assert message.endswith("Fix: write h = h + y (out of place) and read the name you mean; nothing was "
                            "compiled")
    # what PyTorch returns is the sum, which the traced graph would not have computed
    x = np.random.default_rng(0).normal(size=(4, 8))
    (want,) = run_torch(model, x)
    (alone,) = run_torch(Wrap(lambda m, x: m.fc(x), fc=fc), x)
    assert not np.allclose(want, alone)


def test_an_augmented_assignment_to_a_parameter_leaves_the_module_untouched():
    class Bumps(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.ones(8, 4))

        def forward(self, x):
            w = self.w
            w += 1.0  # changes the parameter in PyTorch; torch.fx records w = w + 1
            return x @ self.w

    model = Bumps()
    with pytest.raises(CompileError, match=r"output 0 \(matmul\) differs from forward's by up to "):
        from_torch(model, (4, 8))
    assert torch.equal(model.w.detach(), torch.ones(8, 4))


# ------------------------------------------------------------------ arguments from_torch refuses


def test_not_a_module():
    with pytest.raises(CompileError) as caught:
        from_torch(lambda x: x, (8,), batch=4)
    assert str(caught.value).startswith("from_torch takes a torch.nn.Module, not a function (<function ")
    assert str(caught.value).endswith("Fix: wrap the computation in a module: class Model(nn.Module) whose "
                                      "forward(self, x) computes it")


BAD_SHAPES = {
    "negative": (((-8,),), {"batch": 4}, "input 'x': example shape (4, -8) has the size -8"),
    "zero": (((8, 0),), {}, "input 'x': example shape (8, 0) has the size 0"),
    "a float": (((8, 2.0),), {}, "input 'x': example shape (8, 2.0) has the size 2.0"),
    "a bool": (((8, True),), {}, "input 'x': example shape (8, True) has the size True"),
    "an empty tensor": ((torch.ones(0, 8),), {}, "input 'x': example shape (0, 8) has the size 0"),
}


@pytest.mark.parametrize("examples, kwargs, expected", BAD_SHAPES.values(), ids=BAD_SHAPES.keys())
def test_an_example_size_that_is_not_a_positive_integer(examples, kwargs, expected):
    with pytest.raises(CompileError) as caught:
        from_torch(Wrap(lambda m, x: x @ m.w, w=torch.ones(8, 2)), *examples, **kwargs)
    assert str(caught.value) == (f"{expected}, which is not a positive whole number. Fix: give every size "
                                 "as an integer of at least 1")


@pytest.mark.parametrize("batch", [0, -1, 2.0, True, "4"])
def test_a_batch_that_is_not_a_positive_integer(batch):
    with pytest.raises(CompileError) as caught:
        from_torch(Wrap(lambda m, x: x @ m.w, w=torch.ones(8, 2)), (8,), batch=batch)
    assert str(caught.value) == (f"batch={batch!r} is not a positive whole number of rows. Fix: pass "
                                 "batch=8, say")


@pytest.mark.parametrize("example", ["88", 8, None])
def test_an_example_that_is_neither_a_tensor_nor_a_shape(example):
    with pytest.raises(CompileError) as caught:
        from_torch(Wrap(lambda m, x: x @ m.w, w=torch.ones(8, 2)), example)
    assert str(caught.value) == (f"input 'x': example {example!r} is neither a tensor nor a shape. Fix: pass "
                                 "a tensor or a tuple of sizes")


def test_a_forward_with_star_arguments():
    class Star(nn.Module):
        def forward(self, *xs):
            return xs[0]

    class Keywords(nn.Module):
        def forward(self, x, **options):
            return x

    for model, star in ((Star(), "*xs"), (Keywords(), "**options")):
        with pytest.raises(CompileError) as caught:
            from_torch(model, (4, 8))
        assert str(caught.value) == (f"{type(model).__name__}.forward takes {star}; torch.fx traces named "
                                     "arguments only. Fix: name each input: def forward(self, x, y)")


def test_a_forward_with_a_number_as_a_default_argument():
    class Scaled(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 4, bias=False)

        def forward(self, x, scale: float = 2.0):
            return self.fc(x) * scale

    with pytest.raises(CompileError) as caught:
        from_torch(Scaled(), (4, 8))
    assert str(caught.value) == (
        "Scaled.forward takes 2 input(s) (x, scale), 1 example(s) given; 'scale' (default 2.0) cannot be "
        "left at its default: the front end traces every argument of forward as a tensor input. Fix: give "
        "one example per argument, or make a setting such as a scale an attribute set in __init__ "
        "(self.scale = 2.0) rather than an argument of forward")


def test_a_model_that_fails_on_the_example_shape_says_why_in_one_line(capfd):
    model = Wrap(lambda m, x: m.fc(x), fc=seeded(lambda: lin(8, 4)))
    with pytest.raises(CompileError) as caught:
        from_torch(model, (7,), batch=4)
    assert str(caught.value) == (
        "Wrap does not run on inputs of shape (4, 7): fc (Linear module 'fc') raises RuntimeError: mat1 and "
        "mat2 shapes cannot be multiplied (4x7 and 8x4). Fix: give the shapes forward expects (batch= adds "
        "the rows)")
    out, err = capfd.readouterr()
    assert out == "" and err == ""  # torch.fx's own traceback is held back


def test_tensors_that_require_grad_are_taken_as_values():
    layer = seeded(lambda: lin(8, 4))
    model = Wrap(lambda m, x: m.fc(x), fc=layer)
    lowered = from_torch(model, torch.ones(4, 8, requires_grad=True))
    rng = np.random.default_rng(0)
    samples = [torch.tensor(rng.normal(size=(4, 8)), dtype=torch.float32, requires_grad=True)
               for _ in range(8)]
    program = compile_graph(lowered.graph, [lowered.feed(s) for s in samples])
    feed = lowered.feed(samples[0])
    outcome = program.run(feed)
    (got,) = lowered.unpack(outcome)
    (want,) = run_torch(model, samples[0])
    assert np.array_equal(outcome.outputs["fc"].ints, interpret(program, feed)[lowered.graph.names["fc"]])
    assert np.allclose(want, samples[0].detach().double().numpy() @ layer.weight.detach().double().numpy().T,
                       atol=1e-5)
    assert np.linalg.norm(got - want) / np.linalg.norm(want) < 0.05


def test_the_global_random_state_is_kept():  # the runs on the example inputs seed their own
    model = Wrap(lambda m, x: F.dropout(m.fc(x), 0.5, training=True), fc=seeded(lambda: lin(8, 4)))
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    lines = refusal_lines(model, torch.zeros(4, 8))
    assert lines[0].startswith("REFUSED dropout: torch.nn.functional.dropout: is called with training=True")
    assert torch.equal(torch.rand(3), expected)


# ------------------------------------------------------------------ messages


DIVISIONS = {
    "by a shape expression equal to 0": (
        lambda m, x: m.fc(x) / (x.shape[0] - 4),
        "REFUSED truediv: operator /: the divisor is 0, so every value would become infinite or NaN; GA-2 "
        "divides only by a positive number, which becomes the matmul's factor 1 / divisor"),
    "by a literal 0": (
        lambda m, x: m.fc(x) / 0,
        "REFUSED truediv: operator /: the divisor is 0, so every value would become infinite or NaN"),
    "by a negative number": (
        lambda m, x: m.fc(x) / -2.0,
        "REFUSED truediv: operator /: the divisor -2.0 is not a positive number; a division can only become "
        "the matmul's factor 1 / divisor, and the requantizer's multiplier is unsigned"),
    "a number by a tensor": (
        lambda m, x: -2.0 / m.fc(x),
        "REFUSED truediv: operator /: divides the number -2.0 by a tensor; GA-2 has no reciprocal, only a "
        "constant factor on a matmul's result"),
    "a factor of 0 stays a factor": (
        lambda m, x: m.fc(x) * 0,
        "REFUSED mul: operator *: the factor 0 is not a positive number; it can only become a matmul's "
        "factor, and the requantizer's multiplier is unsigned"),
}


@pytest.mark.parametrize("fn, expected", DIVISIONS.values(), ids=DIVISIONS.keys())
def test_a_divisor_is_called_a_divisor(fn, expected):
    lines = refusal_lines(Wrap(fn, fc=seeded(lambda: lin(8, 4))), (4, 8))
    assert len(lines) == 1 and lines[0].startswith(expected), lines[0]


def test_a_layer_is_named_with_the_right_article():
    lines = refusal_lines(nn.Sequential(lin(8, 16), nn.Identity(), nn.SELU(), nn.Hardtanh()), (4, 8))
    assert lines == [   # the Identity is the identity: dropped, not refused
        f"REFUSED _2: SELU module '2': GA-2 has no operation for a SELU layer; the front end lowers "
        f"{SUPPORTED}",
        f"REFUSED _3: Hardtanh module '3': GA-2 has no operation for a Hardtanh layer; the front end lowers "
        f"{SUPPORTED}",
    ]


@pytest.mark.parametrize("word, expected", [
    ("Identity", "an"), ("Linear", "a"), ("Embedding", "an"), ("Upsample", "an"), ("LSTM", "an"),
    ("RNN", "an"), ("GRU", "a"), ("SELU", "a"), ("ELU", "an"), ("MSELoss", "an"), ("Conv2d", "a"),
    ("Hardtanh", "a"), ("", "a")])
def test_article(word, expected):
    assert article(word) == expected


TABLES = {
    "nn.GELU": (lambda m, x: m.act(m.fc(x)), {"act": nn.GELU()}, "gelu"),
    "F.gelu tanh": (lambda m, x: F.gelu(m.fc(x), approximate="tanh"), {}, "gelu_tanh"),
    "nn.SiLU": (lambda m, x: m.act(m.fc(x)), {"act": nn.SiLU()}, "silu"),
    "torch.sigmoid": (lambda m, x: torch.sigmoid(m.fc(x)), {}, "sigmoid"),
    "Tensor.tanh": (lambda m, x: m.fc(x).tanh(), {}, "tanh"),
    "F.hardswish": (lambda m, x: F.hardswish(m.fc(x)), {}, "hardswish"),
    "nn.LeakyReLU(0.2)": (lambda m, x: m.act(m.fc(x)), {"act": nn.LeakyReLU(0.2)}, "leaky_relu:0.2"),
    "F.elu": (lambda m, x: F.elu(m.fc(x), 0.5), {}, "elu:0.5"),
    "relu of an input": (lambda m, x: m.fc(F.relu(x)), {}, "relu"),
    "relu of a product read twice": (lambda m, x: (torch.relu(h := m.fc(x)), h), {}, "relu"),
}


@pytest.mark.parametrize("name", TABLES)
def test_a_table_activation_is_one_lut(name):
    """Issue 14: each activation becomes a table node (one LUT), exact against the interpreter and
    within int8 rounding of PyTorch (check); a relu that cannot be the requantizer's flag too."""
    forward, modules, fn = TABLES[name]
    lowered = check(Wrap(forward, fc=seeded(lambda: lin(16, 16, bias=True)), **modules), (4, 16))
    assert [n.fn for n in lowered.graph.nodes if n.op == "table"] == [fn]
