"""The PyTorch front end: trace an ``nn.Module`` with torch.fx and lower it to a Capra graph.

    from compiler.frontend import from_torch

    lowered = from_torch(model.eval(), (64,), batch=8)   # or from_torch(model, torch.zeros(8, 64))
    program = lowered.compile([lowered.feed(b) for b in calibration])   # compile_graph(lowered.graph, ...)
    outcome = program.run(lowered.feed(images))   # images: 8 x 64 (or fewer rows), a tensor or an array
    logits, classes = lowered.unpack(outcome)     # shaped as the module returns them

How: ``torch.fx.symbolic_trace`` records ``forward`` (of a copy of the module) as a graph of
nodes; an operation that changes a tensor in place is refused at once (see below); the graph
is run once on random example inputs of the given shapes (torch.fx's ``ShapeProp``), which
fixes every tensor's shape and evaluates shape arithmetic (``q.shape[-1] ** -0.5``), and
``forward`` itself is run on the same inputs: a trace that computes something else is
refused; unused nodes are dropped; then every node is lowered, in order, to
:class:`compiler.Graph` operations:

=============================================== ===============================================
PyTorch                                         Capra
=============================================== ===============================================
``nn.Linear`` without bias                      ``matmul(x, W^T)``; W^T is stored as the weight
                                                ``<module>.weight.T`` (in_features x out_features)
``nn.Linear`` with bias                         the same, then ``add`` of the bias repeated over
                                                the rows at compile time (weight ``<module>.bias``)
``F.linear(x, W, b)`` (a bare ``nn.Linear`` is  the same; a parameter W becomes the weight
traced as one)                                  ``<W>.T``, a computed W is read transposed
``a @ b``, ``torch.matmul``, ``torch.mm``,      ``matmul``; a second operand written ``b.T``,
``Tensor.matmul`` / ``mm``                      ``b.mT``, ``b.t()`` or ``b.transpose(-2, -1)`` is
                                                read transposed (``transpose_b``); a parameter's
                                                transpose is taken at compile time
``product * c``, ``c * product``,               the matmul's ``factor`` (c: a positive Python
``product / c``                                 number or shape arithmetic), when nothing else
                                                reads the product
``torch.relu``, ``F.relu``, ``nn.ReLU``,        ``relu``, which becomes the flag of the requantizer
``Tensor.relu``                                 of the matmul it reads
``softmax(dim=-1)`` (``torch``, ``F``,          ``softmax`` of each row
``nn.Softmax``, ``Tensor.softmax``)
``a + b``, ``torch.add``, ``Tensor.add``        ``add``; a constant operand (a parameter, a
                                                buffer, a number) is broadcast at compile time
``torch.cat`` / ``concat`` / ``concatenate``    ``concat_rows``, chained for more than two parts
with ``dim=0``
``argmax(dim=-1)``                              ``argmax`` (only an output may read its indices)
dropout (eval mode, or ``training=False``),     nothing: removed before lowering
``nn.Identity``, ``nn.Flatten`` on (batch,      (:mod:`.inference`); a dropout in training mode
features) data                                  is refused ("call model.eval() before tracing")
the returned tensor(s), a tuple too             one ``output`` each, named after the fx node
=============================================== ===============================================

In-place operations: torch.fx records ``h.add_(y)`` as a node whose result nothing reads,
which the dead-code elimination would drop, so the program would compute ``h`` unchanged. So
a Tensor method or torch function whose name ends in ``_``, a call with ``out=``, and a
call with ``inplace=True`` (``F.relu``, ``nn.ReLU(inplace=True)``, ...) whose change
another node could see (its operand is an input, a parameter, a view, or read by another
node too) are refused, each with the out-of-place form to write instead; ``inplace=True``
on a fresh result nothing else reads (``nn.ReLU(inplace=True)`` after a ``Linear``) is
lowered as the operation itself. ``h += y`` is traced as ``h = h + y``, which is right
unless another name still refers to the old ``h``; the run of ``forward`` beside the trace
catches that case.

The rules themselves are in :mod:`.fx_lower` (and :mod:`.inference`). Inputs become Capra
inputs named after ``forward``'s arguments, in their order (:attr:`TorchGraph.inputs`); every
tensor is 2-D (rows, cols). A LayerNorm (or RMSNorm) is refused: GA-2 has no exact integer
method for a row's reciprocal square root. A partial batch is padded by
:meth:`TorchGraph.feed` and trimmed by :meth:`TorchGraph.unpack` (:mod:`.batch`).

Contract: nothing is approximated. A node that has no exact counterpart (another op,
another ``dim``, a relu that cannot ride on a matmul's requantizer, a tensor that is not
2-D, ...) is refused, and every refused node is collected before :class:`UnsupportedModel`
is raised, one ``REFUSED <node>: <op>: <why>`` line per node; the op names a layer by its
module path, and a function by the path of the module it is called in. A node is reported for a
problem of its own only (a refused operand does not make it refused, a wrong ``dim`` does).
When every node lowers, the compiler's structural passes (unit limits, relu fusion,
placement, lifetimes, external layout: :func:`compiler.pipeline.check_structure`) run on
the graph at once, so that a model they refuse fails
here too, named by its fx node; no code is emitted in either case. :meth:`TorchGraph.compile`
names the layer likewise when the compiler refuses a node later (a layer whose result leaves
no room in the scratchpad for any blocking).
"""

