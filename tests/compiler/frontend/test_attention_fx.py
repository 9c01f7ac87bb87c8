"""Causal attention from PyTorch (issue 26): F.scaled_dot_product_attention(is_causal=True) and
the explicit form (q @ k.transpose(-2, -1) * scale, masked_fill of a causal mask buffer with
-inf, softmax, @ v) lower to the same graph: a causal softmax between two matmuls."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from compiler.frontend import from_torch
from compiler.frontend.torch_fx import UnsupportedModel
from compiler.interpret import interpret

T, C = 8, 16


class Attention(nn.Module):
    def __init__(self, form: str):
        super().__init__()
        self.form = form
        self.q, self.k, self.v = nn.Linear(C, C), nn.Linear(C, C), nn.Linear(C, C)
        self.register_buffer("bias", torch.tril(torch.ones(T, T)))

    def forward(self, x):
        q, k, v = self.q(x), self.k(x), self.v(x)
        if self.form == "sdpa":
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        if self.form == "explicit":
            att = att.masked_fill(self.bias[:T, :T] == 0, float("-inf"))
        elif self.form == "no mask buffer":
            att = att.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool), 1) == 0, float("-inf"))
        elif self.form == "read masked":
            return att.masked_fill(self.bias[:T, :T] == 0, float("-inf")) + att
        return F.softmax(att, dim=-1) @ v


def lowered(form: str):
    torch.manual_seed(0)
    model = Attention(form).eval()
    return model, from_torch(model, (T, C))


def test_both_forms_lower_to_one_graph():
    (_, sdpa), (_, explicit) = lowered("sdpa"), lowered("explicit")
    strip = lambda text: [line.rsplit('"', 2)[0] for line in text.splitlines()]   # noqa: E731 (output names)
    assert strip(sdpa.graph.text()) == strip(explicit.graph.text())
    assert "softmax %7 causal=True -> (8, 8)" in sdpa.graph.text()
    assert "matmul %2, %4 transpose_b=True factor=0.25 -> (8, 8)" in sdpa.graph.text()


@pytest.mark.parametrize("form", ["sdpa", "explicit"])
def test_the_machine_equals_the_interpreter_and_pytorch_within_a_margin(form):
    model, graph = lowered(form)
    rng = np.random.default_rng(0)
    program = graph.compile([graph.feed(rng.normal(size=(T, C))) for _ in range(8)])
    x = rng.normal(size=(T, C))
    outcome = program.run(graph.feed(x), warn=False)
    ints = interpret(program, graph.feed(x))
    (name,) = outcome.outputs
    assert np.array_equal(outcome.outputs[name].ints, ints[program.ext[name].node])
    p = ints[next(n.id for n in graph.graph.nodes if n.op == "softmax")]
    assert (np.triu(p, 1) == 0).all() and p[0, 0] == 127
    want = model(torch.tensor(x, dtype=torch.float32)).detach().numpy()
    assert np.abs(graph.unpack(outcome)[0] - want).max() < 0.15 * np.abs(want).max()


REFUSED = {
    "no mask buffer": "REFUSED masked_fill: Tensor.masked_fill(): fills a mask that is not the causal one "
                      "for (8, 8) scores",
    "read masked": "REFUSED add: operator +: reads masked_fill, scores with a causal mask filled in, as its",
}


@pytest.mark.parametrize("form", REFUSED)
def test_a_mask_other_than_causal_is_refused(form):
    with pytest.raises(UnsupportedModel) as refused:
        lowered(form)
    assert REFUSED[form] in str(refused.value), str(refused.value)


def test_an_attention_mask_is_refused():
    class Masked(nn.Module):
        def forward(self, q, k, v):
            return F.scaled_dot_product_attention(q, k, v, attn_mask=torch.ones(T, T, dtype=torch.bool))

    with pytest.raises(UnsupportedModel, match="takes an attn_mask; GA-2 masks causally only"):
        from_torch(Masked(), (T, C), (T, C), (T, C))
