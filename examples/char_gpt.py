#!/usr/bin/env python3
"""A small character-level GPT that writes on GA-2 (issue 26).

The model is nanoGPT's, small: 2 layers, d_model 64, 4 heads of 16, context 32, GELU MLP of
256, a vocabulary of the corpus's characters (ASCII, under 128). The corpus
(``examples/data/char_gpt_corpus.txt``, 120 kB) is this project's own prose, frozen at commit
a6166de: README.md, docs/GA2.md and docs/guide/*.md concatenated (Apache-2.0, the project's
license). Its first 90% trains, the last 10% is held out.

* ``--train``: trains it on the CPU (AdamW, a few minutes) and writes the weights to
  ``examples/data/char_gpt.npz`` (float32, nanoGPT's names). The tests read those weights and
  never retrain.
* ``--quality``: float and GA-2 int8 perplexity per character on held-out windows (the int8
  logits from the integer interpreter, which equals the reference machine), and the int8 top-1
  agreement with float.
* default: greedy generation from ``--prompt`` on the reference machine, the same tokens from
  the integer interpreter; with ``--rtl icarus|verilator`` each step also runs on the RTL, the
  RTL's token fed back (the host loop), and the last line is ``tokens identical to the
  reference machine: N of N``.

The decode loop (:mod:`compiler.frontend.decode`): prefill of the prompt is one program, each
further token one program per cache length; the KV cache is in external memory with fixed
int8 scales, appended to by the host after each step.

Usage: python examples/char_gpt.py [--train] [--quality] [--prompt TEXT] [--tokens 24]
                                   [--rtl none|icarus|verilator]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from _cli import positive  # examples/_cli.py
from torch import nn

from compiler.frontend.decode import IDS, LOGITS, NEXT, Decoder, GptConfig, step_graph
from sim.spec import DEFAULT

DATA = Path(__file__).resolve().parent / "data"
CORPUS, WEIGHTS = DATA / "char_gpt_corpus.txt", DATA / "char_gpt.npz"
LAYERS, WIDTH, HEADS, CONTEXT = 2, 64, 4, 32
HELD_OUT = 0.1
CALIBRATION = 16
"""Calibration windows (from the training text) for every step program and the cache ranges."""


class Attention(nn.Module):
    """nanoGPT's causal self-attention for one sequence x (T, C)."""

    def __init__(self):
        super().__init__()
        self.c_attn, self.c_proj = nn.Linear(WIDTH, 3 * WIDTH), nn.Linear(WIDTH, WIDTH)

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, HEADS, C // HEADS).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1, self.attn, self.ln_2 = nn.LayerNorm(WIDTH), Attention(), nn.LayerNorm(WIDTH)
        self.mlp = nn.ModuleDict({"c_fc": nn.Linear(WIDTH, 4 * WIDTH), "c_proj": nn.Linear(4 * WIDTH, WIDTH)})

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp.c_proj(F.gelu(self.mlp.c_fc(self.ln_2(x))))


class GPT(nn.Module):
    """nanoGPT, small: token ids (B, T) -> logits (B, T, vocab)."""

    def __init__(self, vocab: int):
        super().__init__()
        self.transformer = nn.ModuleDict({
            "wte": nn.Embedding(vocab, WIDTH), "wpe": nn.Embedding(CONTEXT, WIDTH),
            "h": nn.ModuleList(Block() for _ in range(LAYERS)), "ln_f": nn.LayerNorm(WIDTH)})
        self.lm_head = nn.Linear(WIDTH, vocab, bias=False)

    def forward(self, ids):
        t = self.transformer
        x = t.wte(ids) + t.wpe(torch.arange(ids.shape[1]))
        for block in t.h:
            x = block(x)
        return self.lm_head(t.ln_f(x))


def corpus() -> tuple[str, list[str]]:
    """The corpus text and its vocabulary (sorted characters)."""
    text = CORPUS.read_text(encoding="ascii")
    return text, sorted(set(text))