from __future__ import annotations

import contextlib
import copy
import io
import math
import sys
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

try:
    import torch
    from torch import fx, nn
    from torch.fx.passes.shape_prop import ShapeProp
except ModuleNotFoundError as missing:  # pragma: no cover - depends on the installation
    raise ImportError("the PyTorch front end needs torch: install the extra with "
                      "pip install -e '.[torch]' (make setup does)") from missing

from sim.spec import DEFAULT, Params

from ..errors import CompileError, float_array
from ..ir import Graph
from ..ops import OPS
from ..pipeline import compile_graph
from ..program import OutputValue, Program, RunOutcome
from .batch import Feed, pad_batch
from .fx_lower import STATIC, Lowering, Refusal, article, describe, flatten
from .images import from_rows, to_rows
from .inference import drop_identities
from .inplace import inplace_refusals

__all__ = ["Refusal", "TorchGraph", "UnsupportedModel", "from_torch", "run_torch"]


# --------------------------------------------------------------------------- errors


class UnsupportedModel(CompileError):
    """A module that GA-2 cannot run as written; nothing was compiled.

    Attributes:
        refusals: one :class:`Refusal` per node at fault, in graph order.

    ``str(error)`` is a heading line, then one ``REFUSED`` line per node.
    """

    def __init__(self, model: str, refusals: Sequence[Refusal]):
        self.refusals = list(refusals)
        lines = [refusal.line() for refusal in self.refusals]
        count = f"{len(lines)} node" + ("s" if len(lines) != 1 else "")
        super().__init__("\n".join([f"{model}: {count} cannot run on GA-2; nothing was compiled", *lines]))


# --------------------------------------------------------------------------- the result


