"""Convolution, max pool and reshape over images stored rows = pixels, columns = channels (issue 25;
docs/guide/conv.md): the float meaning against a direct loop written here, the reference machine
equal to the integer interpreter (every output value) over padding, strides, K past K_MAX, a
bias or none, a fused relu, pools of several windows, a flatten into a linear layer, on the
4 x 4 and the 8 x 8 machine; refusals named."""

from __future__ import annotations

import re

import numpy as np
import pytest

from compiler import CompileError, compile_graph
from compiler.evaluate import evaluate
from compiler.interpret import interpret
from compiler.ir import Graph
from sim.machines import PRESETS
from sim.spec import DEFAULT


def direct_conv(x: np.ndarray, w: np.ndarray, H: int, W: int, k: tuple[int, int], s: tuple[int, int],
                p: tuple[int, int]) -> np.ndarray:
    """x (B*H*W, C), w (kh*kw*C, O) with row (ky*kw + kx)*C + c: a loop over every output pixel."""
    C, O = x.shape[1], w.shape[1]
    B = x.shape[0] // (H * W)
    img = x.reshape(B, H, W, C)
    Ho, Wo = (H + 2 * p[0] - k[0]) // s[0] + 1, (W + 2 * p[1] - k[1]) // s[1] + 1
    out = np.zeros((B, Ho, Wo, O))
    for b in range(B):
        for oy in range(Ho):
            for ox in range(Wo):
                for ky in range(k[0]):
                    for kx in range(k[1]):
                        y, x_ = oy * s[0] + ky - p[0], ox * s[1] + kx - p[1]
                        if 0 <= y < H and 0 <= x_ < W:
                            rows = w[(ky * k[1] + kx) * C:(ky * k[1] + kx + 1) * C]
                            out[b, oy, ox] += img[b, y, x_] @ rows
    return out.reshape(B * Ho * Wo, O)


def test_the_float_meaning_is_the_direct_loop():
    rng = np.random.default_rng(1)
    x, w = rng.normal(size=(2 * 5 * 6, 3)), rng.normal(size=(2 * 3 * 3, 4))
    g = Graph()
    xi = g.input("x", x.shape)
    c = g.conv2d(xi, g.weight("w", w), (5, 6), (2, 3), stride=(2, 1), padding=(1, 1), scale=0.5,
                 bias=[1, 2, 3, 4])
    g.output(c, "y")
    got = evaluate(g, {"x": x})[c]
    want = 0.5 * direct_conv(x, w, 5, 6, (2, 3), (2, 1), (1, 1)) + np.array([1, 2, 3, 4])
    assert got.shape == (2 * 3 * 6, 4)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_max_pool_by_hand():
    g = Graph()
    x = g.input("x", (16, 1))
    g.output(g.maxpool2d(x, (4, 4), 2), "y")
    values = np.arange(16.0).reshape(16, 1)
    assert evaluate(g, {"x": values})[1].ravel().tolist() == [5, 7, 13, 15]


def cnn(rng, B: int, H: int, W: int, C: int, *, k=3, s=1, p=1, O=8, bias=True, relu=True, pool=2, O2=12,
        k2=3, s2=2, p2=1) -> Graph:
    """conv (relu) -> max pool -> conv -> flatten -> linear."""
    g = Graph()
    x = g.input("x", (B * H * W, C))
    w1 = g.weight("w1", rng.normal(size=(k * k * C, O)) / np.sqrt(k * k * C))
    h = g.conv2d(x, w1, (H, W), k, s, p, bias=rng.normal(size=O) if bias else None)
    Ho, Wo = (H + 2 * p - k) // s + 1, (W + 2 * p - k) // s + 1
    if relu:
        h = g.relu(h)
    if pool:
        h = g.maxpool2d(h, (Ho, Wo), pool)
        Ho, Wo = (Ho - pool) // pool + 1, (Wo - pool) // pool + 1
    w2 = g.weight("w2", rng.normal(size=(k2 * k2 * O, O2)) / np.sqrt(k2 * k2 * O))
    h = g.conv2d(h, w2, (Ho, Wo), k2, s2, p2)
    Ho, Wo = (Ho + 2 * p2 - k2) // s2 + 1, (Wo + 2 * p2 - k2) // s2 + 1
    flat = g.reshape(h, B)
    y = g.matmul(flat, g.weight("w3", rng.normal(size=(Ho * Wo * O2, 10))), bias=rng.normal(size=10))
    g.output(y, "y")
    return g