def split(text: str, vocab: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """The corpus as ids: the training part and the held-out part (the last 10%)."""
    index = {c: i for i, c in enumerate(vocab)}
    ids = np.array([index[c] for c in text], dtype=np.int64)
    cut = int(len(ids) * (1 - HELD_OUT))
    return ids[:cut], ids[cut:]


def train(steps: int, seed: int = 0) -> None:
    """Train on the training part and save the weights (float32, nanoGPT's names)."""
    text, vocab = corpus()
    data, _ = split(text, vocab)
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    model = GPT(len(vocab))
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.1)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=3e-3, total_steps=steps, pct_start=0.1)
    started = time.time()
    for step in range(steps):
        starts = rng.integers(0, len(data) - CONTEXT - 1, size=32)
        x = torch.tensor(np.stack([data[s:s + CONTEXT] for s in starts]))
        y = torch.tensor(np.stack([data[s + 1:s + CONTEXT + 1] for s in starts]))
        loss = F.cross_entropy(model(x).view(-1, len(vocab)), y.view(-1))
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        if step % 250 == 0 or step == steps - 1:
            print(f"step {step:5d}  loss {loss.item():.3f}  ({time.time() - started:.0f} s)", flush=True)
    weights = {k: v.detach().numpy().astype(np.float32) for k, v in model.state_dict().items()}
    np.savez(WEIGHTS, vocab=np.array(vocab), **weights)
    print(f"saved {WEIGHTS} after {steps} steps, {time.time() - started:.0f} s")


def load() -> tuple[dict[str, np.ndarray], GptConfig, list[str]]:
    """The saved weights (float64), the config and the vocabulary."""
    if not WEIGHTS.exists():
        raise SystemExit(f"error: no weights at {WEIGHTS}: train them with "
                         "python examples/char_gpt.py --train")
    with np.load(WEIGHTS) as saved:
        vocab = [str(c) for c in saved["vocab"]]
        weights = {k: saved[k].astype(np.float64) for k in saved.files if k != "vocab"}
    return weights, GptConfig(len(vocab), CONTEXT, LAYERS, HEADS, WIDTH), vocab


def calibration_windows(data: np.ndarray, count: int = CALIBRATION) -> np.ndarray:
    """``count`` windows of CONTEXT ids, evenly spaced over the training text."""
    starts = np.linspace(0, len(data) - CONTEXT - 1, count).astype(int)
    return np.stack([data[s:s + CONTEXT] for s in starts])


def decoder() -> tuple[Decoder, list[str]]:
    """The GPT's decoder (calibrated on the training text) and its vocabulary."""
    weights, config, vocab = load()
    data, _ = split(corpus()[0], vocab)
    return Decoder(weights, config, calibration_windows(data), DEFAULT), vocab


def perplexity(logits: np.ndarray, targets: np.ndarray) -> float:
    """exp of the mean cross-entropy of float logits (N, vocab) for the target ids (N,)."""
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return float(np.exp(-log_p[np.arange(len(targets)), targets].mean()))


def quality(windows: int, chunk: int = 1) -> dict[str, float]:
    """Float and GA-2 int8 perplexity per character on ``windows`` held-out windows of CONTEXT
    characters, and the share of positions where the int8 argmax is the float one. The int8
    logits are the decode path's: each window stepped through ``chunk`` tokens a step (1: every
    position by a decode step with the KV cache) by the integer interpreter, which equals the
    reference machine; the float logits are the model's in float64 (the graph's float meaning)."""
    from compiler.evaluate import evaluate_batch

    weights, config, vocab = load()
    data, held = split(corpus()[0], vocab)
    dec = Decoder(weights, config, calibration_windows(data), DEFAULT, chunk=chunk, all_logits=True)
    starts = np.linspace(0, len(held) - CONTEXT - 1, windows).astype(int)
    inputs = np.stack([held[s:s + CONTEXT] for s in starts])
    targets = np.stack([held[s + 1:s + CONTEXT + 1] for s in starts]).reshape(-1)
    g = step_graph(weights, config, 0, CONTEXT, all_logits=True)
    floats = evaluate_batch(g, {IDS: inputs[:, :, None].astype(np.float64)})[g.names[LOGITS]]
    floats = floats.reshape(-1, config.vocab)
    int8 = np.concatenate([dec.logits(list(w), interpreter_run) for w in inputs])
    return {"float": perplexity(floats, targets), "int8": perplexity(int8, targets),
            "agree": float(np.mean(floats.argmax(1) == int8.argmax(1))), "chars": len(targets)}


def outputs_of(program, ext: np.ndarray) -> dict[str, np.ndarray]:
    """A step's outputs (name -> ints) read from an external memory after its run: int8 levels,
    and the argmax's row index as int32."""
    from sim.machine import s8, s32

    out = {}
    for name, entry in program.ext.items():
        if entry.kind == "output":
            words = np.asarray(ext[entry.addr:entry.addr + entry.words])
            out[name] = (s32(words) if name == NEXT else s8(words)).reshape(entry.shape)
    return out


def reference_run(program, feed):
    """A step on the reference machine (sim/machine.py)."""
    return {name: value.ints for name, value in program.run(feed, warn=False).outputs.items()}


