"""The lowering rules of the PyTorch front end: a traced fx graph -> a Capra graph.

:func:`compiler.frontend.torch_fx.from_torch` traces the module and runs it on example
inputs (so every node carries its shape, and shape arithmetic its value, in ``node.meta``);
:class:`Lowering` then visits the nodes in order, and each rule turns one node into Capra
operations or refuses it. The rules are one table, :data:`RULES`: for each PyTorch operation
the functions, Tensor methods and layers that call it, its arguments, and the method of
:class:`Lowering` that lowers it (a new PyTorch operation is one entry and its method).
Before any of that, :func:`compiler.frontend.inplace.inplace_refusals` refuses the operations
that change a tensor in place.

Contract: a rule either returns what its node lowered to, or raises :class:`Refuse` with the
reason, or :class:`Upstream` when an operand was refused already (so a refusal is reported
once, at its cause). Rules check what they can without their operands first, so that a node
with its own problem is reported even downstream of another. A Capra ``CompileError`` raised
while building becomes the node's refusal too. Nothing is approximated: a rule lowers its
node exactly or refuses it.
"""

from __future__ import annotations

import enum
import math
import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import fx, nn

from sim.spec import Params

from ..errors import CompileError
from ..ir import Graph
from ..ops import OPS, Op
from ..pipeline import check_structure
from .inference import inference_refusal

SUPPORTED = ("nn.Linear and F.linear, matmul (@), a positive constant factor on a product, relu, "
             "the table activations gelu, silu, sigmoid, tanh, hardswish, leaky_relu and elu, "
             "softmax(dim=-1), +, cat(dim=0), argmax(dim=-1), and dropout (eval mode), flatten and "
             "nn.Identity where they change nothing")
"""What the front end lowers, as the refusals quote it."""

STATIC = "capra_static"
"""node.meta key: the non-tensor result (shape arithmetic) a node gave on the example inputs."""


@dataclass(frozen=True)
class Refusal:
    """One node the front end cannot lower.

    Attributes:
        node: the fx node's name (``fc1``, ``sigmoid``, ``output``).
        what: the operation: ``Linear module 'fc1'``, ``torch.sigmoid``, ``Tensor.view()``.
        why: the reason, in a sentence.
    """

    node: str
    what: str
    why: str

    def line(self) -> str:
        """``REFUSED <node>: <what>: <why>``."""
        return f"REFUSED {self.node}: {self.what}: {self.why}"


class Refuse(Exception):
    """Raised by a lowering rule: the node is refused, for the reason given."""

    def __init__(self, why: str):
        super().__init__(why)
        self.why = why


class Upstream(Exception):
    """Raised by a lowering rule: an operand was refused already, so stay silent."""


# --------------------------------------------------------------------------- helpers


def flatten(value: Any) -> list[Any]:
    """A (nested) tuple or list of results, flattened depth first; anything else as one item."""
    if isinstance(value, tuple | list):
        return [leaf for item in value for leaf in flatten(item)]
    return [value]


def _values(parameter: torch.Tensor) -> np.ndarray:
    """A parameter's values as float64 numpy."""
    return parameter.detach().cpu().double().numpy()


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_plain(value: Any) -> bool:
    """A non-tensor result the front end can treat as a compile-time constant."""
    if isinstance(value, tuple | list):  # torch.Size is a tuple
        return all(_is_plain(v) for v in value)
    return isinstance(value, int | float | bool)


_OPERATOR_SYMBOLS = {operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/",
                     operator.floordiv: "//", operator.matmul: "@", operator.pow: "**",
                     operator.neg: "unary -", operator.getitem: "[]"}


def article(word: str) -> str:
    """``a`` or ``an`` for a word as it is read aloud: an Identity, a Linear, an LSTM, a GRU.

    Vowels take ``an``; so does an abbreviation read letter by letter (two capitals, the
    second not a vowel) that starts with a letter named with a vowel sound (F H L M N R S X).
    """
    if not word:
        return "a"
    if word[0] in "AEIOUaeiou":
        return "an"
    spelled = len(word) > 1 and word[:2].isupper() and word[1] not in "AEIOU"
    return "an" if spelled and word[0] in "FHLMNRSX" else "a"


def _function_name(fn: Any) -> str:
    if fn in _OPERATOR_SYMBOLS:
        return f"operator {_OPERATOR_SYMBOLS[fn]}"
    name = getattr(fn, "__name__", repr(fn))
    module = getattr(fn, "__module__", None) or ""
    if module.startswith("torch._C._nn") or module == "torch.nn.functional":
        return f"torch.nn.functional.{name}"
    if module.startswith("torch"):
        return f"torch.{name}"
    if module in ("builtins", "_operator", "math"):
        return name if module == "builtins" else f"{module.lstrip('_')}.{name}"
    return f"{module}.{name}" if module else name