CASES = {
    "3x3 pad 1, pool 2, 3x3 /2": {},
    "no bias, no relu, 5x5 pad 2": {"k": 5, "p": 2, "bias": False, "relu": False},
    "stride 2, no padding, pool 3 (K > K_MAX next: 9 x 8 = 72)": {"s": 2, "p": 0, "pool": 0, "k2": 3, "s2": 1,
                                                                  "p2": 1},
    "1x1 convolutions": {"k": 1, "p": 0, "k2": 1, "p2": 0, "s2": 1},
    "a 3x3 max pool of stride 3": {"pool": 3, "O": 4, "k2": 2, "p2": 0, "s2": 1},
}


@pytest.mark.parametrize("machine", ["default", "t8"])
@pytest.mark.parametrize("case", list(CASES))
def test_the_machine_equals_the_interpreter(case, machine):
    rng = np.random.default_rng(sorted(CASES).index(case))
    g = cnn(rng, 2, 9, 7, 3, **CASES[case])
    params = DEFAULT if machine == "default" else PRESETS["t8"]
    calibration = [{"x": rng.normal(size=(2 * 9 * 7, 3))} for _ in range(4)]
    program = compile_graph(g, calibration, params=params)
    test = {"x": rng.normal(size=(2 * 9 * 7, 3))}
    outcome = program.run(test, warn=False)
    want = interpret(program, test)[program.graph.outputs()[0].id]
    assert (outcome.outputs["y"].ints == want).all()
    floats = evaluate(g, test)[g.outputs()[0].id]
    error = np.linalg.norm(outcome.outputs["y"].floats - floats) / np.linalg.norm(floats)
    assert error < 0.1, error


def test_a_convolution_runs_as_implicit_gemm():
    """The 3 x 3 convolution's MMs read the padded image with lda = s*C and K = k_w*C: no copy."""
    rng = np.random.default_rng(3)
    g = cnn(rng, 1, 8, 8, 4, O=4, pool=0)
    program = compile_graph(g, [{"x": rng.normal(size=(64, 4))}], params=DEFAULT)
    first = next(ins for ins in program.code if ins.op == "MM")
    assert (first.K, first.lda, first.ldb, first.ldc, first.M, first.N) == (12, 4, 4, 4, 4, 4)
    rq = [ins for ins in program.code if ins.op == "RQ"]
    assert rq[0].len == 64 * 4


REFUSED = [
    (lambda g, x, w: g.conv2d(x, w, (4, 4), 3, padding=2), "padding (2, 2) is more than half the kernel"),
    (lambda g, x, w: g.conv2d(x, w, (5, 4), 3), "a tensor (32, 2) is not whole images of 5 x 4 pixels"),
    (lambda g, x, w: g.conv2d(x, w, (4, 4), 2), "weights (k_h*k_w*C, C_out) should be (8, 3)"),
    (lambda g, x, w: g.maxpool2d(x, (4, 4), 5), "the kernel (5, 5) is larger than the padded image (4, 4)"),
    (lambda g, x, w: g.conv2d(x, w, (4, 4), 3, stride=0), "image, kernel and stride must be at least 1"),
    (lambda g, x, w: g.reshape(x, 5), "count=5 rows do not divide its 64 values"),
    (lambda g, x, w: g.conv2d(x, w, (4, 4), "3"), "kernel='3' is not an int or a pair of ints"),
]


@pytest.mark.parametrize("build, message", REFUSED, ids=[m for _, m in REFUSED])
def test_a_bad_window_is_refused_by_name(build, message):
    g = Graph()
    x = g.input("x", (32, 2))
    w = g.weight("w", np.ones((18, 3)))
    with pytest.raises(CompileError, match=re.escape(message)):
        build(g, x, w)


def direct_depthwise(x: np.ndarray, w: np.ndarray, H: int, W: int, k: tuple[int, int], s: tuple[int, int],
                     p: tuple[int, int]) -> np.ndarray:
    """x (B*H*W, C), w (kh*kw, C): each channel convolved with its own column, a loop."""
    C = x.shape[1]
    B = x.shape[0] // (H * W)
    img = x.reshape(B, H, W, C)
    Ho, Wo = (H + 2 * p[0] - k[0]) // s[0] + 1, (W + 2 * p[1] - k[1]) // s[1] + 1
    out = np.zeros((B, Ho, Wo, C))
    for b, oy, ox, ky, kx in np.ndindex(B, Ho, Wo, *k):
        y, x_ = oy * s[0] + ky - p[0], ox * s[1] + kx - p[1]
        if 0 <= y < H and 0 <= x_ < W:
            out[b, oy, ox] += img[b, y, x_] * w[ky * k[1] + kx]
    return out.reshape(B * Ho * Wo, C)


