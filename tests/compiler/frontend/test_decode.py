"""A GPT's prefill and decode steps with a KV cache (compiler/frontend/decode.py, issue 26): the
step graphs mean the PyTorch model, the cache's scales are the same in every program, chunked
prefill and the sliding window keep the reference machine's tokens equal to the integer
interpreter's, and bad steps are refused with the sizes named."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from compiler import CompileError
from compiler.evaluate import evaluate_batch
from compiler.frontend.decode import IDS, LOGITS, NAMES, Decoder, GptConfig, cache_names, step_graph
from compiler.interpret import interpret
from sim.spec import DEFAULT

CONFIG = GptConfig(vocab=11, context=8, layers=2, heads=2, width=16)


def weights(config: GptConfig = CONFIG, seed: int = 0) -> dict[str, np.ndarray]:
    """Random GPT weights in nanoGPT's names (LayerNorm weights and biases away from 1 and 0)."""
    rng = np.random.default_rng(seed)
    c = config.width
    shapes = {"wte": (config.vocab, c), "wpe": (config.context, c), "ln_1.weight": (c,), "ln_1.bias": (c,),
              "c_attn.weight": (3 * c, c), "c_attn.bias": (3 * c,), "attn.c_proj.weight": (c, c),
              "attn.c_proj.bias": (c,), "ln_2.weight": (c,), "ln_2.bias": (c,), "c_fc.weight": (4 * c, c),
              "c_fc.bias": (4 * c,), "mlp.c_proj.weight": (c, 4 * c), "mlp.c_proj.bias": (c,),
              "ln_f.weight": (c,), "ln_f.bias": (c,), "lm_head": (config.vocab, c)}
    out = {}
    for pattern in NAMES:
        for layer in range(config.layers):
            name = pattern.format(l=layer)
            key = next(k for k in shapes if name.endswith(k + ".weight") or name.endswith(k))
            shape = shapes[key]
            if "ln_" in name and name.endswith("weight"):
                out[name] = rng.uniform(0.6, 1.4, shape)
            else:
                out[name] = rng.normal(0, 0.1 if "ln_" in name else 1 / np.sqrt(shape[-1]), shape)
    return out