def _is_shape_query(node: fx.Node) -> bool:
    """True for a node that reads a tensor's shape, not its values."""
    if (node.op, node.target) in _SHAPE_QUERIES:
        return True
    return node.op == "call_function" and node.target is getattr and node.args[1:2] == ("shape",)


def _value_readers(node: fx.Node) -> list[fx.Node]:
    """The users of a node that read its values (shape queries do not)."""
    return [user for user in node.users if not _is_shape_query(user)]


def module_path(node: fx.Node) -> str:
    """The path of the module whose forward a function or method call was traced in ('' for
    the model's own forward), from the trace's ``nn_module_stack``."""
    stack = node.meta.get("nn_module_stack") or {}
    if not stack:
        return ""
    key, value = list(stack.items())[-1]
    return value[0] if isinstance(value, tuple) else str(key)


def describe(node: fx.Node, traced: fx.GraphModule) -> str:
    """The operation of an fx node, as a refusal names it: a layer by its class and module
    path (``Linear module 'encoder.fc1'``), a function or method with the path of the module
    it is called in (``torch.relu in 'encoder'``)."""
    if node.op == "call_module":
        return f"{type(traced.get_submodule(node.target)).__name__} module '{node.target}'"
    where = f" in '{module_path(node)}'" if module_path(node) else ""
    if node.op == "call_method":
        return f"Tensor.{node.target}(){where}"
    if node.op == "call_function":
        return _function_name(node.target) + where
    if node.op == "placeholder":
        return f"input '{node.target}'"
    if node.op == "get_attr":
        return f"attribute '{node.target}'"
    return node.op



# --------------------------------------------------------------------------- lowering rules

_REQUIRED = object()


@dataclass(frozen=True)
class Rule:
    """How the front end lowers one PyTorch operation, wherever the model calls it from: as a
    function (``torch.relu``, ``F.relu``, ``operator.add``), as a Tensor method (``x.relu()``)
    or as a layer (``nn.ReLU``). One entry of :data:`RULES` says it all; nothing else names it.

    Attributes:
        name: the rule's name (a call's rule, as :func:`rule_of` gives it).
        lower: the :class:`Lowering` method that lowers it, called with the fx node and the
            call's arguments by name (a layer's: its input, then its ``settings``).
        signature: the call's arguments in PyTorch's positional order, with defaults
            (``_REQUIRED``: none); unknown keywords are refused.
        functions: the call_function targets it lowers.
        methods: the Tensor methods it lowers, by name.
        modules: the layer classes it lowers.
        settings: the attributes of the layer passed on as the arguments of the same name
            (``nn.GELU``'s ``approximate``, ``nn.Linear``'s ``weight`` and ``bias``).
        fresh: its result is a new tensor, never a view of an operand nor the operand itself
            (the in-place check, :mod:`compiler.frontend.inplace`).
        two_d: its traced result must have 2 dims (False: an argmax, whose indices have 1).
    """

    name: str
    lower: Callable[..., _Value]
    signature: tuple[tuple[str, Any], ...] = ()
    functions: tuple[Any, ...] = ()
    methods: tuple[str, ...] = ()
    modules: tuple[type, ...] = ()
    settings: tuple[str, ...] = ()
    fresh: bool = True
    two_d: bool = True


_SHAPE_QUERIES = {("call_method", "size"), ("call_method", "dim")}
"""Nodes that read a tensor's shape, not its values (as does ``getattr(x, "shape")``): their
results are compile-time constants."""


def rule_of(node: fx.Node, traced: fx.GraphModule) -> Rule | None:
    """The rule of :data:`RULES` that lowers a call, or None when there is none."""
    if node.op == "call_function":
        try:
            return _BY_FUNCTION.get(node.target)
        except TypeError:  # an unhashable target
            return None
    if node.op == "call_method":
        return _BY_METHOD.get(node.target)
    if node.op == "call_module":
        module = traced.get_submodule(node.target)
        return next((rule for rule in RULES for kind in rule.modules if isinstance(module, kind)), None)
    return None


class Kind(enum.Enum):
    """What an fx node lowered to (the ``kind`` of a :class:`_Value`)."""

    TENSOR = "a Capra tensor nid"
    PRODUCT = ("a Capra matmul nid that nothing but this node's users reads, so a relu or a constant "
               "factor can still join it")
    TRANSPOSED = "Capra tensor nid, read transposed"
    CONSTANT = "a parameter or buffer (array, float64, named name), not yet a Capra weight"
    INDICES = "an argmax nid"
    STATIC = "a Python value (number) known at compile time"


@dataclass
class _Value:
    """What an fx node lowered to: a :class:`Kind` and the fields that kind uses."""

    kind: Kind
    nid: int = -1
    array: np.ndarray | None = None
    name: str = ""
    number: Any = None


