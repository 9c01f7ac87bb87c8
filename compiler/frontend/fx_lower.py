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
import itertools
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
from . import images
from .inference import inference_refusal
from .refuse import Refuse, Upstream

SUPPORTED = ("nn.Linear and F.linear, matmul (@), a positive constant factor on a product, relu, "
             "the table activations gelu, silu, sigmoid, tanh, hardswish, leaky_relu and elu, "
             "softmax(dim=-1), +, cat(dim=0), argmax(dim=-1), nn.Conv2d (groups=1 or depthwise) with a "
             "BatchNorm2d folded, nn.MaxPool2d, nn.AvgPool2d, nn.AdaptiveAvgPool2d(1), flatten of images, "
             "nn.LayerNorm and F.layer_norm over the last dim, nn.Embedding and F.embedding of 1-D token "
             "ids (or of torch.arange positions), F.scaled_dot_product_attention and masked_fill with a "
             "constant causal mask before a softmax, and dropout (eval mode), flatten and nn.Identity where "
             "they change nothing")
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
        images: it also takes images, 4-D (B, C, H, W), stored (B*H*W, C) (:mod:`.images`).
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
    images: bool = False


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
    IDS = "a Capra input nid of token ids, (tokens, 1): only an embedding reads it"
    COLUMNS = ("a Linear not built yet (nid: its input; array: its weight (out, in); shift: its bias; name; "
               "number: its factor), whose columns a split or a view into heads takes")
    PARTS = "the parts of a split of a Linear's columns (heads: a COLUMNS value each)"
    GROUP = ("a tensor of heads (heads: one Capra nid, or COLUMNS value, per head; layout: 'tokens' for "
             "(T, heads, d), 'heads' for (heads, T, d), 'heads_t' for (heads, d, T); number: 'masked' for "
             "scores with a causal mask filled in)")
    MERGED = "heads merged back into (T, heads * d) (heads: one Capra nid per head): only a Linear reads it"
    MASKED = "attention scores (Capra tensor nid) with a causal mask filled in: only a softmax reads them"
    NORMED = ("a LayerNorm of Capra tensor nid whose affine part (array: weight, shift: bias, number: eps) "
              "is not applied yet: a Linear that reads it folds it, any other reader applies it")


@dataclass
class _Value:
    """What an fx node lowered to: a :class:`Kind` and the fields that kind uses."""

    kind: Kind
    nid: int = -1
    array: np.ndarray | None = None
    name: str = ""
    number: Any = None
    image: tuple[int, int, int] | None = None
    """(H, W, C) when the tensor holds images, (B*H*W, C) rows = pixels (:mod:`.images`)."""
    flat_image: tuple[int, int, int] | None = None
    """(H, W, C) when the tensor holds flattened images, columns in the order (y, x, c)."""
    shift: np.ndarray | None = None
    heads: list | None = None
    layout: str = ""


_GROUPED = (Kind.COLUMNS, Kind.PARTS, Kind.GROUP, Kind.MERGED)
"""Kinds whose PyTorch shape is not (rows, cols): a node that reads one may have a 3-D result."""


