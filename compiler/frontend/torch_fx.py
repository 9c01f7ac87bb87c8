"""The PyTorch front end: trace an ``nn.Module`` with torch.fx and lower it to a Capra graph.

    from compiler import compile_graph
    from compiler.frontend import from_torch

    lowered = from_torch(model, (64,), batch=8)      # or from_torch(model, torch.zeros(8, 64))
    program = compile_graph(lowered.graph, [lowered.feed(b) for b in calibration_batches])
    outcome = program.run(lowered.feed(images))      # images: 8 x 64, a tensor or an array
    logits, classes = lowered.unpack(outcome)        # shaped as the module returns them

How: ``torch.fx.symbolic_trace`` records ``forward`` as a graph of nodes; the graph is run
once on example inputs of the given shapes (torch.fx's ``ShapeProp``), which fixes every
tensor's shape and evaluates shape arithmetic (``q.shape[-1] ** -0.5``); unused nodes are
dropped; then every node is lowered, in order, to :class:`compiler.Graph` operations:

=============================================== ===============================================
PyTorch                                         Capra
=============================================== ===============================================
``nn.Linear`` without bias                      ``matmul(x, W^T)``; W^T is stored as the weight
                                                ``<module>.weight.T`` (in_features x out_features)
``nn.Linear`` with bias                         the same, then ``add`` of the bias repeated over
                                                the rows at compile time (weight ``<module>.bias``)
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
the returned tensor(s), a tuple too             one ``output`` each, named after the fx node
=============================================== ===============================================

The rules themselves are in :mod:`.fx_lower`. Inputs become Capra inputs named after
``forward``'s arguments, in their order (:attr:`TorchGraph.inputs`); every tensor is 2-D
(rows, cols).

Contract: nothing is approximated. A node that has no exact counterpart (another op,
another ``dim``, a relu that cannot ride on a matmul's requantizer, a tensor that is not
2-D, ...) is refused, and every refused node is collected before :class:`UnsupportedModel`
is raised, one ``REFUSED <node>: <op>: <why>`` line per node. A node is reported for a
problem of its own only (a refused operand does not make it refused, a wrong ``dim`` does).
When every node lowers, the compiler's structural passes (unit limits, relu fusion,
placement, external layout) run on the graph at once, so that a model they refuse fails
here too, named by its fx node; no code is emitted in either case.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
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

from ..ir import CompileError, Graph
from ..program import OutputValue, RunOutcome
from .fx_lower import STATIC, Lowering, Refusal, flatten

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
        traced: the traced module (after dead-code elimination), for inspection.
    """

    graph: Graph
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    output_shapes: tuple[tuple[int, ...], ...]
    origin: dict[int, str]
    traced: fx.GraphModule

    def feed(self, *values: Any) -> dict[str, np.ndarray]:
        """The inputs of a run or a calibration sample: input name -> float64 array.

        Args:
            values: one per input, in ``forward``'s order; torch tensors or array-likes of the
                traced shape.

        Raises:
            ValueError: not one value per input.
        """
        if len(values) != len(self.inputs):
            raise ValueError(f"the module takes {len(self.inputs)} input(s) ({', '.join(self.inputs)}), "
                             f"{len(values)} value(s) given")
        return {name: _as_array(value) for name, value in zip(self.inputs, values, strict=True)}

    def unpack(self, outcome: RunOutcome | Mapping[str, OutputValue]) -> list[np.ndarray]:
        """The outputs of a run, in the module's return order and shapes.

        Args:
            outcome: what :meth:`compiler.Program.run` returned, or its ``outputs``.

        Returns:
            One array per output: float64 values (int8 levels times the scale), or int64
            indices for an argmax.
        """
        outputs = outcome.outputs if isinstance(outcome, RunOutcome) else outcome
        result = []
        for name, shape in zip(self.outputs, self.output_shapes, strict=True):
            value = outputs[name]
            source = self.graph.nodes[self.graph.nodes[self.graph.names[name]].ins[0]]
            array = value.ints if source.op == "argmax" else value.floats
            result.append(np.asarray(array).reshape(shape))
        return result


def run_torch(module: nn.Module, *values: Any) -> list[np.ndarray]:
    """Run the module in PyTorch (no gradients) and flatten its outputs like :class:`TorchGraph`.

    Args:
        values: one per input of ``forward``: tensors or array-likes, converted to the
            module's parameter dtype (float32 when it has none).

    Returns:
        One numpy array per output: float64, or int64 for integer results (argmax).
    """
    dtype = _parameter_dtype(module)
    tensors = [torch.as_tensor(np.asarray(_as_array(v)), dtype=dtype) for v in values]
    with torch.no_grad():
        result = module(*tensors)
    flat = []
    for item in flatten(result):
        array = item.detach().cpu().numpy()
        flat.append(array.astype(np.int64 if not np.issubdtype(array.dtype, np.floating) else np.float64))
    return flat