@dataclass
class TorchGraph:
    """A module lowered to a Capra graph.

    Attributes:
        graph: the Capra graph, ready for :func:`compiler.compile_graph`.
        inputs: Capra input names, in the order of ``forward``'s arguments.
        outputs: Capra output names, in the order the module returns them (a nested tuple
            flattened depth first).
        output_shapes: the shape PyTorch gives each output (an argmax without keepdim is
            (rows,), where Capra stores (rows, 1)).
        origin: Capra node id -> name of the fx node it was lowered from.
        traced: the traced module (after dead-code elimination and the removal of layers
            that change nothing at inference), for inspection.
        batch: the rows of every input when traced with ``batch=``, else None.
        model: the module's class name (for messages).
        params: the machine it was lowered for.
    """

    graph: Graph
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    output_shapes: tuple[tuple[int, ...], ...]
    origin: dict[int, str]
    traced: fx.GraphModule
    params: Params
    batch: int | None = None
    model: str = ""
    images: dict[str, tuple[int, int, int]] = field(default_factory=dict)
    """input name -> (C, H, W) for an input of images, fed (B, C, H, W) and stored (B*H*W, C)."""

    def feed(self, *values: Any) -> Feed:
        """The inputs of a run or a calibration sample: input name -> float64 array.

        A partial batch (traced with ``batch=``, given fewer rows) is padded with zero rows
        (:mod:`compiler.frontend.batch`), and :meth:`unpack` drops them from the outputs.

        Args:
            values: one per input, in ``forward``'s order; torch tensors or array-likes of the
                traced shape (or of fewer rows).

        Raises:
            ValueError: not one value per input; a value that is not real numbers (text,
                complex numbers, ragged rows: named by its input); a partial batch that cannot
                be padded (more rows than the batch, inputs of different rows, a model that
                mixes rows).
        """
        if len(values) != len(self.inputs):
            raise ValueError(f"the module takes {len(self.inputs)} input(s) ({', '.join(self.inputs)}), "
                             f"{len(values)} value(s) given")
        arrays = {name: self._as_input(name, value) for name, value in zip(self.inputs, values, strict=True)}
        if self.images:
            return self._feed_images(arrays)
        return pad_batch(arrays, self.batch, self.graph)

    def _feed_images(self, arrays: dict[str, np.ndarray]) -> Feed:
        """Inputs of images (b, C, H, W), b at most the traced batch B: padded with zero images to
        B (images are independent of each other), stored (B*H*W, C) (:mod:`.images`).

        Raises:
            ValueError: an input of another shape, more images than B, or inputs of different b.
        """
        rows, counts = {}, set()
        for name, array in arrays.items():
            chw = self.images.get(name)
            node = self.graph.nodes[self.graph.names[name]]
            if chw is None or array.ndim != 4 or tuple(array.shape[1:]) != chw:
                raise ValueError(f"input '{name}' has shape {array.shape}; the model was traced for images "
                                 f"(batch, {', '.join(map(str, chw or ()))})" if chw else
                                 f"input '{name}' is not images; a model of images takes images only")
            total = node.shape[0] // (chw[1] * chw[2])
            if not 0 < array.shape[0] <= total:
                raise ValueError(f"input '{name}' has {array.shape[0]} images; the model was traced for a "
                                 f"batch of {total}: feed 1 to {total} images")
            counts.add(array.shape[0])
            missing = total - array.shape[0]
            padded = np.concatenate([array, np.zeros((missing, *chw))]) if missing else array
            rows[name] = to_rows(padded)
        if len(counts) > 1:
            raise ValueError(f"the inputs have different numbers of images ({sorted(counts)})")
        (real,) = counts
        full = all(self.graph.nodes[self.graph.names[n]].shape[0] == rows[n].shape[0] and
                   real * self.images[n][1] * self.images[n][2] == rows[n].shape[0] for n in rows)
        return Feed(rows, None if full else real)

    def _as_input(self, name: str, value: Any) -> np.ndarray:
        """A fed value as float64; 1-D token ids as the (tokens, 1) column their input is."""
        array = _as_array(value, f"input '{name}'")
        shape = self.graph.nodes[self.graph.names[name]].shape
        return array.reshape(shape) if array.ndim == 1 and shape == (array.shape[0], 1) else array

    def unpack(self, outcome: RunOutcome | Mapping[str, OutputValue],
               rows: int | None = None) -> list[np.ndarray]:
        """The outputs of a run, in the module's return order and shapes.

        Args:
            outcome: what :meth:`compiler.Program.run` returned, or its ``outputs``.
            rows: keep only the first ``rows`` rows of each output; by default those of the
                run's :meth:`feed` when it padded a partial batch, else all.

        Returns:
            One array per output: float64 values (int8 levels times the scale), or int64
            indices for an argmax.

        Raises:
            TypeError: ``outcome`` is neither a RunOutcome nor a mapping of outputs.
            ValueError: an output of the module is missing from it.
        """
        if not isinstance(outcome, RunOutcome | Mapping):
            raise TypeError(f"unpack takes what Program.run returned (a RunOutcome) or its outputs, got "
                            f"{type(outcome).__name__}")
        outputs = outcome.outputs if isinstance(outcome, RunOutcome) else outcome
        missing = [name for name in self.outputs if name not in outputs]
        if missing:
            raise ValueError(f"the outcome has no output {', '.join(map(repr, missing))} (it has "
                             f"{', '.join(map(repr, outputs)) or 'none'}): unpack the run of this "
                             "TorchGraph's own program")
        if rows is None and isinstance(outcome, RunOutcome) and isinstance(outcome.inputs, Feed):
            rows = outcome.inputs.rows
        result = []
        for name, shape in zip(self.outputs, self.output_shapes, strict=True):
            value = outputs[name]
            source = self.graph.nodes[self.graph.nodes[self.graph.names[name]].ins[0]]
            array = value.floats if OPS[source.op].scaled else value.ints   # argmax: indices
            array = from_rows(array, shape) if len(shape) == 4 else np.asarray(array).reshape(shape)
            result.append(array if rows is None else array[:rows])
        return result

    def compile(self, calibration: Sequence[Mapping[str, object]], **options: Any) -> Program:
        """:func:`compiler.compile_graph` on the graph, for the machine it was lowered for
        (unless ``params=`` says otherwise); a refusal that names a node names the layer.

        Raises:
            UnsupportedModel: the compiler refuses a node (the scratchpad cannot hold any
                blocking of a layer, say); one ``REFUSED`` line names its fx node and layer.
            CompileError: another refusal (the calibration data, an argument).
        """
        options.setdefault("params", self.params)
        try:
            return compile_graph(self.graph, calibration, **options)
        except CompileError as e:
            name = self.origin.get(e.node) if e.node is not None else None
            if name is None:
                raise
            node = next(n for n in self.traced.graph.nodes if n.name == name)
            raise UnsupportedModel(self.model, [Refusal(name, describe(node, self.traced),
                                                        f"Capra refuses it: {e}")]) from e