def test_the_depthwise_float_meaning_is_the_direct_loop():
    rng = np.random.default_rng(11)
    x, w = rng.normal(size=(2 * 5 * 6, 3)), rng.normal(size=(2 * 3, 3))
    g = Graph()
    c = g.conv2d(g.input("x", x.shape), g.weight("w", w), (5, 6), (2, 3), stride=(2, 1), padding=(1, 1),
                 depthwise=True, scale=0.5)
    g.output(c, "y")
    want = 0.5 * direct_depthwise(x, w, 5, 6, (2, 3), (2, 1), (1, 1))
    np.testing.assert_allclose(evaluate(g, {"x": x})[c], want, rtol=1e-12, atol=1e-12)


DEPTHWISE = {   # (H, W, C, kernel, stride, padding, per channel, shared taps)
    "3x3 pad 1, per tensor": (6, 5, 6, 3, 1, 1, False, False),
    "3x3 /2 pad 1, 10 channels (a narrow last group), per channel": (9, 7, 10, 3, 2, 1, True, False),
    "3x2 stride (1, 2), no padding, per channel": (5, 5, 3, (3, 2), (1, 2), 0, True, False),
    "average pool 2x2 /2 (shared taps)": (6, 4, 9, 2, 2, 0, False, True),
    "global average pool 5x4 (shared taps, one run of 20)": (5, 4, 9, (5, 4), 1, 0, False, True),
}


@pytest.mark.parametrize("machine", ["default", "t8"])
@pytest.mark.parametrize("case", list(DEPTHWISE))
def test_depthwise_runs_as_the_interpreter_says(case, machine):
    H, W, C, k, s, p, pc, shared = DEPTHWISE[case]
    rng = np.random.default_rng(sorted(DEPTHWISE).index(case))
    kh, kw = (k, k) if isinstance(k, int) else k
    g = Graph()
    x = g.input("x", (2 * H * W, C))
    w = np.ones((kh * kw, 1)) if shared else rng.normal(size=(kh * kw, C)) * np.geomspace(0.1, 3, C)
    y = g.conv2d(x, g.weight("w", w), (H, W), k, s, p, depthwise=True, shared=shared, per_channel=pc,
                 scale=1 / (kh * kw) if shared else 1.0, bias=None if shared else rng.normal(size=C))
    g.output(y if shared else g.relu(y), "y")
    program = compile_graph(g, [{"x": rng.normal(size=(2 * H * W, C))} for _ in range(4)],
                            params=DEFAULT if machine == "default" else PRESETS["t8"])
    test = {"x": rng.normal(size=(2 * H * W, C))}
    outcome = program.run(test, warn=False)
    assert (outcome.outputs["y"].ints == interpret(program, test)[program.graph.outputs()[0].id]).all()
    floats = evaluate(g, test)[g.outputs()[0].id]
    assert np.linalg.norm(outcome.outputs["y"].floats - floats) / np.linalg.norm(floats) < 0.05


def test_depthwise_mms_read_diagonal_blocks():
    """10 channels on the 4 x 4 machine: groups of 4, 4, 2; each tap's MM is K = N = n with
    B an n x n block (ldb = n) whose diagonal holds the tap's levels of those channels."""
    rng = np.random.default_rng(5)
    g = Graph()
    x = g.input("x", (36, 10))
    w = rng.normal(size=(9, 10))
    g.output(g.conv2d(x, g.weight("w", w), (6, 6), 3, padding=1, depthwise=True), "y")
    program = compile_graph(g, [{"x": rng.normal(size=(36, 10))}], params=DEFAULT)
    mms = [ins for ins in program.code if ins.op == "MM"]
    assert [(m.K, m.N, m.ldb, m.lda, m.ldc) for m in mms[:9]] == [(4, 4, 4, 10, 10)] * 9
    assert [(m.K, m.N, m.ldb) for m in mms[18:27]] == [(2, 2, 2)] * 9
    assert len(mms) == 6 * 2 * 3 * 9   # rows x tiles of 4 pixels x channel groups x taps
    region = program.ext["diagonal weights of node 2"]
    words = program.ext_image({"x": np.zeros((36, 10))})[region.addr:region.end].astype(np.int64)
    words = np.where(words >= 2**31, words - 2**32, words)
    levels = np.clip(np.round(w / program.scales[1]), -127, 127)
    assert region.words == 9 * (16 + 16 + 4)
    block = words[9 * 8 * 4 + 4 * 4:9 * 8 * 4 + 5 * 4].reshape(2, 2)   # group 2 (channels 8, 9), tap 4
    assert (block == np.diag(levels[4, 8:10])).all()


