"""compiler/frontend/fx_lower.py: the front end's one table of rules."""

import inspect

import pytest

torch = pytest.importorskip("torch")

from compiler.frontend.fx_lower import RULES, Lowering, Rule, rule_of  # noqa: E402


def test_each_call_target_has_one_rule():
    """A function, a Tensor method or a layer class is named by one rule only."""
    functions = [fn for rule in RULES for fn in rule.functions]
    methods = [name for rule in RULES for name in rule.methods]
    modules = [kind for rule in RULES for kind in rule.modules]
    assert len(functions) == len(set(functions)) and len(methods) == len(set(methods))
    assert len(modules) == len(set(modules))
    assert len({rule.name for rule in RULES}) == len(RULES)


@pytest.mark.parametrize("rule", RULES, ids=[rule.name for rule in RULES])
def test_each_rule_lowers_with_a_method_that_takes_its_arguments(rule: Rule):
    """The method takes (self, node, ...) and every argument of the signature by name; a layer's
    call passes its input first, then its settings by name."""
    assert getattr(Lowering, rule.lower.__name__) is rule.lower
    parameters = list(inspect.signature(rule.lower).parameters)[2:]
    assert [name for name, _ in rule.signature] == parameters[:len(rule.signature)] or not rule.signature
    assert set(rule.settings) <= set(parameters), rule.name
    assert rule.functions or rule.methods or rule.modules


def test_a_layer_a_function_and_a_method_find_the_same_rule():
    """torch.relu, x.relu() and nn.ReLU() are one rule."""
    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.act = torch.nn.ReLU()

        def forward(self, x):
            return self.act(torch.relu(x).relu())

    traced = torch.fx.symbolic_trace(Model())
    calls = [n for n in traced.graph.nodes if n.op.startswith("call_")]
    assert [rule_of(n, traced).name for n in calls] == ["relu", "relu", "relu"]