def run_torch(module: nn.Module, *values: Any) -> list[np.ndarray]:
    """Run the module in PyTorch (no gradients) and flatten its outputs like :class:`TorchGraph`.

    Args:
        values: one per input of ``forward``: tensors or array-likes, converted to the
            module's parameter dtype (float32 when it has none).

    Returns:
        One numpy array per output: float64, or int64 for integer results (argmax).
    """
    dtype = _parameter_dtype(module)
    tensors = [torch.as_tensor(_as_array(v, f"argument {k} of forward"), dtype=dtype)
               for k, v in enumerate(values)]
    with torch.no_grad():
        result = module(*tensors)
    flat = []
    for item in flatten(result):
        array = item.detach().cpu().numpy()
        flat.append(array.astype(np.int64 if not np.issubdtype(array.dtype, np.floating) else np.float64))
    return flat


# --------------------------------------------------------------------------- the entry point


def from_torch(module: nn.Module, *examples: torch.Tensor | Sequence[int], batch: int | None = None,
               params: Params = DEFAULT, per_channel: bool = False) -> TorchGraph:
    """Trace a module and lower it to a Capra graph for inputs of the given shapes.

    Args:
        module: the model. Its ``forward`` takes 2-D float tensors, each a named argument.
        examples: one per argument of ``forward``: an example tensor (its shape and dtype are
            used, not its values), or a shape. With ``batch``, a shape is that of one row:
            ``(64,)`` with ``batch=8`` means (8, 64); without it a shape is complete: ``(8, 64)``.
        batch: rows of every input given by shape (the batch the program is compiled for).
        params: the machine the graph is meant for (its K_MAX and SM_MAX_LEN are checked).
        per_channel: convolution weights get a scale per output channel, and their
            requantizers a pair per channel (:mod:`compiler.channels`); False: per tensor.

    Returns:
        The :class:`TorchGraph`.

    Raises:
        UnsupportedModel: nodes GA-2 cannot run; the message has one line per node. Raised
            before the module runs at all when it changes a tensor in place.
        CompileError: not a module, or one torch.fx cannot trace (or traces into a graph that
            computes something else than forward), or examples that do not fit ``forward``.

    The module is left untouched: the trace and both runs on the example inputs (the traced
    graph, and ``forward`` itself to check that the trace computes what it does) work on
    copies of it, and the global random state is restored after them.
    """
    if not isinstance(module, nn.Module):
        kind = type(module).__name__
        raise CompileError(f"from_torch takes a torch.nn.Module, not {article(kind)} {kind} ({module!r:.60})",
                           "wrap the computation in a module: class Model(nn.Module) whose forward(self, x) "
                           "computes it")
    model = type(module).__name__
    try:
        working = copy.deepcopy(module)
    except Exception:  # a module that cannot be copied is traced as it is
        working = module
    try:
        traced = fx.GraphModule(working, BufferTracer().trace(working), model)
    except Exception as e:  # torch.fx raises TraceError, TypeError, NotImplementedError, ...
        raise CompileError(f"torch.fx cannot trace {model}: {type(e).__name__}: {_first_line(e)}",
                           _trace_fix(e)) from e
    refusals = inplace_refusals(traced)
    if refusals:  # before anything runs: the model must not change the user's tensors
        raise UnsupportedModel(model, refusals)
    tensors = _example_tensors(module, traced, examples, batch)
    traced_outputs = _propagate(model, traced, tensors)
    _check_trace(module, working, traced, tensors, traced_outputs)
    traced.graph.eliminate_dead_code()
    drop_identities(traced)
    lowering = Lowering(traced, params, per_channel=bool(per_channel))
    lowering.run()
    if lowering.refusals:
        raise UnsupportedModel(model, lowering.refusals)
    refusal = lowering.check_structure()
    if refusal is not None:
        raise UnsupportedModel(model, [refusal])
    return TorchGraph(graph=lowering.graph, inputs=tuple(lowering.inputs), outputs=tuple(lowering.outputs),
                      output_shapes=tuple(lowering.output_shapes),
                      origin={nid: n.name for nid, n in lowering.origin.items()}, traced=traced, batch=batch,
                      model=model, params=params, images=dict(lowering.image_inputs))