class Lowering:
    """One pass over the traced graph that builds the Capra graph and collects refusals."""

    def __init__(self, traced: fx.GraphModule, params: Params, per_channel: bool = False):
        self.traced = traced
        self.params = params
        self.per_channel = per_channel
        self.graph = Graph()
        self.values: dict[fx.Node, _Value] = {}
        self.refusals: list[Refusal] = []
        self.origin: dict[int, fx.Node] = {}
        self.folded: dict[fx.Node, fx.Node] = {}
        self.weights: dict[str, int] = {}
        self.inputs: list[str] = []
        self.image_inputs: dict[str, tuple[int, int, int]] = {}
        self.outputs: list[str] = []
        self.output_shapes: list[tuple[int, ...]] = []
        self.current: fx.Node | None = None
        self.norms: dict[tuple[fx.Node, str], int] = {}

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
        image = meta is not None and rule.images and len(getattr(meta, "shape", ())) == 4
        kinds = [self.values[a].kind for a in node.all_input_nodes if a in self.values]
        constant = bool(kinds) and len(kinds) == len(node.all_input_nodes) and \
            all(k in (Kind.CONSTANT, Kind.STATIC) for k in kinds)          # a mask: not a Capra tensor
        grouped = constant or any(k in _GROUPED for k in kinds)
        if meta is not None and rule.two_d and not grouped and not image and \
                len(getattr(meta, "shape", (0, 0))) != 2:
            if any(arg not in self.values for arg in node.all_input_nodes):
                raise Upstream  # its operand's shape was refused already
            raise Refuse(f"its result has shape {tuple(meta.shape)}; Capra tensors are 2-D (rows, cols)")
        value = self.lower_module(node, rule) if node.op == "call_module" else \
            rule.lower(self, node, **self.bind(node, rule))
        if image and value.image is None and value.kind in (Kind.TENSOR, Kind.PRODUCT):
            _, c, h, w = meta.shape
            value.image = (h, w, c)
        return value

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
            if np.asarray(v.array).dtype.kind not in "fc":
                raise Refuse(f"reads '{v.name}', which is not a float tensor, as its {role}; it cannot "
                             "become a weight")
            return self.weight(v.name, v.array)
        if v.kind is Kind.NORMED:
            return self.applied_norm(arg, v, role)
        if v.kind is Kind.COLUMNS:
            return self.columns_product(v)
        if v.kind in (Kind.PARTS, Kind.GROUP, Kind.MERGED):
            raise Refuse(f"reads {arg.name}, {v.kind.value.split(' (')[0]}, as its {role}; heads are read "
                         "by matmul, softmax, masked_fill, scaled_dot_product_attention, transpose and view, "
                         "and merged heads by a Linear")
        if v.kind is Kind.MASKED:
            raise Refuse(f"reads {arg.name}, scores with a causal mask filled in, as its {role}; only a "
                         "softmax over each row may read them (GA-2 gives each row its valid length)")
        if v.kind is Kind.IDS:
            raise Refuse(f"reads {arg.name}, token ids, as its {role}; token ids have no int8 scale, so only "
                         "an embedding (nn.Embedding, F.embedding) may read them")
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
        if not meta.dtype.is_floating_point and meta.dtype != torch.bool:
            if len(meta.shape) == 1:
                return self.lower_ids(node)
            raise Refuse(f"has dtype {meta.dtype} and shape {tuple(meta.shape)}; Capra takes integers only "
                         "as token ids, a 1-D tensor of one sequence's ids for an embedding")
        if len(meta.shape) not in (2, 4):
            raise Refuse(f"has shape {tuple(meta.shape)}; Capra tensors are 2-D (rows, cols), or images "
                         "(batch, channels, height, width) stored (batch*height*width, channels)")
        if not meta.dtype.is_floating_point:
            raise Refuse(f"has dtype {meta.dtype}; Capra's inputs are float tensors, which the "
                         "compiler quantizes")
        name = str(node.target)  # the argument's name (node.name may differ: input_1 for input)
        shape = self.shape_of(node)
        if len(shape) == 4:
            b, c, h, w = shape
            nid = self.own(self.graph.input(name, (b * h * w, c)))
            self.inputs.append(name)
            self.image_inputs[name] = (c, h, w)
            return _Value(Kind.TENSOR, nid, image=(h, w, c))
        nid = self.own(self.graph.input(name, shape))
        self.inputs.append(name)
        return _Value(Kind.TENSOR, nid)

    def lower_ids(self, node: fx.Node) -> _Value:
        """A 1-D integer input: token ids, the Capra input (tokens, 1) whose scale is pinned to 1
        (an embedding's, :mod:`compiler.ops.embedding`)."""
        name = str(node.target)
        nid = self.own(self.graph.input(name, (self.shape_of(node)[0], 1)))
        self.inputs.append(name)
        return _Value(Kind.IDS, nid)

    def lower_attribute(self, node: fx.Node) -> _Value:
        owner: Any = self.traced
        for part in node.target.split("."):
            owner = getattr(owner, part)
        if not isinstance(owner, torch.Tensor):
            raise Refuse("is not a float tensor, so it cannot become a weight")
        if not owner.is_floating_point():   # a mask: a constant only other constants may read
            return _Value(Kind.CONSTANT, array=owner.detach().cpu().numpy(), name=node.target)
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
            if v.kind is Kind.IDS:
                problems.append(f"returns {item.name}, the token ids it was given; nothing on GA-2 computes "
                                "them")
                continue
            if v.kind is Kind.NORMED:
                try:
                    v = _Value(Kind.TENSOR, self.applied_norm(item, v, "output"))
                except Refuse as r:
                    problems.append(r.why)
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
        if weight.kind is Kind.CONSTANT and self.value(x).kind is Kind.MERGED:
            return self.merged_dense(x, weight, bias, node)
        if weight.kind is Kind.CONSTANT:
            if weight.array.ndim != 2:
                raise Refuse(f"uses the weight '{weight.name}' of shape {weight.array.shape}; a linear "
                             "layer's weight is (out_features, in_features)")
            normed = self.value(x)
            if normed.kind is Kind.NORMED and bias is not None and bias.kind is not Kind.CONSTANT:
                raise Refuse("adds a computed bias; only a parameter bias is lowered (into the accumulator, "
                             "compiler/bias.py)")
            if normed.kind is Kind.NORMED:   # (z g + b) W^T + c = z (W diag g)^T + (W b + c)
                weight, bias = self.folded_norm(x, normed, weight, bias)
            source = self.tensor(x, "input") if normed.kind is not Kind.NORMED else self.bare_norm(x, normed)
            if self.split_later(node):
                if bias is not None and bias.kind is not Kind.CONSTANT:
                    raise Refuse("adds a computed bias; only a parameter bias is lowered")
                shift = None if bias is None else np.ravel(bias.array)
                return _Value(Kind.COLUMNS, source, array=weight.array, shift=shift, name=weight.name,
                              number=1.0)
            flat = normed.flat_image
            array = weight.array if flat is None else images.hwc_columns(weight.array, flat)
            second, transpose_b = self.weight(f"{weight.name}.T", array.T), False
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

    # ---------------------------------------------------------------- LayerNorm and embeddings (issue 26)

    def op_layer_norm(self, node: fx.Node, input: Any, normalized_shape: Any, weight: Any = None,
                      bias: Any = None, eps: Any = 1e-5, elementwise_affine: Any = True) -> _Value:
        """An ``nn.LayerNorm`` (or ``F.layer_norm``) over the last dim: a NORMED value, whose
        weight and bias the Linear layers that read it fold into theirs (one ``layernorm``
        operation, gain 1, no bias, for all of them); any other reader gets the layernorm with
        its affine part, which needs one positive weight for every column."""
        shape = tuple(normalized_shape) if isinstance(normalized_shape, tuple | list | torch.Size) \
            else (normalized_shape,)
        cols = self.shape_of(node)[-1]
        if shape != (cols,):
            raise Refuse(f"normalises over the shape {shape}; GA-2's LN normalises each row, so give "
                         f"normalized_shape=({cols},), the last dim")
        if not (_is_number(eps) and math.isfinite(eps) and eps >= 0):
            raise Refuse(f"has eps={eps!r}; a non-negative number is needed")
        gain = self.affine_part(weight, 1.0, node)
        shift = self.affine_part(bias, 0.0, node)
        return _Value(Kind.NORMED, self.tensor(input, "input"), array=gain, shift=shift, number=float(eps))

    def op_f_layer_norm(self, node: fx.Node, input: Any, normalized_shape: Any, weight: Any, bias: Any,
                        eps: Any) -> _Value:
        return self.op_layer_norm(node, input, normalized_shape, weight, bias, eps)

    def affine_part(self, part: Any, default: float, node: fx.Node) -> np.ndarray:
        """A LayerNorm's weight or bias as float64 (cols,): a parameter, or ``default`` when None."""
        cols = self.shape_of(node)[-1]
        if part is None:
            return np.full(cols, default)
        if isinstance(part, torch.Tensor):
            return _values(part).ravel()
        v = self.value(part)
        if v.kind is not Kind.CONSTANT:
            raise Refuse("takes a computed weight or bias; only parameters are lowered (folded into the "
                         "Linear layers that read the LayerNorm)")
        return np.asarray(v.array, dtype=np.float64).ravel()

    def bare_norm(self, arg: fx.Node, normed: _Value) -> int:
        """The layernorm without its affine part (gain 1, no bias), one for all its Linear readers."""
        key = (arg, "bare")
        if key not in self.norms:
            nid = self.graph.layernorm(normed.nid, eps=normed.number)
            self.origin.setdefault(nid, arg)
            self.norms[key] = nid
        return self.norms[key]

    def applied_norm(self, arg: fx.Node, normed: _Value, role: str) -> int:
        """The layernorm with its affine part, for a reader that is not a Linear."""
        gain = normed.array
        if not (np.all(gain == gain[0]) and gain[0] > 0):
            raise Refuse(f"reads {arg.name}, a LayerNorm with a weight that differs between columns (or "
                         f"is not positive), as its {role}; GA-2's requantizer has one factor per tensor, so "
                         "only a Linear layer, which folds the weight into its own, may read it")
        key = (arg, "applied")
        if key not in self.norms:
            shift = None if not normed.shift.any() else normed.shift
            nid = self.graph.layernorm(normed.nid, eps=normed.number, gain=float(gain[0]), bias=shift)
            self.origin.setdefault(nid, arg)
            self.norms[key] = nid
        return self.norms[key]

    def folded_norm(self, x: fx.Node, normed: _Value, weight: _Value,
                    bias: _Value | None) -> tuple[_Value, _Value]:
        """A Linear's weight W (out, in) and bias c with the LayerNorm's weight g and bias b folded
        in: W diag(g), and W b + c."""
        w = weight.array
        if w.shape[1] != normed.array.shape[0]:
            raise Refuse(f"reads {x.name} of {normed.array.shape[0]} columns with a weight of "
                         f"{w.shape[1]} in_features")
        c = np.zeros(w.shape[0]) if bias is None else np.ravel(bias.array)
        folded_w = _Value(Kind.CONSTANT, array=w * normed.array[None, :],
                          name=f"{weight.name}*{x.name}.weight")
        folded_b = _Value(Kind.CONSTANT, array=w @ normed.shift + c,
                          name=f"{bias.name if bias is not None else weight.name}+{x.name}.bias")
        return folded_w, folded_b

    def op_embedding(self, node: fx.Node, input: Any, weight: Any, padding_idx: Any = None,
                     max_norm: Any = None, norm_type: Any = 2.0, scale_grad_by_freq: Any = False,
                     sparse: Any = False) -> _Value:
        """An ``nn.Embedding`` (or ``F.embedding``): of token ids, one GATHER per token (the table
        stays in external memory); of constant positions (``torch.arange``), the constant rows."""
        if max_norm is not None:
            raise Refuse(f"has max_norm={max_norm!r}, which rescales the table's rows in place as it reads "
                         "them; GA-2 reads a fixed table")
        name = f"{node.target}.weight" if node.op == "call_module" else getattr(weight, "name", "table")
        table = _values(weight) if isinstance(weight, torch.Tensor) else self.value(weight).array
        if table is None or table.ndim != 2:
            raise Refuse("takes a table that is not a 2-D parameter")
        ids = self.value(input)
        if ids.kind is Kind.CONSTANT:
            positions = np.asarray(ids.array).astype(np.int64).ravel()
            return _Value(Kind.CONSTANT, array=table[positions], name=f"{name}[{ids.name}]")
        if ids.kind is not Kind.IDS:
            raise Refuse(f"looks up {input.name}, which is not the model's 1-D integer input of token ids "
                         "(nor constant positions)")
        return _Value(Kind.TENSOR, self.own(self.graph.embedding(ids.nid, self.weight(name, table))))

    def op_arange(self, node: fx.Node, start: Any, end: Any = None, step: Any = 1, dtype: Any = None,
                  device: Any = None, requires_grad: Any = False) -> _Value:
        """``torch.arange`` of numbers known at compile time: constant positions (dtype, device
        and requires_grad change nothing here)."""
        values = [self.value(v).number if isinstance(v, fx.Node) else v for v in (start, end, step)]
        if not all(v is None or _is_number(v) for v in values):
            raise Refuse("takes a bound that is not known at compile time")
        first, last, stride = values
        array = np.arange(first, dtype=np.float64) if last is None else np.arange(first, last, stride,
                                                                                  dtype=np.float64)
        return _Value(Kind.CONSTANT, array=array, name=node.name)

    # ---------------------------------------------------------------- heads (issue 26)

    def split_later(self, node: fx.Node) -> bool:
        """Whether every reader of a Linear's result takes columns of it (a split, a view into
        heads): then it is built per part, never whole."""
        readers = _value_readers(node)
        takes = ("split", "view")
        return bool(readers) and all(getattr(self.rule_of(u), "name", "") in takes for u in readers)

    def columns_product(self, v: _Value, lo: int = 0, hi: int | None = None) -> int:
        """The matmul of a COLUMNS value's columns lo..hi-1 (its weight's rows)."""
        hi = v.array.shape[0] if hi is None else hi
        part = "" if (lo, hi) == (0, v.array.shape[0]) else f"[{lo}:{hi}]"
        w = self.weight(f"{v.name}{part}.T", v.array[lo:hi].T)
        bias = None if v.shift is None else v.shift[lo:hi]
        return self.own(self.graph.matmul(v.nid, w, scale=v.number, bias=bias))

    def part(self, v: _Value, lo: int, hi: int) -> _Value:
        """Columns lo..hi-1 of a COLUMNS value, still not built."""
        return _Value(Kind.COLUMNS, v.nid, array=v.array[lo:hi], name=f"{v.name}[{lo}:{hi}]",
                      shift=None if v.shift is None else v.shift[lo:hi], number=v.number)

    def head_nids(self, v: _Value) -> list[int]:
        """A GROUP's heads as Capra nids (a COLUMNS head built now)."""
        return [self.columns_product(h) if isinstance(h, _Value) else h for h in v.heads]

    def op_split(self, node: fx.Node, input: Any, split_size_or_sections: Any, dim: Any = 0) -> _Value:
        """A Linear's result split along its columns (dim=-1): its parts, each a Linear of its own."""
        v = self.value(input)
        if v.kind is not Kind.COLUMNS or dim not in (-1, 1):
            raise Refuse("splits a tensor other than a Linear's result along its columns (dim=-1); GA-2 "
                         "builds each part as a Linear of its own")
        out = v.array.shape[0]
        sizes = ([split_size_or_sections] * -(-out // split_size_or_sections)
                 if _is_number(split_size_or_sections) else list(split_size_or_sections))
        bounds = np.cumsum([0, *sizes])
        return _Value(Kind.PARTS, heads=[self.part(v, int(lo), int(min(hi, out)))
                                         for lo, hi in itertools.pairwise(bounds)])

    def op_view(self, node: fx.Node, input: Any, s0: Any = None, s1: Any = None, s2: Any = None,
                s3: Any = None) -> _Value:
        """A view into heads (T, heads, d) of a Linear's result, or heads merged back (T, heads * d)."""
        shape = [s for s in flatten([s0, s1, s2, s3]) if s is not None]
        sizes = [self.value(s).number if isinstance(s, fx.Node) else s for s in shape]
        target = tuple(self.shape_of(node))
        v = self.value(input)
        if v.kind is Kind.COLUMNS and len(target) == 3:
            _, heads, d = target
            return _Value(Kind.GROUP, heads=[self.part(v, h * d, (h + 1) * d) for h in range(heads)],
                          layout="tokens")
        if v.kind is Kind.GROUP and v.layout == "tokens" and len(target) == 2:
            return _Value(Kind.MERGED, heads=self.head_nids(v))
        if v.kind in (Kind.TENSOR, Kind.PRODUCT) and target == tuple(self.graph.nodes[v.nid].shape):
            return v
        raise Refuse(f"views {'a Linear' if v.kind is Kind.COLUMNS else 'a tensor'} as {tuple(sizes)}; GA-2 "
                     "takes a view into heads (T, heads, d) of a Linear's result read only so, and heads "
                     "merged back (T, heads * d) after transpose(0, 1)")

    def op_contiguous(self, node: fx.Node, input: Any, memory_format: Any = None) -> _Value:
        return self.value(input)

    def group_transpose(self, v: _Value, dims: set) -> _Value:
        """transpose of a GROUP: (0, 1) swaps tokens and heads, (1, 2) a head's two dims."""
        if dims == {0, 1} and v.layout in ("tokens", "heads"):
            swapped = "heads" if v.layout == "tokens" else "tokens"
            return _Value(Kind.GROUP, heads=self.head_nids(v), layout=swapped)
        if dims == {1, 2} and v.layout in ("heads", "heads_t"):
            swapped = "heads_t" if v.layout == "heads" else "heads"
            return _Value(Kind.GROUP, heads=self.head_nids(v), layout=swapped)
        raise Refuse(f"swaps dims {sorted(dims)} of heads laid out as {v.layout}")

    def group_matmul(self, node: fx.Node, a: _Value, b: _Value) -> _Value:
        """Per head: a_h @ b_h (b_h read transposed when it is a transposed head)."""
        if a.kind is not Kind.GROUP or b.kind is not Kind.GROUP or a.layout != "heads" or \
                b.layout not in ("heads", "heads_t") or len(a.heads) != len(b.heads):
            raise Refuse("multiplies heads by something other than heads of the same count (laid out "
                         "(heads, T, d) after transpose(0, 1))")
        factor = self.folded_factor(node)
        products = [self.own(self.graph.matmul(x, y, transpose_b=b.layout == "heads_t", scale=factor))
                    for x, y in zip(self.head_nids(a), self.head_nids(b), strict=True)]
        return _Value(Kind.GROUP, heads=products, layout="heads")

    def merged_dense(self, x: fx.Node, weight: _Value, bias: _Value | None, node: fx.Node) -> _Value:
        """A Linear of merged heads: the sum over heads of y_h W_h^T (W_h: the weight's columns of
        head h), the bias on the first; one add per further head."""
        heads = self.value(x).heads
        d = self.graph.nodes[heads[0]].shape[1]
        if bias is not None and bias.kind is not Kind.CONSTANT:
            raise Refuse("adds a computed bias; only a parameter bias is lowered")
        total = None
        for h, y in enumerate(heads):
            lo, hi = h * d, (h + 1) * d
            w = self.weight(f"{weight.name}[:, {lo}:{hi}].T", weight.array[:, lo:hi].T)
            b = np.ravel(bias.array) if bias is not None and h == 0 else None
            product = self.own(self.graph.matmul(y, w, bias=b))
            total = product if total is None else self.own(self.graph.add(total, product))
        return _Value(Kind.TENSOR, total)

    # ---------------------------------------------------------------- causal attention (issue 26)

    def op_sdpa(self, node: fx.Node, query: Any, key: Any, value: Any, attn_mask: Any = None,
                dropout_p: Any = 0.0, is_causal: Any = False, scale: Any = None,
                enable_gqa: Any = False) -> _Value:
        """``F.scaled_dot_product_attention`` of (tokens, d) tensors: the scores q k^T times
        ``scale`` (1/sqrt(d) by default), a softmax (causal with ``is_causal``), times v."""
        if attn_mask is not None:
            raise Refuse("takes an attn_mask; GA-2 masks causally only: pass is_causal=True")
        if dropout_p != 0:
            raise Refuse(f"has dropout_p={dropout_p!r}; at inference it must be 0")
        if scale is not None and not (_is_number(scale) and math.isfinite(scale) and scale > 0):
            raise Refuse(f"has scale={scale!r}; a positive number is needed (the requantizer's multiplier)")
        if any(self.value(a).kind is Kind.GROUP for a in (query, key, value)):
            return self.group_sdpa(query, key, value, is_causal, scale)
        q, k, v = (self.tensor(arg, name) for arg, name in ((query, "query"), (key, "key"), (value, "value")))
        d = self.graph.nodes[q].shape[1]
        factor = float(scale) if scale is not None else 1.0 / math.sqrt(d)
        scores = self.own(self.graph.matmul(q, k, transpose_b=True, scale=factor))
        p = self.own(self.graph.softmax(scores, causal=bool(is_causal)))
        return _Value(Kind.TENSOR, self.own(self.graph.matmul(p, v)))

    def group_sdpa(self, query: Any, key: Any, value: Any, is_causal: Any, scale: Any) -> _Value:
        """Per head: softmax(q_h k_h^T * scale) v_h, causal with ``is_causal``."""
        q, k, v = (self.value(a) for a in (query, key, value))
        if not all(x.kind is Kind.GROUP and x.layout == "heads" for x in (q, k, v)):
            raise Refuse("takes heads not laid out (heads, T, d), or heads and a plain tensor")
        outs = []
        for qh, kh, vh in zip(self.head_nids(q), self.head_nids(k), self.head_nids(v), strict=True):
            d = self.graph.nodes[qh].shape[1]
            factor = float(scale) if scale is not None else 1.0 / math.sqrt(d)
            scores = self.own(self.graph.matmul(qh, kh, transpose_b=True, scale=factor))
            p = self.own(self.graph.softmax(scores, causal=bool(is_causal)))
            outs.append(self.own(self.graph.matmul(p, vh)))
        return _Value(Kind.GROUP, heads=outs, layout="heads")

    def op_masked_fill(self, node: fx.Node, input: Any, mask: Any, value: Any) -> _Value:
        """Scores with a causal mask filled with -inf: a MASKED value, which a softmax over each
        row turns into a causal softmax (GA-2 gives each row its valid length)."""
        if not (_is_number(value) and value == -math.inf):
            raise Refuse(f"fills with {value!r}; only -inf before a softmax is lowered (an exact mask: the "
                         "softmax unit takes each row's valid length)")
        m = self.value(mask)
        if m.kind is not Kind.CONSTANT:
            raise Refuse("takes a mask computed at run time; only a constant causal mask is lowered")
        scores = self.value(input)
        nid = scores.heads[0] if scores.kind is Kind.GROUP else self.tensor(input, "input")
        rows, cols = self.graph.nodes[nid].shape
        m = _Value(Kind.CONSTANT, array=np.asarray(m.array).reshape(np.asarray(m.array).shape[-2:])
                   if np.asarray(m.array).ndim > 2 and np.asarray(m.array).size == rows * cols else m.array)
        causal = np.arange(cols)[None, :] > np.arange(rows)[:, None] + cols - rows
        given = np.asarray(m.array, dtype=bool)
        if given.shape != (rows, cols) or not np.array_equal(given, causal):   # True where masked
            raise Refuse(f"fills a mask that is not the causal one for ({rows}, {cols}) scores (True above "
                         "the diagonal); GA-2 masks causally only")
        if scores.kind is Kind.GROUP:
            return _Value(Kind.GROUP, heads=scores.heads, layout=scores.layout, number="masked")
        return _Value(Kind.MASKED, nid)

    def constant(self, arg: Any, role: str) -> np.ndarray:
        """The array of a constant operand (a parameter, a buffer, or computed from them)."""
        v = self.value(arg)
        if v.kind is Kind.STATIC:
            return np.asarray(v.number)
        if v.kind is not Kind.CONSTANT:
            raise Refuse(f"GA-2 has no operation for it on a tensor computed at run time ({role}); the front "
                         f"end lowers {SUPPORTED}")
        return np.asarray(v.array)

    def op_getitem(self, node: fx.Node, input: Any, index: Any) -> _Value:
        """Indexing a constant (a mask buffer cut to the sequence): the constant part."""
        v = self.value(input)
        if v.kind is Kind.PARTS and isinstance(index, int):
            return v.heads[index]
        if v.kind is not Kind.CONSTANT:
            raise Refuse(f"GA-2 has no operation for it on a tensor computed at run time; the front end "
                         f"lowers {SUPPORTED}")
        return _Value(Kind.CONSTANT, array=np.asarray(v.array)[self.static_index(index)], name=f"{v.name}[]")

    def static_index(self, index: Any) -> Any:
        """An index with the fx nodes in it (a slice's bound: the input's length) replaced by
        their compile-time numbers."""
        if isinstance(index, tuple):
            return tuple(self.static_index(i) for i in index)
        if isinstance(index, slice):
            return slice(*(self.static_index(b) for b in (index.start, index.stop, index.step)))
        if isinstance(index, fx.Node):
            v = self.value(index)
            if v.kind is not Kind.STATIC:
                raise Refuse(f"indexes a constant by {index.name}, which is not known at compile time")
            return v.number
        return index

    def op_compare(self, node: fx.Node, input: Any, other: Any) -> _Value:
        """``==`` or ``!=`` of constants: a constant mask."""
        a, b = self.constant(input, "input"), self.constant(other, "other")
        equal = node.target in (operator.eq, torch.eq) or node.target == "eq"
        return _Value(Kind.CONSTANT, array=(a == b) if equal else (a != b), name=node.name)

    def op_on_constant(self, node: fx.Node, input: Any, diagonal: Any = 0) -> _Value:
        """torch.tril, triu, logical_not, ``~`` and Tensor.bool of a constant: a constant, computed
        by PyTorch itself."""
        x = torch.as_tensor(self.constant(input, "input"))
        if node.op == "call_method":
            result = getattr(x, node.target)()
        elif node.target in (torch.tril, torch.triu):
            result = node.target(x, diagonal)
        else:
            result = node.target(x)
        return _Value(Kind.CONSTANT, array=result.numpy(), name=node.name)

    def op_matmul(self, node: fx.Node, input: Any, other: Any) -> _Value:
        if self.value(input).kind is Kind.GROUP or self.value(other).kind is Kind.GROUP:
            return self.group_matmul(node, self.value(input), self.value(other))
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

    def op_relu6(self, node: fx.Node, input: Any, inplace: bool = False) -> _Value:
        return self.table(self.tensor(input, "operand"), "relu6")

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
        if self.value(input).kind is Kind.GROUP:
            v = self.value(input)
            if v.layout != "heads":
                raise Refuse(f"normalises heads laid out as {v.layout}; give the scores (heads, T, T)")
            probs = [self.own(self.graph.softmax(h, causal=v.number == "masked")) for h in v.heads]
            return _Value(Kind.GROUP, heads=probs, layout="heads")
        masked = self.value(input).kind is Kind.MASKED
        nid = self.value(input).nid if masked else self.tensor(input, "operand")
        length = self.graph.nodes[nid].shape[1]
        if length > self.params.SM_MAX_LEN:
            raise Refuse(f"its rows hold {length} values, more than the softmax unit's "
                         f"{self.params.SM_MAX_LEN} (SM_MAX_LEN)")
        return _Value(Kind.TENSOR, self.own(self.graph.softmax(nid, causal=masked)))

    def op_add(self, node: fx.Node, input: Any, other: Any, alpha: Any) -> _Value:
        if alpha != 1:
            raise Refuse(f"scales its second operand by alpha={alpha!r}; GA-2's add has no factor")
        shape = self.shape_of(node)
        if len(shape) == 4:   # images: stored (B*H*W, C)
            if any(not isinstance(arg, fx.Node) or self.value(arg).image is None for arg in (input, other)):
                raise Refuse("adds a constant to images; GA-2 adds two tensors of one shape (a residual add)")
            shape = (shape[0] * shape[2] * shape[3], shape[1])
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
        if self.value(input).kind is Kind.GROUP:
            return self.group_transpose(self.value(input), {d % 3 for d in (dim0, dim1)})
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
        if name in ("device", "dtype"):   # read by torch.arange(..., device=x.device): no value of its own
            return _Value(Kind.STATIC, number=None)
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
        if v.kind is Kind.NORMED:
            return _Value(Kind.TRANSPOSED, self.tensor(arg, "operand"))
        self.tensor(arg, "operand")  # refuses indices and numbers with the reason
        raise AssertionError("unreachable")


    # ---------------------------------------------------------------- images (issue 25)

    def image_of(self, arg: Any) -> tuple[int, int, int]:
        """(H, W, C) of an operand that holds images."""
        v = self.value(arg)
        if v.image is None:
            raise Refuse(f"reads {getattr(arg, 'name', arg)}, which holds no images (batch, channels, "
                         "height, "
                         "width)")
        return v.image

    def op_conv2d(self, node: fx.Node, input: Any) -> _Value:
        """An ``nn.Conv2d`` (groups = 1, or depthwise), a BatchNorm2d that alone reads it folded in."""
        layer = self.traced.get_submodule(node.target)
        images.check_conv(layer)
        padding = images.conv_padding(layer)
        h, w, _ = self.image_of(input)
        dw = images.depthwise(layer)
        weight = images.depthwise_weight(layer.weight) if dw else images.conv_weight(layer.weight)
        bias = np.zeros(weight.shape[1]) if layer.bias is None else _values(layer.bias)
        folded = images.folded_batchnorm(node, self.traced)
        if folded is not None:
            user, bn = folded
            try:
                g, shift = images.batchnorm_fold(bn)
            except Refuse:
                folded = None       # the BatchNorm2d's own rule refuses it
            else:
                weight, bias = weight * g, bias * g + shift
                self.folded[user] = node
        name = f"{node.target}.weight" + ("+bn" if folded is not None else "")
        has_bias = layer.bias is not None or folded is not None
        nid = self.graph.conv2d(self.tensor(input, "input"), self.weight(name, weight), (h, w),
                                images.pairs(layer.kernel_size), images.pairs(layer.stride), padding,
                                depthwise=dw, bias=bias if has_bias else None, per_channel=self.per_channel)
        return _Value(Kind.TENSOR, self.own(nid))

    def op_batchnorm(self, node: fx.Node, input: Any) -> _Value:
        """A BatchNorm2d folded into the convolution before it (:meth:`op_conv2d`), else refused."""
        images.batchnorm_fold(self.traced.get_submodule(node.target))   # training mode: refused here
        if node not in self.folded:
            raise Refuse(f"folds only into an nn.Conv2d that nothing else reads, and "
                         f"{self.producer_hint(input, 'such a convolution')}")
        return self.value(self.folded[node])

    def op_maxpool(self, node: fx.Node, input: Any) -> _Value:
        layer = self.traced.get_submodule(node.target)
        images.check_pool(layer, "max")
        h, w, _ = self.image_of(input)
        kernel = images.pairs(layer.kernel_size)
        stride = kernel if layer.stride is None else images.pairs(layer.stride)
        return _Value(Kind.TENSOR, self.own(self.graph.maxpool2d(self.tensor(input, "input"), (h, w), kernel,
                                                                 stride)))

    def op_avgpool(self, node: fx.Node, input: Any) -> _Value:
        """An ``nn.AvgPool2d``: a convolution by identity blocks, the factor 1 / window."""
        layer = self.traced.get_submodule(node.target)
        images.check_pool(layer, "avg")
        kernel = images.pairs(layer.kernel_size)
        stride = kernel if layer.stride is None else images.pairs(layer.stride)
        divisor = layer.divisor_override or kernel[0] * kernel[1]
        return self.pool_as_conv(node, input, kernel, stride, images.pairs(layer.padding), divisor)

    def op_adaptive_avgpool(self, node: fx.Node, input: Any) -> _Value:
        """``nn.AdaptiveAvgPool2d(1)``: the mean of each image, a convolution of the image's size."""
        layer = self.traced.get_submodule(node.target)
        if images.pairs(layer.output_size) != (1, 1):
            raise Refuse(f"has output_size={layer.output_size}; Capra lowers the global average "
                         "(output_size=1)")
        h, w, _ = self.image_of(input)
        return self.pool_as_conv(node, input, (h, w), (1, 1), (0, 0), h * w)

    def pool_as_conv(self, node: fx.Node, input: Any, kernel: tuple[int, int], stride: tuple[int, int],
                     padding: tuple[int, int], divisor: int) -> _Value:
        h, w, _ = self.image_of(input)
        weight = self.weight(f"{node.target}.ones", np.ones((kernel[0] * kernel[1], 1)))
        nid = self.graph.conv2d(self.tensor(input, "input"), weight, (h, w), kernel, stride, padding,
                                scale=1.0 / divisor, shared=True)
        return _Value(Kind.TENSOR, self.own(nid))

    def op_flatten(self, node: fx.Node, input: Any, start_dim: Any = 1, end_dim: Any = -1) -> _Value:
        """Images (B, C, H, W) flattened to (B, C*H*W): a reshape to B rows (no copy), columns in
        the order (y, x, c); a linear layer that reads it takes its weight's columns permuted."""
        h, w, c = self.image_of(input)
        if start_dim != 1 or end_dim not in (-1, 3):
            raise Refuse(f"flattens dims {start_dim}..{end_dim} of images; Capra flattens each image whole "
                         "(start_dim=1)")
        nid = self.tensor(input, "input")
        rows = self.graph.nodes[nid].shape[0] // (h * w)
        flat = None if h == w == 1 else (h, w, c)
        return _Value(Kind.TENSOR, self.own(self.graph.reshape(nid, rows)), flat_image=flat)


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
         methods=("add",), images=True),
    Rule("conv2d", _L.op_conv2d, modules=(nn.Conv2d,), images=True),
    Rule("batchnorm2d", _L.op_batchnorm, modules=(nn.BatchNorm2d,), images=True),
    Rule("maxpool2d", _L.op_maxpool, modules=(nn.MaxPool2d,), images=True),
    Rule("avgpool2d", _L.op_avgpool, modules=(nn.AvgPool2d,), images=True),
    Rule("adaptive_avgpool2d", _L.op_adaptive_avgpool, modules=(nn.AdaptiveAvgPool2d,), images=True),
    Rule("flatten", _L.op_flatten, (_X, ("start_dim", 0), ("end_dim", -1)), functions=(torch.flatten,),
         methods=("flatten",), modules=(nn.Flatten,), settings=("start_dim", "end_dim"), fresh=False),
    Rule("relu6", _L.op_relu6, (_X, ("inplace", False)), functions=(F.relu6,), modules=(nn.ReLU6,),
         images=True),
    Rule("relu", _L.op_relu, (_X, ("inplace", False)), functions=(torch.relu, F.relu), methods=("relu",),
         modules=(nn.ReLU,), settings=("inplace",), images=True),
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
    Rule("layer_norm", _L.op_layer_norm, modules=(nn.LayerNorm,),
         settings=("normalized_shape", "weight", "bias", "eps", "elementwise_affine")),
    Rule("f_layer_norm", _L.op_f_layer_norm,
         (_X, ("normalized_shape", _REQUIRED), ("weight", None), ("bias", None), ("eps", 1e-5)),
         functions=(F.layer_norm,)),
    Rule("embedding", _L.op_embedding, modules=(nn.Embedding,),
         settings=("weight", "padding_idx", "max_norm")),
    Rule("f_embedding", _L.op_embedding,
         (_X, ("weight", _REQUIRED), ("padding_idx", None), ("max_norm", None), ("norm_type", 2.0),
          ("scale_grad_by_freq", False), ("sparse", False)),
         functions=(F.embedding,)),
    Rule("arange", _L.op_arange, (("start", _REQUIRED), ("end", None), ("step", 1), ("dtype", None),
                                  ("device", None), ("requires_grad", False)),
         functions=(torch.arange,), two_d=False),
    Rule("sdpa", _L.op_sdpa,
         (("query", _REQUIRED), ("key", _REQUIRED), ("value", _REQUIRED), ("attn_mask", None),
          ("dropout_p", 0.0), ("is_causal", False), ("scale", None), ("enable_gqa", False)),
         functions=(F.scaled_dot_product_attention,)),
    Rule("masked_fill", _L.op_masked_fill, (_X, ("mask", _REQUIRED), ("value", _REQUIRED)),
         functions=(torch.masked_fill,), methods=("masked_fill",)),
    Rule("getitem", _L.op_getitem, (_X, ("index", _REQUIRED)), functions=(operator.getitem,), fresh=False),
    Rule("compare", _L.op_compare, (_X, ("other", _REQUIRED)), functions=(operator.eq, operator.ne, torch.eq,
                                                                          torch.ne), methods=("eq", "ne")),
    Rule("on_constant", _L.op_on_constant, (_X, ("diagonal", 0)),
         functions=(torch.tril, torch.triu, torch.logical_not, operator.invert), methods=("bool",)),
    Rule("split", _L.op_split, (_X, ("split_size_or_sections", _REQUIRED), ("dim", 0)),
         functions=(torch.split,), methods=("split",), fresh=False, two_d=False),
    Rule("view", _L.op_view, (_X, ("s0", None), ("s1", None), ("s2", None), ("s3", None)),
         methods=("view", "reshape"), functions=(torch.reshape,), fresh=False, two_d=False),
    Rule("contiguous", _L.op_contiguous, (_X, ("memory_format", None)), methods=("contiguous",), fresh=False,
         two_d=False),
    Rule("t", _L.op_t, (_X,), functions=(torch.t,), methods=("t",), fresh=False),
    Rule("getattr", _L.op_getattr, (_X, ("name", _REQUIRED)), functions=(getattr,), fresh=False),
)
"""The front end's one table: every PyTorch operation it lowers, as a function, a Tensor method
or a layer, with its arguments and the method that lowers it."""

_BY_FUNCTION: dict[Any, Rule] = {fn: rule for rule in RULES for fn in rule.functions}
"""call_function target -> rule (derived from :data:`RULES`)."""
_BY_METHOD: dict[str, Rule] = {name: rule for rule in RULES for name in rule.methods}
"""Tensor method -> rule (derived from :data:`RULES`)."""
