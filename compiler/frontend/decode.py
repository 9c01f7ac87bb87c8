"""A GPT's prefill and decode steps with a KV cache, as GA-2 programs (issue 26).

The model is nanoGPT's (token and learned position embeddings, ``layers`` pre-norm blocks of
causal self-attention with a fused ``c_attn`` and a GELU MLP, a final LayerNorm, a head Linear
without bias), given by its weights in nanoGPT's names (:data:`NAMES`) as float arrays.

A **step** processes ``new`` tokens after ``cached`` tokens whose keys and values are in the
cache: ``step_graph(weights, config, cached, new)`` is the Capra graph of it. Prefill of a
prompt of P tokens is the step (0, P) (causal attention over the prompt); decoding the token at
position t is the step (t, 1). One program is compiled per (cached, new): the position rows
``wpe[cached:cached+new]`` and the cache length are constants of it.

What stays and what streams (the compiler's choice, stated): every weight and the cache lie
in external memory and stream through the scratchpad at each step (loaded whole or in blocks,
:mod:`compiler.streaming`); activations live in the scratchpad for the step only. The step's
new key and value rows of each layer and head are outputs, (new, head) int8 each, stored to
external memory as ``k<l>.<h>`` and ``v<l>.<h>``; the host appends them to the cache, which the
next step reads as the inputs ``cache.k<l>.<h>`` and ``cache.v<l>.<h>`` (cached, head),
concatenated above its own new rows. The output ``next`` is the argmax of the last row's
logits (the greedy token), which the host feeds back as the next step's ``ids``.

The cache's int8 scales are fixed from outside: every ``k<l>.<h>`` / ``v<l>.<h>`` is tagged
and compiled with ``ranges`` (:func:`cache_ranges`: the largest |value| over calibration text,
times a margin), so that all step programs share them and a row written by one step is read
by every later one with the same scale; :class:`Decoder` checks that each program holds them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from sim.spec import Params

from ..allocator import ScratchpadFull
from ..errors import CompileError
from ..evaluate import evaluate_batch
from ..ir import Graph
from ..pipeline import compile_graph
from ..program import Program

NAMES = ("transformer.wte.weight", "transformer.wpe.weight", "transformer.h.{l}.ln_1.weight",
         "transformer.h.{l}.ln_1.bias", "transformer.h.{l}.attn.c_attn.weight",
         "transformer.h.{l}.attn.c_attn.bias", "transformer.h.{l}.attn.c_proj.weight",
         "transformer.h.{l}.attn.c_proj.bias", "transformer.h.{l}.ln_2.weight", "transformer.h.{l}.ln_2.bias",
         "transformer.h.{l}.mlp.c_fc.weight", "transformer.h.{l}.mlp.c_fc.bias",
         "transformer.h.{l}.mlp.c_proj.weight", "transformer.h.{l}.mlp.c_proj.bias",
         "transformer.ln_f.weight", "transformer.ln_f.bias", "lm_head.weight")
"""The weights a GPT is given by (nanoGPT's state_dict names; ``{l}`` the layer)."""

IDS, NEXT, LOGITS = "ids", "next", "logits"
"""The step's input of token ids (new, 1), its output of the greedy token (1, 1) and, when
asked for, its output of every new row's logits (new, vocab)."""

MARGIN = 1.25
"""Cache ranges are the largest |value| seen in calibration times this (headroom for text
the calibration did not hold)."""


@dataclass(frozen=True)
class GptConfig:
    """A GPT's sizes: ``vocab`` tokens (ids 0..127: GA-2's embedding reads an int8 id),
    ``context`` positions, ``layers`` blocks, ``heads`` heads of ``width // heads`` columns,
    LayerNorm ``eps``."""

    vocab: int
    context: int
    layers: int
    heads: int
    width: int
    eps: float = 1e-5

    @property
    def head(self) -> int:
        return self.width // self.heads


def cache_names(config: GptConfig) -> list[str]:
    """The cache's tensors, ``k<l>.<h>`` then ``v<l>.<h>`` per layer and head."""
    return [f"{kind}{l}.{h}" for l in range(config.layers) for h in range(config.heads) for kind in "kv"]


def _folded(weights: Mapping[str, np.ndarray], norm: str, linear: str) -> tuple[np.ndarray, np.ndarray]:
    """A Linear's (out, in) weight and bias with the LayerNorm before it folded in:
    (z g + b) W^T + c = z (W diag g)^T + (W b + c)."""
    w = np.asarray(weights[f"{linear}.weight"], dtype=np.float64)
    bias = weights.get(f"{linear}.bias")
    c = np.zeros(w.shape[0]) if bias is None else np.asarray(bias, dtype=np.float64)
    g = np.asarray(weights[f"{norm}.weight"], dtype=np.float64)
    b = np.asarray(weights[f"{norm}.bias"], dtype=np.float64)
    return w * g[None, :], w @ b + c


def _attention(g: Graph, w: Mapping[str, np.ndarray], config: GptConfig, layer: int, normed: int,
               cached: int) -> int:
    """The attention of one block on the LayerNorm ``normed`` (without its affine part): per
    head h, q, k, v from their rows of the folded ``c_attn``, k and v concatenated below the
    cache, a causal softmax, and the sum over heads of y_h W_h^T through ``c_proj``."""
    prefix, d, width = f"transformer.h.{layer}.", config.head, config.width
    wa, ba = _folded(w, prefix + "ln_1", prefix + "attn.c_attn")
    proj = np.asarray(w[prefix + "attn.c_proj.weight"], dtype=np.float64)
    temperature = 1 / math.sqrt(d)           # the scores' factor, as scaled_dot_product_attention's
    merged = None
    for h in range(config.heads):
        parts = {}
        for i, kind in enumerate("qkv"):
            lo = i * width + h * d
            rows = g.matmul(normed, g.weight(f"{prefix}{kind}{h}.T", wa[lo:lo + d].T), bias=ba[lo:lo + d])
            parts[kind] = rows if kind == "q" else _with_cache(g, rows, f"{kind}{layer}.{h}", cached, d)
        scores = g.matmul(parts["q"], parts["k"], transpose_b=True, scale=temperature)
        mixed = g.matmul(g.softmax(scores, causal=True), parts["v"])
        head = g.matmul(mixed, g.weight(f"{prefix}proj{h}.T", proj[:, h * d:(h + 1) * d].T),
                        bias=None if h else w[prefix + "attn.c_proj.bias"])
        merged = head if merged is None else g.add(merged, head)
    return merged


def _with_cache(g: Graph, rows: int, name: str, cached: int, d: int) -> int:
    """This step's key or value rows, tagged and stored as ``name``, below ``cache.<name>``."""
    g.tag(rows, name)
    g.output(rows, name)
    return rows if cached == 0 else g.concat_rows(g.input(f"cache.{name}", (cached, d)), rows)


def _mlp(g: Graph, w: Mapping[str, np.ndarray], layer: int, normed: int) -> int:
    """c_proj(gelu(c_fc(x))) on the LayerNorm ``normed`` (ln_2 folded into c_fc)."""
    prefix = f"transformer.h.{layer}."
    wf, bf = _folded(w, prefix + "ln_2", prefix + "mlp.c_fc")
    hidden = g.table(g.matmul(normed, g.weight(f"{prefix}fc.T", wf.T), bias=bf), "gelu")
    wp = np.asarray(w[prefix + "mlp.c_proj.weight"], dtype=np.float64)
    return g.matmul(hidden, g.weight(f"{prefix}mlp_proj.T", wp.T), bias=w[prefix + "mlp.c_proj.bias"])


def step_graph(weights: Mapping[str, np.ndarray], config: GptConfig, cached: int, new: int,
               all_logits: bool = False) -> Graph:
    """The Capra graph of one step: ``new`` tokens at positions cached .. cached+new-1.

    Inputs: ``ids`` (new, 1) token ids; ``cache.k<l>.<h>``, ``cache.v<l>.<h>`` (cached, head)
    when cached > 0. Outputs: ``k<l>.<h>``, ``v<l>.<h>`` (new, head), this step's cache rows;
    ``next`` (1, 1), the argmax of the last row's logits; with ``all_logits``, ``logits``
    (new, vocab) of every row (for measuring perplexity).

    Raises:
        CompileError: cached + new beyond the context, new < 1 or cached < 0, a vocabulary
            beyond 128 ids, or a weight missing or of the wrong shape.
    """
    _check_step(weights, config, cached, new)
    g = Graph()
    ids = g.input(IDS, (new, 1))
    wpe = np.asarray(weights["transformer.wpe.weight"], dtype=np.float64)[cached:cached + new]
    x = g.add(g.embedding(ids, g.weight("wte", weights["transformer.wte.weight"])),
              g.weight(f"wpe[{cached}:{cached + new}]", wpe))
    for layer in range(config.layers):
        x = g.add(x, _attention(g, weights, config, layer, g.layernorm(x, eps=config.eps), cached))
        x = g.add(x, _mlp(g, weights, layer, g.layernorm(x, eps=config.eps)))
    head, head_bias = _folded({**weights, "lm_head.bias": np.zeros(config.vocab)}, "transformer.ln_f",
                              "lm_head")
    rows = x if all_logits else g.slice_rows(x, new - 1, 1)
    logits = g.matmul(g.layernorm(rows, eps=config.eps), g.weight("head.T", head.T), bias=head_bias)
    last = g.slice_rows(logits, new - 1, 1) if all_logits else logits
    g.output(g.argmax(last), NEXT)
    if all_logits:
        g.output(logits, LOGITS)
    return g


def _check_step(weights: Mapping[str, np.ndarray], config: GptConfig, cached: int, new: int) -> None:
    """Refuse a step outside the context, or weights that are not the config's."""
    if new < 1 or cached < 0 or cached + new > config.context:
        raise CompileError(f"step of {new} new tokens after {cached} cached: the model's context holds "
                           f"{config.context} positions (new >= 1, cached >= 0, cached + new <= context)",
                           "generate fewer tokens, or a shorter prompt")
    if not 1 <= config.vocab <= 128:
        raise CompileError(f"a vocabulary of {config.vocab} tokens: GA-2's GATHER takes an int8 id, 0..127",
                           "use at most 128 tokens")
    c, hidden = config.width, 4 * config.width
    shapes = {"transformer.wte.weight": (config.vocab, c), "transformer.wpe.weight": (config.context, c),
              "lm_head.weight": (config.vocab, c), "transformer.ln_f.weight": (c,),
              "transformer.ln_f.bias": (c,)}
    per_layer = {"ln_1.weight": (c,), "ln_1.bias": (c,), "attn.c_attn.weight": (3 * c, c),
                 "attn.c_attn.bias": (3 * c,), "attn.c_proj.weight": (c, c), "attn.c_proj.bias": (c,),
                 "ln_2.weight": (c,), "ln_2.bias": (c,), "mlp.c_fc.weight": (hidden, c),
                 "mlp.c_fc.bias": (hidden,), "mlp.c_proj.weight": (c, hidden), "mlp.c_proj.bias": (c,)}
    for layer in range(config.layers):
        shapes.update({f"transformer.h.{layer}.{k}": v for k, v in per_layer.items()})
    for name, shape in shapes.items():
        if name not in weights:
            raise CompileError(f"GPT weight '{name}' is missing", "give every weight of NAMES")
        if np.shape(weights[name]) != shape:
            raise CompileError(f"GPT weight '{name}' has the shape {np.shape(weights[name])}, not {shape}",
                               f"give the weights of a GPT of {config}")


def prefix_caches(weights: Mapping[str, np.ndarray], config: GptConfig,
                  windows: np.ndarray) -> dict[str, np.ndarray]:
    """The float keys and values of every layer and head for each of S windows of token ids
    (S, P): name -> float64 (S, P, head), from the float meaning of the prefill graph (0, P)."""
    windows = np.asarray(windows)
    g = step_graph(weights, config, 0, windows.shape[1])
    values = evaluate_batch(g, {IDS: windows[:, :, None].astype(np.float64)})
    return {name: values[g.nodes[g.names[name]].ins[0]] for name in cache_names(config)}


def cache_ranges(weights: Mapping[str, np.ndarray], config: GptConfig, windows: np.ndarray,
                 margin: float = MARGIN) -> dict[str, float]:
    """Each cache tensor's fixed range: its largest |value| over the windows (S, context) of
    calibration token ids, times ``margin``."""
    caches = prefix_caches(weights, config, windows)
    return {name: margin * float(np.max(np.abs(v))) for name, v in caches.items()}


Runner = Callable[[Program, Mapping[str, np.ndarray]], Mapping[str, np.ndarray]]
"""Runs a step's program on a feed (input name -> floats) and returns output name -> ints."""


@dataclass
class Decoder:
    """Greedy decoding of a GPT step by step, one compiled program per (cached, new).

    Attributes:
        weights, config: the GPT.
        calibration: token-id windows (S, context) of calibration text: each program's
            ranges come from the float model on them, the cache's from all of them.
        params: the machine compiled for (:data:`sim.spec.DEFAULT`: the default machine).
        programs: (cached, new) -> the compiled step (filled as steps are asked for).
        chunk: the most prompt tokens one prefill step takes: a longer prompt is prefilled in
            steps of ``chunk`` tokens, each reading the cache of those before (chunked
            prefill); lowered to a power of two whenever a step does not fit the scratchpad.
        all_logits: compile the steps with the ``logits`` output of every new row (for
            :meth:`logits`; the same programs otherwise, one more output stored).
    """

    weights: Mapping[str, np.ndarray]
    config: GptConfig
    calibration: np.ndarray
    params: Params
    programs: dict[tuple[int, int], Program] = field(default_factory=dict)
    chunk: int = 64
    all_logits: bool = False

    def __post_init__(self) -> None:
        self.calibration = np.asarray(self.calibration)
        self.ranges = cache_ranges(self.weights, self.config, self.calibration)
        self.caches = prefix_caches(self.weights, self.config, self.calibration)

    def program(self, cached: int, new: int) -> Program:
        """The compiled step (cached, new), its cache scales checked to be the fixed ones.

        Raises:
            CompileError: the step does not compile, or a cache tensor's scale is not the
                fixed one (a calibrated value beyond its fixed range).
        """
        if (cached, new) not in self.programs:
            g = step_graph(self.weights, self.config, cached, new, self.all_logits)
            samples = [self.sample(i, cached, new) for i in range(len(self.calibration))]
            program = compile_graph(g, samples, ranges=self.ranges, params=self.params)
            for name in cache_names(self.config):
                if program.scales[program.ext[name].node] != self.scale(name):
                    raise CompileError(f"step ({cached}, {new}): the cache tensor '{name}' has the scale "
                                       f"{program.scales[program.ext[name].node]!r}, not the fixed "
                                       f"{self.scale(name)!r}", "calibrate the cache ranges on more text")
            self.programs[cached, new] = program
        return self.programs[cached, new]

    def scale(self, name: str) -> float:
        """The fixed int8 scale of the cache tensor ``name``."""
        return self.ranges[name] / 127

    def sample(self, i: int, cached: int, new: int) -> dict[str, np.ndarray]:
        """A calibration sample of the step (cached, new) from the calibration window i."""
        window = self.calibration[i]
        sample = {IDS: np.asarray(window[cached:cached + new], dtype=np.float64)[:, None]}
        if cached:
            sample.update({f"cache.{n}": v[i, :cached] for n, v in self.caches.items()})
        return sample

    def feed(self, ids: Sequence[int], cache: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """A step's inputs: the token ids and the cache's int8 levels as the values they stand for
        (levels times the fixed scale, which the program quantizes back to the same levels)."""
        feed = {IDS: np.asarray(ids, dtype=np.float64)[:, None]}
        for name, levels in cache.items():
            if len(levels):
                feed[f"cache.{name}"] = np.asarray(levels, dtype=np.float64) * self.scale(name)
        return feed

    def generate(self, prompt: Sequence[int], tokens: int, run: Runner,
                 on_token: Callable[[int], None] | None = None) -> list[int]:
        """Prefill ``prompt`` (in steps of ``chunk`` tokens), then decode one token a step until
        ``tokens`` are generated; each step runs through ``run`` and its ``next`` is fed back.
        When the context is full, the cache is dropped and the last ``context // 2`` tokens are
        prefilled again (a sliding window, as nanoGPT's generate crops its input to the
        context). Returns the ``tokens`` generated ids; ``on_token`` is called with each.

        Raises:
            CompileError: an empty prompt, or a step that does not compile.
        """
        if not prompt:
            raise CompileError("an empty prompt: the first step needs at least one token", "give a prompt")
        seq, ids, out = list(prompt), list(prompt), []
        cache = self.empty_cache()
        while len(out) < tokens:
            cached = len(cache[next(iter(cache))])
            if cached + len(ids) > self.config.context:
                cache, cached, ids = self.empty_cache(), 0, seq[-(self.config.context // 2):]
            program = self.prefill_step(cached, len(ids))
            new = program.graph.nodes[program.graph.names[IDS]].shape[0]
            result = run(program, self.feed(ids[:new], cache))
            self.append(cache, result)
            ids = ids[new:]
            if not ids:
                ids = [int(np.asarray(result[NEXT]).ravel()[0])]
                seq.append(ids[0])
                out.append(ids[0])
                if on_token is not None:
                    on_token(ids[0])
        return out

    def logits(self, ids: Sequence[int], run: Runner) -> np.ndarray:
        """Teacher forcing: every position's logits, float64 (len(ids), vocab) (the int8 levels
        of the ``logits`` output times its scale), the ids taken in steps of ``chunk`` tokens
        (``chunk`` = 1: every position by a decode step, as generation makes them).

        Raises:
            CompileError: more ids than the context, or a decoder without ``all_logits``.
        """
        if not self.all_logits or not 1 <= len(ids) <= self.config.context:
            raise CompileError(f"logits of {len(ids)} ids by a decoder with all_logits={self.all_logits}",
                               f"make the decoder with all_logits=True; give 1..{self.config.context} ids")
        cache, rows = self.empty_cache(), []
        while len(rows) < len(ids):
            program = self.prefill_step(len(rows), len(ids) - len(rows))
            new = program.graph.nodes[program.graph.names[IDS]].shape[0]
            result = run(program, self.feed(ids[len(rows):len(rows) + new], cache))
            self.append(cache, result)
            rows.extend(np.asarray(result[LOGITS]) * program.scales[program.ext[LOGITS].node])
        return np.array(rows)

    def append(self, cache: dict[str, np.ndarray], result: Mapping[str, np.ndarray]) -> None:
        """Append a step's new k and v rows (its outputs in ``result``) to ``cache``."""
        for name, rows in cache.items():
            cache[name] = np.concatenate([rows, np.asarray(result[name]).reshape(-1, self.config.head)])

    def empty_cache(self) -> dict[str, np.ndarray]:
        """A cache of no rows: name -> int64 (0, head)."""
        return {name: np.zeros((0, self.config.head), dtype=np.int64) for name in cache_names(self.config)}

    def prefill_step(self, cached: int, waiting: int) -> Program:
        """The step that takes the next min(waiting, chunk) tokens after ``cached``; when it
        does not fit the scratchpad, ``chunk`` becomes the largest power of two below what was
        tried, until one fits.

        Raises:
            CompileError: even one token does not fit (or another refusal of the step).
        """
        while True:
            try:
                return self.program(cached, min(waiting, self.chunk))
            except ScratchpadFull:
                tried = min(waiting, self.chunk)
                if tried == 1:
                    raise
                self.chunk = 1 << ((tried - 1).bit_length() - 1)   # the largest power of two below