class BufferTracer(fx.Tracer):
    """``torch.fx.symbolic_trace``'s tracer, but a buffer read in ``forward`` is a ``get_attr``
    node as a parameter is, not a tensor fixed at trace time: ``self.bias[:, :T, :T]`` with T the
    input's length (nanoGPT's causal mask) is then traced rather than refused."""

    def getattr(self, attr: str, attr_val: Any, parameter_proxy_cache: dict) -> Any:
        if isinstance(attr_val, torch.Tensor) and not isinstance(attr_val, nn.Parameter):
            for name, buffer in self.root.named_buffers():
                if buffer is attr_val:
                    return self.create_proxy("get_attr", name, (), {})
        return super().getattr(attr, attr_val, parameter_proxy_cache)


def _trace_fix(error: Exception) -> str:
    if "item assignment" in str(error):
        return ("build the tensor out of place instead of assigning into it (h[0] = 0): torch.fx cannot "
                "record it")
    return "keep forward free of Python control flow that depends on tensor values"


def _propagate(model: str, traced: fx.GraphModule, tensors: list[torch.Tensor]) -> Any:
    """Run the traced graph on the example inputs, recording every node's shape; its result.

    torch.fx prints the traceback of a failing node to stderr; it is held back, and the
    CompileError names the node and carries the cause's first line instead. Warnings printed
    by a successful run are passed on.
    """
    recorder = _ShapeRecorder(traced)
    printed = io.StringIO()
    try:
        with torch.no_grad(), contextlib.redirect_stderr(printed), torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            result = recorder.propagate(*tensors)
    except Exception as e:  # whatever forward raises on inputs of these shapes
        shapes = ", ".join(str(tuple(t.shape)) for t in tensors)
        cause = e.__cause__ or e
        where = ""
        if recorder.node is not None:
            where = f"{recorder.node.name} ({describe(recorder.node, traced)}) raises "
        raise CompileError(f"{model} does not run on inputs of shape {shapes}: {where}"
                           f"{type(cause).__name__}: {_first_line(cause)}",
                           "give the shapes forward expects (batch= adds the rows)") from e
    sys.stderr.write(printed.getvalue())
    return result


