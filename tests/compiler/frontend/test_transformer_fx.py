"""The PyTorch front end on a transformer's layers (issue 26): nn.Embedding of token ids plus a
learned position embedding, nn.LayerNorm folded into the Linear layers that read it; the
program's integers equal the interpreter's and the reference machine's, its values PyTorch's
within a margin."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from compiler.frontend import from_torch
from compiler.frontend.torch_fx import UnsupportedModel
from compiler.interpret import interpret

VOCAB, CONTEXT, D = 13, 8, 32


class Embedded(nn.Module):
    """Token and position embeddings, a pre-norm MLP with a residual, a final norm and a head."""

    def __init__(self):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(VOCAB, D), nn.Embedding(CONTEXT, D)
        self.ln_1, self.fc, self.proj = nn.LayerNorm(D), nn.Linear(D, 2 * D), nn.Linear(2 * D, D)
        self.ln_f, self.head = nn.LayerNorm(D), nn.Linear(D, VOCAB, bias=False)

    def forward(self, idx):
        t = idx.size(0)
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        x = x + self.proj(F.gelu(self.fc(self.ln_1(x))))
        return self.head(self.ln_f(x))


def model() -> Embedded:
    torch.manual_seed(0)
    m = Embedded().eval()
    with torch.no_grad():
        for norm in (m.ln_1, m.ln_f):
            norm.weight.uniform_(0.5, 1.5)
            norm.bias.normal_(0, 0.2)
    return m


@pytest.fixture(scope="module")
def compiled():
    m = model()
    lowered = from_torch(m, torch.zeros(CONTEXT, dtype=torch.long))
    rng = np.random.default_rng(0)
    program = lowered.compile([lowered.feed(rng.integers(0, VOCAB, CONTEXT)) for _ in range(16)])
    return m, lowered, program


def test_the_graph_gathers_normalises_and_folds(compiled):
    _, lowered, program = compiled
    ops = [node.op for node in lowered.graph.nodes]
    assert ops.count("embedding") == 1 and ops.count("layernorm") == 2
    norms = [n for n in lowered.graph.nodes if n.op == "layernorm"]
    assert all(n.gain == 1.0 and n.bias is None for n in norms)         # folded into fc and head
    assert "wpe.weight[arange]" in lowered.graph.names                   # the positions, a constant
    codes = [i.op for i in program.code]
    assert codes.count("GATHER") == CONTEXT and codes.count("LN") == 2 * CONTEXT


def test_the_folded_weights_are_the_layers_times_the_norms(compiled):
    m, lowered, _ = compiled
    fc = lowered.graph.nodes[lowered.graph.names["fc.weight*ln_1.weight.T"]].array
    w, g = (p.detach().double().numpy() for p in (m.fc.weight, m.ln_1.weight))
    assert np.array_equal(fc, (w * g[None, :]).T)        # one IEEE product each: exact on any CPU


def test_the_machine_equals_the_interpreter_and_pytorch_within_a_margin(compiled):
    m, lowered, program = compiled
    for seed in range(3):
        ids = np.random.default_rng(10 + seed).integers(0, VOCAB, CONTEXT)
        feed = lowered.feed(ids)
        outcome = program.run(feed)
        ints = interpret(program, feed)
        (name,) = outcome.outputs
        assert np.array_equal(outcome.outputs[name].ints, ints[program.ext[name].node])
        want = m(torch.tensor(ids)).detach().numpy()
        (got,) = lowered.unpack(outcome)
        assert np.abs(got - want).max() < 0.25 * np.abs(want).max()     # int8 through six layers


def test_token_ids_are_read_by_embeddings_only():
    class Wrong(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, idx, x):
            return self.fc(x), idx

    with pytest.raises(UnsupportedModel, match="returns idx, the token ids it was given"):
        from_torch(Wrong(), torch.zeros(4, dtype=torch.long), (4, 4))


def test_a_batch_of_sequences_is_refused():
    class Batched(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(VOCAB, D)

        def forward(self, idx):
            return self.wte(idx)

    refused = r"REFUSED idx: input 'idx': has dtype torch.int64 and shape \(2, 8\); Capra takes integers only"
    with pytest.raises(UnsupportedModel, match=refused):
        from_torch(Batched(), torch.zeros(2, 8, dtype=torch.long))


@pytest.mark.rtl
@pytest.mark.slow
def test_the_embedded_block_is_bit_exact_on_the_rtl(compiled):
    """The compiled model on the Verilog under Icarus: the reference's memory and counters."""
    cosim = pytest.importorskip("cosim.api")
    _, lowered, program = compiled
    feed = lowered.feed(np.random.default_rng(3).integers(0, VOCAB, CONTEXT))
    jobs = [(program.code, program.ext_image(feed), "embedded block")]
    (run,) = cosim.run_programs(jobs, "icarus")
    assert cosim.compare(jobs[0], run) == []