class Lowering:
    """One pass over the traced graph that builds the Capra graph and collects refusals."""

    def __init__(self, traced: fx.GraphModule, params: Params):
        self.traced = traced
        self.params = params
        self.graph = Graph()
        self.values: dict[fx.Node, _Value] = {}
        self.refusals: list[Refusal] = []
        self.origin: dict[int, fx.Node] = {}
        self.folded: dict[fx.Node, fx.Node] = {}
        self.weights: dict[str, int] = {}
        self.inputs: list[str] = []
        self.outputs: list[str] = []
        self.output_shapes: list[tuple[int, ...]] = []
        self.current: fx.Node | None = None

    # ---------------------------------------------------------------- driver

    def run(self) -> None:
        for node in self.traced.graph.nodes:
            self.current = node
            try:
                value = self.lower(node)
            except Upstream:
                continue
            except Refuse as r:
                self.refuse(node, r.why)
                continue
            except CompileError as e:
                self.refuse(node, f"Capra refuses it: {e}")
                continue
            if value is not None:
                self.values[node] = value

    def refuse(self, node: fx.Node, why: str) -> None:
        self.refusals.append(Refusal(node.name, describe(node, self.traced), why))

    def check_structure(self) -> Refusal | None:
        """Run the compiler's structural passes (:func:`compiler.pipeline.check_structure`: unit
        limits, relu fusion, placement, lifetimes, external layout) on the finished graph; their
        refusal, named by the fx node at fault, or None."""
        try:
            check_structure(self.graph, self.params)
        except CompileError as e:
            node = self.origin.get(e.node) if e.node is not None else None
            if node is None:
                return Refusal("(graph)", "the whole model", f"Capra refuses it: {e}")
            return Refusal(node.name, describe(node, self.traced), f"Capra refuses it: {e}")
        return None

    def lower(self, node: fx.Node) -> _Value | None:
        if node.op == "output":
            self.lower_output(node)
            return None
        static = node.op not in ("placeholder", "get_attr") and STATIC in node.meta
        if static and _is_plain(node.meta[STATIC]):
            return self.lower_static(node)
        if node.op == "placeholder":
            return self.lower_input(node)
        if node.op == "get_attr":
            return self.lower_attribute(node)
        why = inference_refusal(node, self.traced)
        if why is not None:
            raise Refuse(why)
        rule = self.rule_of(node)
        if rule is None:
            raise Refuse(self.unsupported(node))
        meta = node.meta.get("tensor_meta")
        if meta is not None and rule.two_d and len(meta.shape) != 2:
            if any(arg not in self.values for arg in node.all_input_nodes):
                raise Upstream  # its operand's shape was refused already
            raise Refuse(f"its result has shape {tuple(meta.shape)}; Capra tensors are 2-D (rows, cols)")
        if node.op == "call_module":
            return self.lower_module(node, rule)
        return rule.lower(self, node, **self.bind(node, rule))

    def rule_of(self, node: fx.Node) -> Rule | None:
        """The rule that lowers a call, or None when there is none."""
        return rule_of(node, self.traced)

    def unsupported(self, node: fx.Node) -> str:
        """Why a call without a rule is refused."""
        if node.op == "call_module":
            kind = type(self.traced.get_submodule(node.target))
            layer = f"{article(kind.__name__)} {kind.__name__} layer"
            return f"GA-2 has no operation for {layer}; the front end lowers {SUPPORTED}"
        return f"GA-2 has no operation for it; the front end lowers {SUPPORTED}"

    @staticmethod
    def bind(node: fx.Node, rule: Rule) -> dict[str, Any]:
        """The node's arguments by name, defaults filled in; unknown keywords are refused."""
        signature = rule.signature
        names = [name for name, _ in signature]
        if len(node.args) > len(names):
            raise Refuse(f"takes {len(node.args)} positional arguments, more than the {len(names)} "
                         f"({', '.join(names)}) the lowering reads")
        bound = dict(zip(names, node.args, strict=False))
        for key, value in node.kwargs.items():
            if key not in names:
                raise Refuse(f"passes {key}={value!r}, an argument the lowering does not take")
            bound[key] = value
        for name, default in signature:
            if name not in bound:
                if default is _REQUIRED:
                    raise Refuse(f"lacks its argument '{name}'")
                bound[name] = default
        return bound

    # ---------------------------------------------------------------- operands

    def own(self, nid: int) -> int:
        """Note that Capra node ``nid`` comes from the current fx node."""
        self.origin.setdefault(nid, self.current)
        return nid

    def value(self, arg: Any) -> _Value:
        if isinstance(arg, fx.Node):
            if arg not in self.values:
                raise Upstream
            return self.values[arg]
        if _is_plain(arg):
            return _Value(Kind.STATIC, number=arg)
        raise Refuse(f"takes {arg!r} as an operand, which is neither a tensor nor a number")

    def tensor(self, arg: Any, role: str) -> int:
        """The Capra id of a tensor operand; a constant becomes a weight here."""
        v = self.value(arg)
        if v.kind in (Kind.TENSOR, Kind.PRODUCT):
            return v.nid
        if v.kind is Kind.CONSTANT:
            return self.weight(v.name, v.array)
        if v.kind is Kind.TRANSPOSED:
            raise Refuse(f"reads {arg.name}, a transposed view, as its {role}; GA-2 reads a transpose "
                         "only as the second operand of a matmul (MM's tb flag)")
        if v.kind is Kind.INDICES:
            raise Refuse(f"reads {arg.name}, the indices an argmax returns, as its {role}; indices have "
                         "no int8 scale, so only an output may take them")
        raise Refuse(f"takes the number {v.number!r} as its {role}, where a tensor is needed")

    def weight(self, name: str, array: np.ndarray) -> int:
        """A Capra weight for a constant; the same name and values give the same weight."""
        array = np.asarray(array, dtype=np.float64)
        if array.ndim != 2:
            raise Refuse(f"uses the constant '{name}' of shape {array.shape} as a tensor; Capra tensors are "
                         "2-D (rows, cols)")
        unique, k = name, 1
        while unique in self.weights or unique in self.graph.names:
            known = self.weights.get(unique)
            if known is not None and np.array_equal(self.graph.nodes[known].array, array):
                return known
            k += 1
            unique = f"{name}#{k}"
        nid = self.own(self.graph.weight(unique, array))
        self.weights[unique] = nid
        return nid

    def shape_of(self, node: fx.Node) -> tuple[int, ...]:
        return tuple(node.meta["tensor_meta"].shape)

    def producer_hint(self, arg: fx.Node, wanted: str = "a matmul") -> str:
        """Why a node's value is not a bare matmul product (or ``wanted``), for refusals that need one."""
        return f"{arg.name} ({describe(arg, self.traced)}) is not the result of {wanted}"

    # ---------------------------------------------------------------- sources and sinks

    def lower_static(self, node: fx.Node) -> _Value:
        """Shape arithmetic: a value fixed by the traced shapes, not by tensor values."""
        if _is_shape_query(node):
            return _Value(Kind.STATIC, number=node.meta[STATIC])
        for arg in node.all_input_nodes:
            if self.value(arg).kind is not Kind.STATIC:
                raise Refuse(f"turns the tensor {arg.name} into the Python value {node.meta[STATIC]!r}, "
                             "which would be fixed at compile time to what the example inputs gave")
        return _Value(Kind.STATIC, number=node.meta[STATIC])

    def lower_input(self, node: fx.Node) -> _Value:
        meta = node.meta["tensor_meta"]
        if len(meta.shape) != 2:
            raise Refuse(f"has shape {tuple(meta.shape)}; Capra tensors are 2-D (rows, cols)")
        if not meta.dtype.is_floating_point:
            raise Refuse(f"has dtype {meta.dtype}; Capra's inputs are float tensors, which the "
                         "compiler quantizes")
        name = str(node.target)  # the argument's name (node.name may differ: input_1 for input)
        nid = self.own(self.graph.input(name, self.shape_of(node)))
        self.inputs.append(name)
        return _Value(Kind.TENSOR, nid)

    def lower_attribute(self, node: fx.Node) -> _Value:
        owner: Any = self.traced
        for part in node.target.split("."):
            owner = getattr(owner, part)
        if not isinstance(owner, torch.Tensor) or not owner.is_floating_point():
            raise Refuse("is not a float tensor, so it cannot become a weight")
        return _Value(Kind.CONSTANT, array=owner.detach().cpu().double().numpy(), name=node.target)

    def lower_output(self, node: fx.Node) -> None:
        problems = []
        for item in flatten(node.args[0]):
            if not isinstance(item, fx.Node):
                problems.append(f"returns {item!r}, which is not a tensor the model computes")
                continue
            try:
                v = self.value(item)
            except Upstream:
                continue
            if v.kind in (Kind.CONSTANT, Kind.STATIC):
                problems.append(f"returns {item.name}, a value fixed at compile time; nothing on GA-2 "
                                "computes it")
                continue
            if v.kind is Kind.TRANSPOSED:
                problems.append(f"returns {item.name}, a transposed view; GA-2 stores a tensor row by row "
                                "as it was computed, so transpose it on the host")
                continue
            name, k = item.name, 1
            while name in self.graph.names:
                k += 1
                name = f"{item.name}#{k}"
            self.own(self.graph.output(v.nid, name))
            self.outputs.append(name)
            self.output_shapes.append(self.shape_of(item))
        if problems:
            raise Refuse("; ".join(problems))

    def lower_module(self, node: fx.Node, rule: Rule) -> _Value:
        """A layer's call: its one input, and the layer's settings the rule names."""
        module = self.traced.get_submodule(node.target)
        if len(node.args) != 1 or node.kwargs:
            raise Refuse("is called with other than one tensor argument")
        (x,) = node.args
        return rule.lower(self, node, x, **{k: getattr(module, k) for k in rule.settings})

    # ---------------------------------------------------------------- the operations

    def op_linear(self, node: fx.Node, input: Any, weight: torch.Tensor, bias: torch.Tensor | None) -> _Value:
        """An ``nn.Linear`` layer: its parameters are the weights ``<layer>.weight`` and ``.bias``."""
        w = _Value(Kind.CONSTANT, array=_values(weight), name=f"{node.target}.weight")
        b = None if bias is None else _Value(Kind.CONSTANT, array=_values(bias), name=f"{node.target}.bias")
        return self.dense(input, w, b, node)

    def op_f_linear(self, node: fx.Node, input: Any, weight: Any, bias: Any) -> _Value:
        return self.dense(input, self.value(weight), None if bias is None else self.value(bias), node)

    def dense(self, x: Any, weight: _Value, bias: _Value | None, node: fx.Node) -> _Value:
        """x W^T, plus the bias b repeated over the rows when there is one: an ``nn.Linear`` or
        ``F.linear(x, W, b)`` with W (out_features, in_features) as PyTorch stores it. A
        parameter W^T becomes the weight ``<W's name>.T``; a computed W is read transposed."""
        if weight.kind is Kind.CONSTANT:
            if weight.array.ndim != 2:
                raise Refuse(f"uses the weight '{weight.name}' of shape {weight.array.shape}; a linear "
                             "layer's weight is (out_features, in_features)")
            source = self.tensor(x, "input")
            second, transpose_b = self.weight(f"{weight.name}.T", weight.array.T), False
        elif weight.kind in (Kind.TENSOR, Kind.PRODUCT, Kind.TRANSPOSED):
            source = self.tensor(x, "input")
            second, transpose_b = weight.nid, weight.kind is not Kind.TRANSPOSED
        else:
            raise Refuse("takes a weight that is not a tensor")
        if bias is not None and bias.kind is not Kind.CONSTANT:
            raise Refuse("adds a computed bias; only a parameter bias is lowered (into the accumulator, "
                         "compiler/bias.py)")
        factor = self.folded_factor(node)   # (x W^T + b) * c = c x W^T + c b
        product = self.graph.matmul(source, second, transpose_b=transpose_b, scale=factor,
                                    bias=None if bias is None else factor * np.ravel(bias.array))
        return _Value(Kind.PRODUCT, self.own(product))

    def op_matmul(self, node: fx.Node, input: Any, other: Any) -> _Value:
        first = self.tensor(input, "first operand")
        second_value = self.value(other)
        if second_value.kind is Kind.TRANSPOSED:
            second, transpose_b = second_value.nid, True
        else:
            second, transpose_b = self.tensor(other, "second operand"), False
        product = self.graph.matmul(first, second, transpose_b=transpose_b, scale=self.folded_factor(node))
        return _Value(Kind.PRODUCT, self.own(product))

    def folded_factor(self, product: fx.Node) -> float:
        """The product of the positive constants that multiply (or divide) a matmul's result
        before anything else reads it; each such mul/div is noted in ``self.folded``."""
        factor, current = 1.0, product
        while len(readers := _value_readers(current)) == 1:
            user = readers[0]
            constant = self.constant_factor(user, current)
            if constant is None:
                break
            factor *= constant
            self.folded[user] = product
            current = user
        return factor

    def constant_factor(self, node: fx.Node, operand: fx.Node) -> float | None:
        """c if ``node`` is operand * c, c * operand or operand / (1/c), c positive and finite."""
        rule = self.rule_of(node)
        if rule is None or rule.name not in ("mul", "div"):
            return None
        try:
            bound = self.bind(node, rule)
        except Refuse:
            return None
        first, second = bound["input"], bound["other"]
        if bound.get("rounding_mode") is not None or operand not in (first, second):
            return None
        if rule.name == "div" and first is not operand:
            return None
        other = second if first is operand else first
        if isinstance(other, fx.Node):
            other = other.meta.get(STATIC)
        if not _is_number(other) or not (math.isfinite(other) and other > 0):
            return None
        return float(other) if rule.name == "mul" else 1.0 / float(other)

    def op_mul(self, node: fx.Node, input: Any, other: Any) -> _Value:
        return self.scaled(node, input, other, "multiplies")

    def op_div(self, node: fx.Node, input: Any, other: Any, rounding_mode: Any) -> _Value:
        if rounding_mode is not None:
            raise Refuse(f"rounds the quotient (rounding_mode={rounding_mode!r}); only an exact division by "
                         "a constant folds into a matmul")
        return self.scaled(node, input, other, "divides")

    def scaled(self, node: fx.Node, input: Any, other: Any, verb: str) -> _Value:
        """A mul or div: either folded into the matmul before it, or refused with the reason."""
        dividing = verb == "divides"
        if dividing and not isinstance(input, fx.Node):
            raise Refuse(f"divides the number {input!r} by a tensor; GA-2 has no reciprocal, only a constant "
                         "factor on a matmul's result")
        for literal in (input, other):  # a number written in the code: checked before the operands
            if not isinstance(literal, fx.Node):
                self.check_factor(literal, dividing)
        values = [self.value(arg) for arg in (input, other)]  # raises Upstream if one was refused
        if node in self.folded:
            return self.value(self.folded[node])
        if dividing and values[1].kind is not Kind.STATIC:
            raise Refuse("divides by a tensor; GA-2 has no reciprocal, only a constant factor on a matmul's "
                         "result")
        constants = [v for v in values if v.kind is Kind.STATIC]
        if not constants:
            raise Refuse("multiplies two tensors element by element; GA-2 has no elementwise product, only "
                         "a constant factor on a matmul's result")
        self.check_factor(constants[0].number, dividing)
        arg = input if values[0].kind is not Kind.STATIC else other
        v = self.value(arg)
        if v.kind is not Kind.PRODUCT:
            hint = self.producer_hint(arg) if isinstance(arg, fx.Node) else ""
            raise Refuse(f"a constant factor only folds into the matmul whose result it scales, and {hint}")
        readers = [u.name for u in _value_readers(arg) if u is not node]
        if not readers:
            raise AssertionError(f"{node.name}: a foldable factor was not folded")
        raise Refuse(f"{arg.name} is also read by {', '.join(readers)}, which need(s) it without the "
                     "factor; the factor is folded into the matmul's requantizer, so it would change "
                     "them too")

    @staticmethod
    def check_factor(c: Any, divisor: bool = False) -> None:
        """Refuse a constant that cannot become a matmul's factor: c for a mul, 1 / c for a div."""
        if _is_number(c) and math.isfinite(c) and c > 0:
            return
        if not divisor:
            raise Refuse(f"the factor {c!r} is not a positive number; it can only become a matmul's factor, "
                         "and the requantizer's multiplier is unsigned")
        if _is_number(c) and c == 0:
            raise Refuse("the divisor is 0, so every value would become infinite or NaN; GA-2 divides only "
                         "by a positive number, which becomes the matmul's factor 1 / divisor")
        raise Refuse(f"the divisor {c!r} is not a positive number; a division can only become the matmul's "
                     "factor 1 / divisor, and the requantizer's multiplier is unsigned")

    def op_relu(self, node: fx.Node, input: Any, inplace: bool = False) -> _Value:
        """The relu flag of the RQ ending a matmul (or of the VADD of an add) that nothing else
        reads; else a table (one LUT)."""
        nid = self.tensor(input, "operand")
        host = self.graph.nodes[nid].op
        readers = [u.name for u in _value_readers(input) if u is not node]
        fusable = self.value(input).kind is Kind.PRODUCT or host in OPS[Op.RELU].fuses_into
        if not fusable or readers:   # not the flag of the matmul's RQ or of the add's VADD: a table
            return self.table(nid, "relu")
        return _Value(Kind.TENSOR, self.own(self.graph.relu(nid)))

    def table(self, nid: int, fn: str) -> _Value:
        """A table activation (one LUT: compiler/tables.py)."""
        return _Value(Kind.TENSOR, self.own(self.graph.table(nid, fn)))

    def op_gelu(self, node: fx.Node, input: Any, approximate: str = "none") -> _Value:
        if approximate not in ("none", "tanh"):
            raise Refuse(f"asks for approximate={approximate!r}; PyTorch knows 'none' and 'tanh'")
        return self.table(self.tensor(input, "operand"), "gelu" if approximate == "none" else "gelu_tanh")

    def op_sigmoid(self, node: fx.Node, input: Any) -> _Value:
        return self.table(self.tensor(input, "operand"), "sigmoid")

    def op_tanh(self, node: fx.Node, input: Any) -> _Value:
        return self.table(self.tensor(input, "operand"), "tanh")

    def op_silu(self, node: fx.Node, input: Any, inplace: bool = False) -> _Value:
        return self.table(self.tensor(input, "operand"), "silu")

    def op_hardswish(self, node: fx.Node, input: Any, inplace: bool = False) -> _Value:
        return self.table(self.tensor(input, "operand"), "hardswish")

    def op_leaky_relu(self, node: fx.Node, input: Any, negative_slope: Any = 0.01,
                      inplace: bool = False) -> _Value:
        return self.table(self.tensor(input, "operand"), f"leaky_relu:{float(negative_slope)!r}")

    def op_elu(self, node: fx.Node, input: Any, alpha: Any = 1.0, inplace: bool = False) -> _Value:
        return self.table(self.tensor(input, "operand"), f"elu:{float(alpha)!r}")

    def op_softmax(self, node: fx.Node, input: Any, dim: Any, _stacklevel: Any = 3,
                   dtype: Any = None) -> _Value:
        if dim is None:
            raise Refuse("has no dim; GA-2's softmax unit normalises each row, so give dim=-1")
        if dtype is not None:
            raise Refuse(f"asks for dtype {dtype}; the softmax unit reads int8 and writes probabilities")
        if dim not in (-1, 1):
            raise Refuse(f"normalises over dim={dim}; GA-2's softmax unit normalises each row (dim=-1) only")
        nid = self.tensor(input, "operand")
        length = self.graph.nodes[nid].shape[1]
        if length > self.params.SM_MAX_LEN:
            raise Refuse(f"its rows hold {length} values, more than the softmax unit's "
                         f"{self.params.SM_MAX_LEN} (SM_MAX_LEN)")
        return _Value(Kind.TENSOR, self.own(self.graph.softmax(nid)))

    def op_add(self, node: fx.Node, input: Any, other: Any, alpha: Any) -> _Value:
        if alpha != 1:
            raise Refuse(f"scales its second operand by alpha={alpha!r}; GA-2's add has no factor")
        shape = self.shape_of(node)
        parts = []
        for arg in (input, other):
            v = self.value(arg)
            if v.kind in (Kind.CONSTANT, Kind.STATIC):
                constant = v.array if v.kind is Kind.CONSTANT else v.number
                if not (v.kind is Kind.CONSTANT or _is_number(constant)):
                    raise Refuse(f"adds {constant!r}, which is not a number")
                name = v.name or f"{node.name}.constant"
                try:
                    array = np.broadcast_to(np.asarray(constant, dtype=np.float64), shape)
                except ValueError:
                    raise Refuse(f"adds the constant {name} of shape {np.shape(constant)}, which does not "
                                 f"broadcast to {shape}") from None
                parts.append(self.weight(name, array))
                continue
            nid = self.tensor(arg, "operand")
            if self.graph.nodes[nid].shape != shape:
                raise Refuse(f"broadcasts {arg.name} {self.graph.nodes[nid].shape} to {shape}; GA-2 adds "
                             "tensors of one shape, and only a constant is broadcast (at compile time)")
            parts.append(nid)
        return _Value(Kind.TENSOR, self.own(self.graph.add(*parts)))

    def op_cat(self, node: fx.Node, tensors: Any, dim: Any) -> _Value:
        if dim not in (0, -2):
            raise Refuse(f"joins along dim={dim}; GA-2 concatenates rows only (dim=0), placing the "
                         "parts one below the other in one buffer")
        if not isinstance(tensors, tuple | list) or not tensors:
            raise Refuse("is not given a list of tensors")
        parts = [self.tensor(t, f"part {k}") for k, t in enumerate(tensors)]
        result = parts[0]
        for part in parts[1:]:
            result = self.own(self.graph.concat_rows(result, part))
        return _Value(Kind.TENSOR, result)

    def op_argmax(self, node: fx.Node, input: Any, dim: Any, keepdim: Any) -> _Value:
        if dim is None:
            raise Refuse("has no dim, so it would index the flattened tensor; GA-2's argmax works on each "
                         "row: give dim=-1")
        if dim not in (-1, 1):
            raise Refuse(f"searches along dim={dim}; GA-2's argmax works on each row (dim=-1) only")
        return _Value(Kind.INDICES, self.own(self.graph.argmax(self.tensor(input, "operand"))))

    def op_transpose(self, node: fx.Node, input: Any, dim0: Any, dim1: Any) -> _Value:
        axes = {d % 2 if isinstance(d, int) and -2 <= d <= 1 else d for d in (dim0, dim1)}
        if not axes <= {0, 1}:
            raise Refuse(f"swaps dims {dim0} and {dim1} of a 2-D tensor")
        if len(axes) == 1:
            return self.value(input)
        return self.transposed(input)

    def op_t(self, node: fx.Node, input: Any) -> _Value:
        return self.transposed(input)

    def op_getattr(self, node: fx.Node, input: Any, name: Any) -> _Value:
        if name in ("T", "mT"):
            return self.transposed(input)
        raise Refuse(f"reads the attribute '{name}', which the lowering does not know")

    def transposed(self, arg: Any) -> _Value:
        v = self.value(arg)
        if v.kind is Kind.CONSTANT:
            array = v.array.T if v.array.ndim == 2 else v.array
            return _Value(Kind.CONSTANT, array=array, name=f"{v.name}.T")
        if v.kind in (Kind.TENSOR, Kind.PRODUCT):
            return _Value(Kind.TRANSPOSED, v.nid)
        if v.kind is Kind.TRANSPOSED:
            return _Value(Kind.TENSOR, v.nid)
        self.tensor(arg, "operand")  # refuses indices and numbers with the reason
        raise AssertionError("unreachable")