def _check_trace(module: nn.Module, working: nn.Module, traced: fx.GraphModule, tensors: list[torch.Tensor],
                 traced_outputs: Any) -> None:
    """Run forward itself on the example inputs and compare with what the traced graph gave.

    torch.fx can record a graph that computes something else than forward: it records
    ``h += y`` as ``h = h + y``, so another name for the old ``h`` keeps the old values in the
    graph, while in PyTorch it sees the sum. Such a difference is refused here, naming the
    nodes whose results nothing reads (the usual trace of it).
    """
    model = type(module).__name__
    try:
        reference = copy.deepcopy(module) if working is not module else module
    except Exception:
        reference = module
    saved = {name: t.detach().clone() for name, t in reference.state_dict(keep_vars=True).items()
             if isinstance(t, torch.Tensor)}
    inputs = [t.clone() for t in tensors]
    try:
        with torch.no_grad(), torch.random.fork_rng(devices=[]), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the traced run has shown them already
            torch.manual_seed(0)
            wanted = reference(*inputs)
    except Exception as e:  # the traced graph ran; forward itself does not
        raise CompileError(f"{model}.forward raises {type(e).__name__} on inputs of shape "
                           f"{', '.join(str(tuple(t.shape)) for t in tensors)} where its torch.fx trace "
                           f"runs: {_first_line(e)}",
                           "run the module on inputs of these shapes in PyTorch to see why") from e
    finally:
        if reference is module:  # put back what forward changed
            with torch.no_grad():
                for name, t in reference.state_dict(keep_vars=True).items():
                    if name in saved:
                        t.copy_(saved[name])
    got, want = ([v.detach() if isinstance(v, torch.Tensor) else v for v in flatten(result)]
                 for result in (traced_outputs, wanted))
    names = [item.name if isinstance(item, fx.Node) else repr(item)
             for item in flatten(next(n for n in traced.graph.nodes if n.op == "output").args[0])]
    problems = []
    if len(got) != len(want):
        problems.append(f"the trace returns {len(got)} value(s), forward {len(want)}")
    for k, (g, w) in enumerate(zip(got, want, strict=False)):
        if not (isinstance(g, torch.Tensor) and isinstance(w, torch.Tensor)):
            continue
        if g.shape != w.shape:
            problems.append(f"output {k} ({names[k]}) has shape {tuple(g.shape)} in the trace, "
                            f"{tuple(w.shape)} in forward")
        elif (largest := _difference(g, w)) is not None:
            problems.append(f"output {k} ({names[k]}) differs from forward's by up to {largest:.3g}")
    if not problems:
        return
    unread = [f"{n.name} ({describe(n, traced)})" for n in traced.graph.nodes
              if n.op in ("call_function", "call_method", "call_module") and not n.users]
    hint = (f"; nothing reads the result of {', '.join(unread)}" if unread else "")
    raise CompileError(f"{model}: the graph torch.fx traced computes something else than forward on the "
                       f"same inputs: {'; '.join(problems)}{hint}. torch.fx records an augmented assignment "
                       "(h += y, h *= c) as h = h + y: another name for the old h keeps its old values in "
                       "the graph, while in PyTorch it sees the change",
                       "write h = h + y (out of place) and read the name you mean; nothing was compiled")


def _difference(got: torch.Tensor, want: torch.Tensor) -> float | None:
    """None when two results agree (float: to 1e-4 of the largest, NaN where NaN); else the
    largest difference."""
    inexact = got.is_floating_point() or got.is_complex()
    wide = torch.complex128 if got.is_complex() or want.is_complex() else torch.float64
    got, want = got.to(wide), want.to(wide)
    if inexact:
        finite = want[torch.isfinite(want)]
        scale = max(float(finite.abs().max()), 1.0) if finite.numel() else 1.0
        if torch.allclose(got, want, rtol=1e-4, atol=1e-5 * scale, equal_nan=True):
            return None
    elif torch.equal(got, want):
        return None
    return float((got - want).abs().nan_to_num(nan=math.inf).max())