def interpreter_run(program, feed):
    """A step by the integer interpreter (compiler/interpret.py)."""
    from compiler.interpret import interpret

    values = interpret(program, feed)
    return {name: values[entry.node] for name, entry in program.ext.items() if entry.kind == "output"}


def rtl_runner(simulator: str, steps: list):
    """A step on the RTL (one launch of ``simulator`` a step); each step's account
    (name, cycles, differences to the reference machine) is appended to ``steps``."""
    from cosim.api import compare, run_programs

    def run(program, feed):
        job = (program.code, program.ext_image(feed), f"gpt step {len(steps)}")
        (done,) = run_programs([job], simulator, say=lambda _line: None)
        steps.append((job[2], done.counters, compare(job, done)))
        return outputs_of(program, done.ext)
    return run


def generate(prompt: str, tokens: int, rtl: str) -> int:
    """Greedy generation on the reference machine and the interpreter (and the RTL)."""
    dec, vocab = decoder()
    index = {c: i for i, c in enumerate(vocab)}
    unknown = sorted(set(prompt) - set(index))
    if unknown:
        raise SystemExit(f"error: the prompt holds characters the model does not know: {unknown!r}")
    ids = [index[c] for c in prompt]
    text = lambda out: "".join(vocab[i] for i in out)  # noqa: E731
    started = time.time()
    reference = dec.generate(ids, tokens, reference_run)
    print(f"reference machine ({time.time() - started:.0f} s): {prompt!r} + {text(reference)!r}")
    interpreted = dec.generate(ids, tokens, interpreter_run)
    same = sum(a == b for a, b in zip(reference, interpreted, strict=True))
    print(f"tokens identical, integer interpreter and reference machine: {same} of {tokens}")
    failed = same != tokens
    for simulator in {"none": (), "both": ("icarus", "verilator")}.get(rtl, (rtl,)):
        failed |= on_the_rtl(dec, vocab, ids, reference, simulator)
    return 1 if failed else 0


def on_the_rtl(dec: Decoder, vocab: list[str], ids: list[int], reference: list[int], simulator: str) -> bool:
    """The host loop with every step on the RTL (its own tokens fed back); True when a token or
    a step differs from the reference machine."""
    steps: list = []
    started = time.time()
    print(f"{simulator}: ", end="", flush=True)
    tokens = dec.generate(ids, len(reference), rtl_runner(simulator, steps),
                          lambda t: print(vocab[t], end="", flush=True))
    cycles = sum(counters.cycles for _, counters, _ in steps)
    print(f"\n{simulator}: {len(steps)} programs, {cycles} cycles, {time.time() - started:.0f} s")
    for name, _, diffs in steps:
        if diffs:
            print(f"  {name} differs from the reference machine: " + "; ".join(diffs))
    same = sum(a == b for a, b in zip(reference, tokens, strict=True))
    print(f"tokens identical to the reference machine: {same} of {len(reference)}")
    return same != len(reference) or any(diffs for _, _, diffs in steps)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="A small character-level GPT: train it, measure it, "
                                     "generate with it on GA-2.")
    parser.add_argument("--train", action="store_true", help="train and save the weights")
    parser.add_argument("--steps", type=positive, default=2000, help="training steps (default 2000)")
    parser.add_argument("--quality", action="store_true", help="float vs int8 perplexity on held-out text")
    parser.add_argument("--windows", type=positive, default=64,
                        help="held-out windows for --quality (default 64)")
    parser.add_argument("--chunk", type=positive, default=1,
                        help="tokens a step for --quality (default 1: decode steps; 4: prefill steps)")
    parser.add_argument("--prompt", default="The compiler ", help="the prompt (default 'The compiler ')")
    parser.add_argument("--tokens", type=positive, default=24, help="characters to generate (default 24)")
    parser.add_argument("--rtl", choices=("none", "icarus", "verilator", "both"), default="none",
                        help="also run every step on the RTL (default none)")
    args = parser.parse_args(argv)
    if args.train:
        train(args.steps)
        return 0
    if args.quality:
        q = quality(args.windows, args.chunk)
        print(f"held-out perplexity per character on {q['chars']} characters, {args.chunk} a step: "
              f"float {q['float']:.3f}, "
              f"GA-2 int8 {q['int8']:.3f} ({100 * (q['int8'] / q['float'] - 1):+.1f}%); "
              f"int8 top-1 = float top-1 on {100 * q['agree']:.1f}%")
        return 0
    if not args.prompt:
        parser.error("--prompt: give at least one character")
    return generate(args.prompt, args.tokens, args.rtl)


if __name__ == "__main__":
    sys.exit(main())