def torch_logits(w: dict[str, np.ndarray], config: GptConfig, ids: np.ndarray) -> np.ndarray:
    """nanoGPT's forward in PyTorch (float64) on one sequence of ids: logits (T, vocab)."""
    t = {k: torch.tensor(v) for k, v in w.items()}
    T, c, heads = len(ids), config.width, config.heads
    x = t["transformer.wte.weight"][torch.tensor(ids)] + t["transformer.wpe.weight"][:T]
    for layer in range(config.layers):
        p = f"transformer.h.{layer}."
        h = F.layer_norm(x, (c,), t[p + "ln_1.weight"], t[p + "ln_1.bias"], config.eps)
        q, k, v = F.linear(h, t[p + "attn.c_attn.weight"], t[p + "attn.c_attn.bias"]).split(c, dim=1)
        q, k, v = (a.view(T, heads, c // heads).transpose(0, 1) for a in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(0, 1).contiguous().view(T, c)
        x = x + F.linear(y, t[p + "attn.c_proj.weight"], t[p + "attn.c_proj.bias"])
        h = F.layer_norm(x, (c,), t[p + "ln_2.weight"], t[p + "ln_2.bias"], config.eps)
        h = F.gelu(F.linear(h, t[p + "mlp.c_fc.weight"], t[p + "mlp.c_fc.bias"]))
        x = x + F.linear(h, t[p + "mlp.c_proj.weight"], t[p + "mlp.c_proj.bias"])
    x = F.layer_norm(x, (c,), t["transformer.ln_f.weight"], t["transformer.ln_f.bias"], config.eps)
    return F.linear(x, t["lm_head.weight"]).numpy()


def windows(count: int = 6, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, CONFIG.vocab, size=(count, CONFIG.context))


def test_the_step_graph_means_the_pytorch_model():
    """The float meaning of the prefill graph (LayerNorms folded into the Linears, heads split,
    causal softmax) is PyTorch's nanoGPT forward, every position's logits."""
    w = weights()
    ids = windows(3)
    g = step_graph(w, CONFIG, 0, CONFIG.context, all_logits=True)
    ours = evaluate_batch(g, {IDS: ids[:, :, None].astype(float)})[g.names[LOGITS]]
    for i, row in enumerate(ids):
        np.testing.assert_allclose(ours[i], torch_logits(w, CONFIG, row), atol=1e-9)


def test_a_decode_step_on_the_float_cache_means_the_last_position():
    """The step (5, 1) fed the float cache of the first 5 positions gives the float logits of
    position 5 of the whole sequence, and its new k and v rows are those of position 5."""
    w = weights()
    ids = windows(2)[:, :6]
    whole = step_graph(w, CONFIG, 0, 6, all_logits=True)
    full = evaluate_batch(whole, {IDS: ids[:, :, None].astype(float)})
    step = step_graph(w, CONFIG, 5, 1, all_logits=True)
    feed = {IDS: ids[:, 5:, None].astype(float)}
    for name in cache_names(CONFIG):
        feed[f"cache.{name}"] = full[whole.nodes[whole.names[name]].ins[0]][:, :5]
    got = evaluate_batch(step, feed)
    np.testing.assert_allclose(got[step.names[LOGITS]][:, 0], full[whole.names[LOGITS]][:, 5], atol=1e-9)
    for name in cache_names(CONFIG):
        np.testing.assert_allclose(got[step.nodes[step.names[name]].ins[0]][:, 0],
                                   full[whole.nodes[whole.names[name]].ins[0]][:, 5], atol=1e-9)


def interpreter_run(program, feed):
    values = interpret(program, feed)
    return {name: values[e.node] for name, e in program.ext.items() if e.kind == "output"}


def reference_run(program, feed):
    return {name: v.ints for name, v in program.run(feed, warn=False).outputs.items()}


def test_generation_reference_machine_equals_the_interpreter():
    """Greedy tokens through chunked prefill (chunk 2), decode steps and a slide of the window
    (context 8): the reference machine's tokens are the integer interpreter's, and every
    program reads the cache with the scale the programs that wrote it stored it with."""
    decoder = Decoder(weights(), CONFIG, windows(), DEFAULT, chunk=2)
    prompt, steps = [3, 1, 4, 1, 5], []

    def run(program, feed):
        steps.append(next(k for k, p in decoder.programs.items() if p is program))
        return reference_run(program, feed)
    on_machine = decoder.generate(prompt, 9, run)
    assert on_machine == decoder.generate(prompt, 9, interpreter_run)
    assert len(on_machine) == 9 and all(0 <= t < CONFIG.vocab for t in on_machine)
    prefill = [(0, 2), (2, 2), (4, 1)]       # 5 tokens in chunks of 2; the window slides to its last 4
    assert steps == [*prefill, (5, 1), (6, 1), (7, 1), *prefill[:2], (4, 1), (5, 1), (6, 1), (7, 1)]
    for (cached, _), program in decoder.programs.items():
        for name in cache_names(CONFIG):
            assert program.scales[program.ext[name].node] == decoder.scale(name)
            if cached:
                assert program.scales[program.ext[f"cache.{name}"].node] == decoder.scale(name)


def test_the_cache_rows_are_the_programs_integers():
    """What a step stores as its k and v rows is what the integer interpreter computes for the
    nodes those outputs read, and the next step's cache inputs are those levels."""
    decoder = Decoder(weights(), CONFIG, windows(), DEFAULT)
    fed = []

    def run(program, feed):
        fed.append((program, feed))
        return reference_run(program, feed)
    decoder.generate([2, 7], 2, run)
    (first, feed0), (second, feed1) = fed
    out = reference_run(first, feed0)
    for name in cache_names(CONFIG):
        assert np.array_equal(second.quantized_inputs(feed1)[second.ext[f"cache.{name}"].node], out[name])


@pytest.mark.parametrize(("cached", "new", "words"), [(7, 2, "2 new tokens after 7 cached"),
                                                      (0, 0, "0 new tokens after 0 cached"),
                                                      (-1, 1, "1 new tokens after -1 cached")])
def test_a_step_outside_the_context_is_refused(cached, new, words):
    with pytest.raises(CompileError, match=f"{words}: the model's context holds 8 positions"):
        step_graph(weights(), CONFIG, cached, new)


def test_bad_weights_and_vocabularies_are_refused():
    w = weights()
    del w["transformer.h.1.mlp.c_fc.bias"]
    with pytest.raises(CompileError, match=r"GPT weight 'transformer\.h\.1\.mlp\.c_fc\.bias' is missing"):
        step_graph(w, CONFIG, 0, 2)
    w = weights()
    w["lm_head.weight"] = w["lm_head.weight"][:, :3]
    with pytest.raises(CompileError, match=r"'lm_head.weight' has the shape \(11, 3\), not \(11, 16\)"):
        step_graph(w, CONFIG, 0, 2)
    big = GptConfig(vocab=200, context=8, layers=2, heads=2, width=16)
    with pytest.raises(CompileError, match="a vocabulary of 200 tokens: GA-2's GATHER takes an int8 id"):
        step_graph(weights(big), big, 0, 2)
    with pytest.raises(CompileError, match="an empty prompt"):
        Decoder(weights(), CONFIG, windows(), DEFAULT).generate([], 3, reference_run)
