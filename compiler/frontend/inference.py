"""Layers at inference: those that change nothing are removed before lowering, and those
that would behave otherwise, or have no exact integer method, are refused with the reason.

Removed (:func:`drop_identities`), each replaced by its operand:

* dropout in eval mode: a dropout module (``nn.Dropout``, ``nn.Dropout1d/2d/3d``,
  ``nn.AlphaDropout``, ``nn.FeatureAlphaDropout``) of a model in eval mode, and a dropout
  function (``F.dropout``, ``F.alpha_dropout``, ``F.feature_alpha_dropout``,
  ``F.dropout1d/2d/3d``, ``torch.dropout``) called with ``training=False``: the usual
  ``F.dropout(x, p, self.training)`` of a model in eval mode is traced with False;
* ``nn.Identity``;
* a flatten (``nn.Flatten``, ``torch.flatten``, ``Tensor.flatten``) whose result has its
  operand's shape: ``nn.Flatten()`` (start_dim=1) on (batch, features) data.

Refused (:func:`inference_refusal`, called by the lowering for every node):

* a dropout left over: it is in training mode (or ``F.dropout`` without ``training=``, whose
  default is True): "call model.eval() before tracing";
* a flatten that reshapes other than images (B, C, H, W) into (B, C*H*W) (Capra tensors are 2-D;
  images are stored (B*H*W, C): :mod:`compiler.frontend.images`);
* ``nn.RMSNorm``, ``F.rms_norm``: GA-2 has no exact integer method for them. An RMS norm divides
  each row by the square root of its mean square; GA-2's LN (issue 26) divides by the square
  root of the variance, after subtracting the row's mean, and no other instruction computes a
  row's reciprocal square root, so the front end refuses rather than approximates.
  (``nn.LayerNorm`` and ``F.layer_norm`` are lowered to LN: :mod:`compiler.frontend.fx_lower`.)
"""

from __future__ import annotations

import inspect
from typing import Any

import torch
import torch.nn.functional as F
from torch import fx, nn

DROPOUT_FUNCTIONS = (F.dropout, F.alpha_dropout, F.feature_alpha_dropout, F.dropout1d, F.dropout2d,
                     F.dropout3d, torch.dropout)
"""Dropout functions: the identity when called with training (``train`` for torch.dropout) False."""
FLATTEN_FUNCTIONS = (torch.flatten,)
"""Flatten functions (and the Tensor method ``flatten``)."""


def dropout_training(node: fx.Node, traced: fx.GraphModule) -> Any:
    """A dropout's training flag as traced (the module's ``training`` for a layer), or None
    when the node is not a dropout."""
    if node.op == "call_module":
        module = traced.get_submodule(node.target)
        return module.training if isinstance(module, nn.modules.dropout._DropoutNd) else None
    if node.op != "call_function" or node.target not in DROPOUT_FUNCTIONS:
        return None
    if node.target is torch.dropout:  # a builtin: dropout(input, p, train)
        return node.kwargs.get("train", node.args[2] if len(node.args) > 2 else None)
    try:
        bound = inspect.signature(node.target).bind(*node.args, **node.kwargs)
    except TypeError:
        return True  # arguments that do not bind: never taken for the identity
    bound.apply_defaults()
    return bound.arguments["training"]


def is_flatten(node: fx.Node, traced: fx.GraphModule) -> bool:
    """A flatten layer, function or method."""
    if node.op == "call_module":
        return isinstance(traced.get_submodule(node.target), nn.Flatten)
    if node.op == "call_method":
        return node.target == "flatten"
    return node.op == "call_function" and node.target in FLATTEN_FUNCTIONS


def flattens_images(node: fx.Node) -> bool:
    """A flatten of images (B, C, H, W) into (B, C*H*W), which the images' rule lowers
    (:mod:`compiler.frontend.images`)."""
    before, after = _shape(operand(node)), _shape(node)
    return before is not None and after is not None and len(before) == 4 and after == (
        before[0], before[1] * before[2] * before[3])


def _shape(value: Any) -> tuple[int, ...] | None:
    meta = value.meta.get("tensor_meta") if isinstance(value, fx.Node) else None
    return tuple(meta.shape) if meta is not None else None


def operand(node: fx.Node) -> Any:
    """The tensor an identity passes on: its first argument."""
    return node.args[0] if node.args else next(iter(node.kwargs.values()), None)


def is_identity(node: fx.Node, traced: fx.GraphModule) -> bool:
    """Whether a node changes nothing at inference (see the module docstring)."""
    if node.op == "call_module" and isinstance(traced.get_submodule(node.target), nn.Identity):
        return True
    training = dropout_training(node, traced)
    if training is not None:
        return training is False
    if is_flatten(node, traced):
        shape = _shape(node)
        return shape is not None and len(shape) == 2 and shape == _shape(operand(node))
    return False


NORMS = (nn.RMSNorm,)
"""Normalisation layers with no exact integer method on GA-2 (nn.LayerNorm has one: LN)."""
NORM_FUNCTIONS = (F.rms_norm,)
"""Normalisation functions: likewise."""

NO_NORM = ("GA-2 has no exact integer method for it: an RMS norm divides each row by the square root of its "
           "mean square, and GA-2's LN divides by that of the variance, after subtracting the row's mean; no "
           "other instruction computes a reciprocal square root; use nn.LayerNorm, or normalise on the host")


def inference_refusal(node: fx.Node, traced: fx.GraphModule) -> str | None:
    """Why a dropout, flatten or normalisation cannot run on GA-2 as traced; None for any
    other node (and for one :func:`drop_identities` would remove)."""
    is_module = node.op == "call_module"
    layer = traced.get_submodule(node.target) if is_module else None
    if isinstance(layer, NORMS) or (node.op == "call_function" and node.target in NORM_FUNCTIONS):
        return NO_NORM
    training = dropout_training(node, traced)
    if training is not None and training is not False:
        if is_module:
            return ("the model is in training mode, where a dropout zeroes random values; call model.eval() "
                    "before tracing (in eval mode it is the identity)")
        return (f"is called with training={training!r}, so it zeroes random values; call model.eval() before "
                "tracing and pass training=self.training (F.dropout's default is True)")
    if is_flatten(node, traced) and not is_identity(node, traced) and not flattens_images(node):
        return (f"flattens {_shape(operand(node))} into {_shape(node)}; Capra tensors are 2-D (rows, cols), "
                "so only a flatten that changes nothing is lowered (start_dim=1 on (batch, features) data)")
    return None


def drop_identities(traced: fx.GraphModule) -> None:
    """Replace every node that changes nothing at inference by its operand (in place)."""
    for node in list(traced.graph.nodes):
        if node.op in ("call_module", "call_function", "call_method") and is_identity(node, traced):
            node.replace_all_uses_with(operand(node))
            traced.graph.erase_node(node)
    traced.recompile()