_L = Lowering
_X = ("input", _REQUIRED)
RULES: tuple[Rule, ...] = (
    Rule("linear", _L.op_linear, modules=(nn.Linear,), settings=("weight", "bias")),
    Rule("f_linear", _L.op_f_linear, (_X, ("weight", _REQUIRED), ("bias", None)), functions=(F.linear,),
         fresh=False),
    Rule("matmul", _L.op_matmul, (_X, ("other", _REQUIRED)),
         functions=(operator.matmul, torch.matmul, torch.mm), methods=("matmul", "mm")),
    Rule("mul", _L.op_mul, (_X, ("other", _REQUIRED)), functions=(operator.mul, torch.mul), methods=("mul",)),
    Rule("div", _L.op_div, (_X, ("other", _REQUIRED), ("rounding_mode", None)),
         functions=(operator.truediv, torch.div), methods=("div",)),
    Rule("add", _L.op_add, (_X, ("other", _REQUIRED), ("alpha", 1)), functions=(operator.add, torch.add),
         methods=("add",)),
    Rule("relu", _L.op_relu, (_X, ("inplace", False)), functions=(torch.relu, F.relu), methods=("relu",),
         modules=(nn.ReLU,), settings=("inplace",)),
    Rule("softmax", _L.op_softmax, (_X, ("dim", None), ("_stacklevel", 3), ("dtype", None)),
         functions=(torch.softmax, F.softmax), methods=("softmax",), modules=(nn.Softmax,),
         settings=("dim",)),
    Rule("gelu", _L.op_gelu, (_X, ("approximate", "none")), functions=(F.gelu,), modules=(nn.GELU,),
         settings=("approximate",)),
    Rule("sigmoid", _L.op_sigmoid, (_X,), functions=(torch.sigmoid, F.sigmoid), methods=("sigmoid",),
         modules=(nn.Sigmoid,)),
    Rule("tanh", _L.op_tanh, (_X,), functions=(torch.tanh, F.tanh), methods=("tanh",), modules=(nn.Tanh,)),
    Rule("silu", _L.op_silu, (_X, ("inplace", False)), functions=(F.silu,), modules=(nn.SiLU,)),
    Rule("hardswish", _L.op_hardswish, (_X, ("inplace", False)), functions=(F.hardswish,),
         modules=(nn.Hardswish,)),
    Rule("leaky_relu", _L.op_leaky_relu, (_X, ("negative_slope", 0.01), ("inplace", False)),
         functions=(F.leaky_relu,), modules=(nn.LeakyReLU,), settings=("negative_slope",)),
    Rule("elu", _L.op_elu, (_X, ("alpha", 1.0), ("inplace", False)), functions=(F.elu,), modules=(nn.ELU,),
         settings=("alpha",)),
    Rule("cat", _L.op_cat, (("tensors", _REQUIRED), ("dim", 0)),
         functions=(torch.cat, torch.concat, torch.concatenate)),
    Rule("argmax", _L.op_argmax, (_X, ("dim", None), ("keepdim", False)), functions=(torch.argmax,),
         methods=("argmax",), fresh=False, two_d=False),
    Rule("transpose", _L.op_transpose, (_X, ("dim0", _REQUIRED), ("dim1", _REQUIRED)),
         functions=(torch.transpose,), methods=("transpose",), fresh=False),
    Rule("t", _L.op_t, (_X,), functions=(torch.t,), methods=("t",), fresh=False),
    Rule("getattr", _L.op_getattr, (_X, ("name", _REQUIRED)), functions=(getattr,), fresh=False),
)
"""The front end's one table: every PyTorch operation it lowers, as a function, a Tensor method
or a layer, with its arguments and the method that lowers it."""

_BY_FUNCTION: dict[Any, Rule] = {fn: rule for rule in RULES for fn in rule.functions}
"""call_function target -> rule (derived from :data:`RULES`)."""
_BY_METHOD: dict[str, Rule] = {name: rule for rule in RULES for name in rule.methods}
"""Tensor method -> rule (derived from :data:`RULES`)."""