# --------------------------------------------------------------------------- helpers


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def _parameter_dtype(module: nn.Module) -> torch.dtype:
    for parameter in module.parameters():
        if parameter.is_floating_point():
            return parameter.dtype
    return torch.float32


def _as_array(value: Any, what: str) -> np.ndarray:
    """A fed value as float64; text, complex numbers (whose imaginary part would be dropped),
    ragged rows and non-numbers are refused (ValueError naming the value: ``what``)."""
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().numpy()
    array, why = float_array(value)
    if array is None:
        raise ValueError(f"{what}: {why}; feed a real tensor or array of its shape")
    return array


def _example_tensors(module: nn.Module, traced: fx.GraphModule, examples: Sequence[Any],
                     batch: int | None) -> list[torch.Tensor]:
    """Random tensors (seeded, unit Gaussian for floats) of the examples' shapes and dtypes."""
    model = type(module).__name__
    placeholders = [n for n in traced.graph.nodes if n.op == "placeholder"]
    for node in placeholders:
        if str(node.target).startswith("*"):
            raise CompileError(f"{model}.forward takes {node.target}; torch.fx traces named arguments only",
                               "name each input: def forward(self, x, y)")
    names = [str(n.target) for n in placeholders]
    if len(examples) != len(placeholders):
        problem = (f"{model}.forward takes {len(placeholders)} input(s) ({', '.join(names)}), "
                   f"{len(examples)} example(s) given")
        defaults = [f"'{n.target}' (default {n.args[0]!r})" for n in placeholders[len(examples):] if n.args]
        if defaults and len(examples) < len(placeholders):
            problem += (f"; {', '.join(defaults)} cannot be left at its default: the front end traces every "
                        "argument of forward as a tensor input")
            raise CompileError(problem, "give one example per argument, or make a setting such as a scale "
                               "an attribute set in __init__ (self.scale = 2.0) rather than an argument of "
                               "forward")
        raise CompileError(problem, "give one example tensor or shape per input")
    if batch is not None and not _is_size(batch):
        raise CompileError(f"batch={batch!r} is not a positive whole number of rows", "pass batch=8, say")
    generator = torch.Generator().manual_seed(0)
    tensors = []
    for name, example in zip(names, examples, strict=True):
        if isinstance(example, torch.Tensor):
            if batch is not None:
                raise CompileError(f"input '{name}': an example tensor already has its rows, and batch= "
                                   "is given too", "pass a shape with batch=, or the tensor alone")
            shape, dtype = tuple(example.shape), example.dtype
        else:
            if isinstance(example, str | bytes) or not isinstance(example, Sequence | torch.Size):
                raise CompileError(f"input '{name}': example {example!r:.60} is neither a tensor nor a shape",
                                   "pass a tensor or a tuple of sizes") from None
            shape, dtype = tuple(example), _parameter_dtype(module)
            if batch is not None:
                shape = (batch, *shape)
        bad = [d for d in shape if not _is_size(d)]
        if bad:
            raise CompileError(f"input '{name}': example shape {shape} has the size {bad[0]!r}, which is not "
                               "a positive whole number", "give every size as an integer of at least 1")
        tensors.append(_random(tuple(int(d) for d in shape), dtype, generator))
    return tensors


def _is_size(value: Any) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool) and value >= 1


def _random(shape: tuple[int, ...], dtype: torch.dtype, generator: torch.Generator) -> torch.Tensor:
    if dtype.is_floating_point or dtype.is_complex:
        return torch.randn(shape, generator=generator).to(dtype)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=generator).bool()
    return torch.randint(0, 5, shape, generator=generator).to(dtype)   # non-negative: token ids


class _ShapeRecorder(ShapeProp):
    """ShapeProp that also keeps each node's non-tensor result (shape arithmetic) in its meta."""

    node: fx.Node | None = None
    """The node being run (the one at fault when the run fails)."""

    def run_node(self, n: fx.Node) -> Any:
        self.node = n
        result = super().run_node(n)
        if n.op != "output" and not isinstance(result, torch.Tensor):
            n.meta[STATIC] = result
        return result