def test_shared_taps_take_one_column_per_tensor():
    g = Graph()
    x = g.input("x", (16, 2))
    with pytest.raises(CompileError, match=re.escape("shared tap weights (k_h*k_w, 1) should be (4, 1)")):
        g.conv2d(x, g.weight("w", np.ones((4, 2))), (4, 4), 2, depthwise=True, shared=True)
    with pytest.raises(CompileError, match=re.escape("so its scale is one (per tensor)")):
        g.conv2d(x, g.weight("v", np.ones((4, 1))), (4, 4), 2, shared=True, per_channel=True)


def test_the_text_form_reads_back():
    rng = np.random.default_rng(4)
    g = cnn(rng, 1, 6, 6, 2)
    weights = {n.name: n.array for n in g.nodes if n.op == "weight"}
    assert 'window="6x6x2 k3x3 s1x1 p1x1"' in g.text()
    assert Graph.parse(g.text(), weights) == g


def per_channel_graph(rng, per_channel: bool, shared: bool = False) -> Graph:
    """One padded 3 x 3 convolution whose six output channels have weights of very different sizes."""
    g = Graph()
    x = g.input("x", (2 * 6 * 6, 3))
    w = g.weight("w", rng.normal(size=(27, 6)) * np.array([0.01, 0.1, 1, 3, 0.5, 0.02]))
    c = g.conv2d(x, w, (6, 6), 3, padding=1, bias=rng.normal(size=6) * 0.05, per_channel=per_channel)
    g.output(g.relu(c), "y")
    if shared:
        g.output(g.matmul(g.input("z", (1, 27)), w), "zw")
    return g


@pytest.mark.parametrize("machine", ["default", "t8"])
def test_per_channel_scales_run_as_the_interpreter_says(machine):
    rng = np.random.default_rng(7)
    g = per_channel_graph(rng, True)
    params = DEFAULT if machine == "default" else PRESETS["t8"]
    program = compile_graph(g, [{"x": rng.normal(size=(72, 3))} for _ in range(4)], params=params)
    rq = [ins for ins in program.code if ins.op == "RQ"]
    # 6 channels repeated to 18 entries, at least the widest LANES (16)
    assert {(ins.pc, ins.m, ins.s, ins.C) for ins in rq} == {(1, 0, 0, 18)}
    levels = program.quantized_weight(g.nodes[1].id)
    assert (np.abs(levels).max(axis=0) == 127).all()     # every column at its own scale
    test = {"x": rng.normal(size=(72, 3))}
    want = interpret(program, test)[program.graph.outputs()[0].id]
    assert (program.run(test, warn=False).outputs["y"].ints == want).all()
    assert 'per_channel=True' in g.text() and Graph.parse(g.text(), {"w": g.nodes[1].array}) == g


def test_per_channel_scales_keep_the_small_channels():
    """The channel of weights about 0.01: per tensor (the scale of the largest channel, weights
    about 3) every one of its weights rounds to level 0, the channel lost; per channel they take
    the full -127..127."""
    largest = {}
    for per_channel in (False, True):
        rng = np.random.default_rng(8)
        g = per_channel_graph(rng, per_channel)
        program = compile_graph(g, [{"x": rng.normal(size=(72, 3))} for _ in range(4)], params=DEFAULT)
        largest[per_channel] = int(np.abs(program.quantized_weight(1)[:, 0]).max())
    assert largest == {False: 0, True: 127}


def test_a_per_channel_weight_read_by_another_node_is_refused():
    rng = np.random.default_rng(9)
    g = per_channel_graph(rng, True, shared=True)
    with pytest.raises(CompileError, match=re.escape("quantizes node 1 (weight 'w') per output channel")):
        compile_graph(g, [{"x": rng.normal(size=(72, 3)), "z": rng.normal(size=(1, 27))}], params=DEFAULT)
