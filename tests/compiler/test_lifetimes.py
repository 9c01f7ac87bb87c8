"""compiler/lifetimes.py: each buffer is released after its last touch, in first-touch order."""

import numpy as np

from compiler import Graph
from compiler.lifetimes import release_schedule
from compiler.placement import place


def test_schedule_by_hand():
    g = Graph()
    x = g.input("x", (2, 2))                   # 0
    w = g.weight("w", np.eye(2))               # 1
    m = g.matmul(x, w)                         # 2: touches m, x, w
    s = g.add(m, x)                            # 3: touches s, m, x
    g.output(s, "o")                           # 4: touches s
    p = place(g, g.consumers())
    buf = {n: p.loc[n][0] for n in (x, w, m, s)}
    # first touches at step 2: m, x, w (in that order); m and x last at 3, w at 2, s at 4
    assert release_schedule(g, p) == {2: [buf[w]], 3: [buf[m], buf[x]], 4: [buf[s]]}


def test_views_touch_their_buffer():
    g = Graph()
    a, b = g.input("a", (1, 2)), g.input("b", (1, 2))
    c = g.concat_rows(a, b)                    # 2
    g.output(g.slice_rows(c, 1, 1), "o")       # 3, 4
    p = place(g, g.consumers())
    assert release_schedule(g, p) == {4: [p.loc[c][0]]}
