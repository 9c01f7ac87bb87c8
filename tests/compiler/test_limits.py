"""compiler/limits.py: K and softmax row limits, read from the machine parameters."""

import numpy as np
import pytest

from compiler import CompileError, Graph, compile_graph
from compiler.limits import check_limits
from sim.spec import Params

from .conftest import single_matmul


def test_k_max_is_allowed_and_one_more_is_refused():
    check_limits(single_matmul(2, 64, 3))
    with pytest.raises(CompileError) as info:
        compile_graph(single_matmul(2, 65, 3), [{"x": np.ones((2, 65))}])
    expected = "matmul node 2: its inner dimension is 65, more than the K_MAX = 64 one MM instruction takes"
    assert info.value.problem == expected
    assert "at most 64" in info.value.fix


def test_the_limit_follows_the_parameters():
    with pytest.raises(CompileError, match="K_MAX = 32"):
        check_limits(single_matmul(2, 33, 3), Params(K_MAX=32))


def test_softmax_rows_longer_than_sm_max_len_are_refused():
    g = Graph()
    g.softmax(g.input("x", (1, 65)))
    with pytest.raises(CompileError, match="rows of 65 values exceed the softmax unit's limit of 64"):
        check_limits(g)
    check_limits(g, Params(SM_MAX_LEN=128))