# --------------------------------------------------------------------------- the entry point


def from_torch(module: nn.Module, *examples: torch.Tensor | Sequence[int], batch: int | None = None,
               params: Params = DEFAULT) -> TorchGraph:
    """Trace a module and lower it to a Capra graph for inputs of the given shapes.

    Args:
        module: the model. Its ``forward`` takes 2-D float tensors.
        examples: one per argument of ``forward``: an example tensor (its shape is used), or a
            shape. With ``batch``, a shape is that of one row: ``(64,)`` with ``batch=8``
            means (8, 64); without it a shape is complete: ``(8, 64)``.
        batch: rows of every input given by shape (the batch the program is compiled for).
        params: the machine the graph is meant for (its K_MAX and SM_MAX_LEN are checked).

    Returns:
        The :class:`TorchGraph`.

    Raises:
        UnsupportedModel: nodes GA-2 cannot run; the message has one line per node.
        CompileError: the module cannot be traced, or the examples do not fit ``forward``.
    """
    model = type(module).__name__
    try:
        traced = fx.symbolic_trace(module)
    except Exception as e:  # torch.fx raises TraceError, TypeError, NotImplementedError, ...
        raise CompileError(f"torch.fx cannot trace {model}: {type(e).__name__}: {_first_line(e)}",
                           "keep forward free of Python control flow that depends on tensor values") from e
    traced.graph.eliminate_dead_code()
    traced.recompile()
    tensors = _example_tensors(module, traced, examples, batch)
    try:
        with torch.no_grad():
            _ShapeRecorder(traced).propagate(*tensors)
    except Exception as e:  # whatever forward raises on inputs of these shapes
        shapes = ", ".join(str(tuple(t.shape)) for t in tensors)
        cause = e.__cause__ or e
        raise CompileError(f"{model} does not run on inputs of shape {shapes}: {_first_line(cause)}",
                           "give the shapes forward expects (batch= adds the rows)") from e
    lowering = Lowering(traced, params)
    lowering.run()
    if lowering.refusals:
        raise UnsupportedModel(model, lowering.refusals)
    refusal = lowering.check_structure()
    if refusal is not None:
        raise UnsupportedModel(model, [refusal])
    return TorchGraph(graph=lowering.graph, inputs=tuple(lowering.inputs), outputs=tuple(lowering.outputs),
                      output_shapes=tuple(lowering.output_shapes),
                      origin={nid: n.name for nid, n in lowering.origin.items()}, traced=traced)


# --------------------------------------------------------------------------- helpers


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def _parameter_dtype(module: nn.Module) -> torch.dtype:
    for parameter in module.parameters():
        if parameter.is_floating_point():
            return parameter.dtype
    return torch.float32


def _as_array(value: Any) -> np.ndarray:
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().numpy()
    return np.asarray(value, dtype=np.float64)


def _example_tensors(module: nn.Module, traced: fx.GraphModule, examples: Sequence[Any],
                     batch: int | None) -> list[torch.Tensor]:
    placeholders = [n.target for n in traced.graph.nodes if n.op == "placeholder"]
    if len(examples) != len(placeholders):
        raise CompileError(f"{type(module).__name__}.forward takes {len(placeholders)} input(s) "
                           f"({', '.join(placeholders)}), {len(examples)} example(s) given",
                           "give one example tensor or shape per input")
    if batch is not None and not (isinstance(batch, int) and batch >= 1):
        raise CompileError(f"batch={batch!r} is not a positive number of rows", "pass batch=8, say")
    tensors = []
    for name, example in zip(placeholders, examples, strict=True):
        if isinstance(example, torch.Tensor):
            if batch is not None:
                raise CompileError(f"input '{name}': an example tensor already has its rows, and batch= "
                                   "is given too", "pass a shape with batch=, or the tensor alone")
            tensors.append(example.detach())
            continue
        try:
            shape = tuple(int(d) for d in example)
        except (TypeError, ValueError):
            raise CompileError(f"input '{name}': example {example!r} is neither a tensor nor a shape",
                               "pass a tensor or a tuple of sizes") from None
        if batch is not None:
            shape = (batch, *shape)
        tensors.append(torch.zeros(shape, dtype=_parameter_dtype(module)))
    return tensors


class _ShapeRecorder(ShapeProp):
    """ShapeProp that also keeps each node's non-tensor result (shape arithmetic) in its meta."""

    def run_node(self, n: fx.Node) -> Any:
        result = super().run_node(n)
        if n.op != "output" and not isinstance(result, torch.Tensor):
            n.meta[STATIC] = result
        return result
