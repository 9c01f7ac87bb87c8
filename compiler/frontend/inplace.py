"""In-place operations in a traced module: refused before the front end lowers anything.

torch.fx records ``h.add_(y)`` as a node whose result nothing need read, so the dead-code
elimination would drop it and the compiled program would compute ``h`` unchanged.
:func:`inplace_refusals` refuses such operations, each with the out-of-place form to write
instead (see :mod:`compiler.frontend.torch_fx`).
"""

from __future__ import annotations

import inspect
import operator
from typing import Any

from torch import fx

from .fx_lower import Refusal, describe, rule_of

_AUGMENTED = {operator.iadd: "+=", operator.isub: "-=", operator.imul: "*=", operator.itruediv: "/=",
              operator.ifloordiv: "//=", operator.imatmul: "@=", operator.ipow: "**=", operator.iand: "&=",
              operator.ior: "|=", operator.ixor: "^=", operator.imod: "%="}


def _name_of(fn: Any) -> str:
    return getattr(fn, "__name__", "") or ""


def _inplace_flag(node: fx.Node, traced: fx.GraphModule) -> bool:
    """True for a call told to overwrite its operand: ``inplace=True`` as an argument (F.relu)
    or as the layer's setting (nn.ReLU(inplace=True))."""
    if node.op == "call_module":
        return getattr(traced.get_submodule(node.target), "inplace", False) is True
    if node.kwargs.get("inplace") is True:
        return True
    if node.op != "call_function":
        return False
    try:
        bound = inspect.signature(node.target).bind(*node.args, **node.kwargs)
    except (TypeError, ValueError):  # a builtin without a signature, or arguments that do not bind
        return False
    return bound.arguments.get("inplace") is True


def _operand(node: fx.Node) -> Any:
    if node.args:
        return node.args[0]
    return next(iter(node.kwargs.values()), None)


def _why_visible(operand: Any, node: fx.Node, traced: fx.GraphModule) -> str | None:
    """Why a change to ``operand`` made by ``node`` could reach a value the model returns, or
    None when nothing but ``node`` can see it (a fresh result that only ``node`` reads)."""
    if not isinstance(operand, fx.Node):
        return f"its operand {operand!r} is not a tensor the model computes"
    if operand.op == "placeholder":
        return f"{operand.name} is an input of forward, which the caller would see changed"
    if operand.op == "get_attr":
        return f"{operand.name} is a parameter or buffer of the module, which would stay changed"
    others = [user.name for user in operand.users if user is not node]
    if others:
        return (f"{operand.name} is also read by {', '.join(others)}; in PyTorch a read after the change "
                "sees the changed values, in the compiled graph it would not")
    rule = rule_of(operand, traced)
    if rule is None or not rule.fresh:       # the rule's result may be a view of, or the same as, an operand
        return (f"{operand.name} ({describe(operand, traced)}) may share its memory with another tensor, "
                "which would change too")
    return None


def inplace_refusals(traced: fx.GraphModule) -> list[Refusal]:
    """The operations that change a tensor in place, refused, in graph order.

    Run on the traced graph before dead-code elimination: torch.fx records ``h.add_(y)`` as a
    node whose result nobody reads, so the elimination would drop it and the compiled program
    would compute ``h`` unchanged. Refused: every Tensor method or torch function whose name
    ends in ``_`` (``add_``, ``relu_``, ``torch.relu_``), every call with ``out=``, and a call
    with ``inplace=True`` (F.relu, nn.ReLU(inplace=True), ...) whose change another node
    could see. ``inplace=True`` on a fresh result that nothing else reads is lowered as the
    out-of-place operation: its value is the same and no other tensor changes.
    """
    refusals = []
    for node in traced.graph.nodes:
        if node.op not in ("call_function", "call_method", "call_module"):
            continue
        what = describe(node, traced)
        operand = _operand(node)
        shown = operand.name if isinstance(operand, fx.Node) else repr(operand)
        name = node.target if node.op == "call_method" else _name_of(node.target)
        if node.op == "call_function" and node.target in _AUGMENTED:
            symbol = _AUGMENTED[node.target]
            why = (f"changes {shown} in place ({symbol}); the front end compiles values, not changes to "
                   f"them: write the out-of-place form, h = h {symbol[:-1]} y")
        elif node.op != "call_module" and name.endswith("_") and not name.startswith("_"):
            base = name[:-1]
            written = f"h = h.{base}(...)" if node.op == "call_method" else f"h = torch.{base}(h, ...)"
            why = (f"changes {shown} in place; the front end compiles values, not changes to them, so a "
                   f"later read of {shown} would get the old values and a result nothing reads would be "
                   f"dropped: write the out-of-place form, {written}")
        elif node.op != "call_module" and node.kwargs.get("out") is not None:
            target = node.kwargs["out"]
            target = target.name if isinstance(target, fx.Node) else repr(target)
            why = (f"writes its result into {target} (out=); the front end compiles values, not changes "
                   "to them: drop out= and assign the result, y = f(...)")
        elif _inplace_flag(node, traced) and (reason := _why_visible(operand, node, traced)) is not None:
            fix = ("build the layer without it (the default inplace=False)" if node.op == "call_module"
                   else "drop inplace=True and use the result")
            why = f"changes {shown} in place (inplace=True), and {reason}: {fix}"
        else:
            continue
        refusals.append(Refusal(node.name, what, why))
    return refusals
