"""Examples are tests: each script in examples/ runs (quickly) and prints what it should.

Add an entry per example: (script, arguments for a quick run, texts the output must hold).
"""

import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

RUNS = [
    ("attention_step.py", [], [
        re.compile(r"node 4 +%4 matmul +12345120 +32"),
        "high-water mark: 70 words with reuse, 132 without",
        re.compile(r"machine == integer interpreter, every output value +True"),
        re.compile(r"error of the outputs against float, relative +2\.36%"),
        re.compile(r"real-number check, node by node +no problems"),
        "buffer of %3 (48 words at 0) holds %1 input rows 0-4; %2 input rows 5-5",
        re.compile(r"14 +163 +164 +1 +control +HALT"),
    ]),
    ("own_graph.py", ["--widths", "8", "64"], [
        "40 instructions, scratchpad high-water mark 1728 words",
        "relative error 2.92%",
        "width 64: too big for the scratchpad whole, matmul node 5: 1 x 2 blocks of 4 x 32 (A whole",
        "message: node 2 (matmul): its bias (up to 1e+09) is more than",
        "message: scratchpad is full at node 2 (matmul)",
        "fix: ",
    ]),
    ("own_graph.py", ["--widths", "64", "--no-stream", "--no-refusals"], [
        "hidden width sweep (the scratchpad and the external memory set the limits)",
        "64  refused: scratchpad is full: cannot place a buffer of 4096 words",
    ]),
    # another machine (sim.machines): 8 x 8 tiles, fewer cycles (docs/sweep.md has the table)
    ("own_graph.py", ["--widths", "16", "--no-refusals", "--param", "t8"], [
        "31 instructions, scratchpad high-water mark 1728 words, 820 cycles on the reference machine",
        "     16     27           448 /      992     456",
    ]),
    # convolutions by hand (issue 25): every layer's output checked against numpy inside, the
    # cycles exact (the spec's latencies; docs/guide/conv.md quotes the full run)
    ("conv_by_hand.py", ["--quick"], [
        re.compile(r"conv 3x3, 3->16 +442,368 +3,072 +3,140 +68,002 +40\.7%"),
        re.compile(r"conv 10x4 /2, 1->64, im2col +320,000 +800 +2,103 +47,569 +42\.0%"),
        "max pool 2x2 /2 on 8 x 8 x 16 (VADD max = 1): 22 instructions, 559 cycles (vpu 292)",
    ]),
    ("attention_step.py", ["--param", "T=8", "--param", "LANES=8", "--plots", ""], [
        "== pass 4: tiling into 8 x 8 output tiles",
        re.compile(r"%9 +\(1 x 6\) x \(6 x 8\) +1 +rows 0-0 cols 0-7 @9"),
        re.compile(r"machine == integer interpreter, every output value +True"),
    ]),
]


SLOW_RUNS = {
    ("own_graph.py", ("--widths", "64", "--no-stream", "--no-refusals")),
    ("own_graph.py", ("--widths", "16", "--no-refusals", "--param", "t8")),
    ("digits.py", ("--quick",)),
    ("digits_mlp.py", ("--quick", "--batch", "4", "--act", "gelu")),
    ("big_mlp.py", ("--quick",)),
    ("sweep.py", ("--machines", "t2", "t8", "--epochs", "1")),
    ("attention_block.py", ("--seq", "64", "--samples", "2", "--tests", "1")),
    ("big_mlp.py", ("--widths", "64", "64", "64", "64", "64", "64", "64", "64", "64", "10", "--quick")),
}
"""Runs that repeat what a faster run or another test checks (a second machine, a second
activation, the streamed MLP the battery also checks): `make test-all` runs them."""


def cases(runs: list) -> list:
    """The runs as pytest parameters, those of SLOW_RUNS marked slow."""
    return [pytest.param(*run, id=" ".join([run[0], *run[1]]),
                         marks=[pytest.mark.slow] if (run[0], tuple(run[1])) in SLOW_RUNS else [])
            for run in runs]


TORCH_RUNS = [
    ("digits.py", ["--quick"], [
        "machine == integer interpreter on the first batch, both outputs: True",
        "MXU utilisation: 18944 multiply-adds",
        "RTL bit-exact on 0 images",
        "REFUSED softmax: torch.softmax: normalises over dim=0",
    ]),
    ("digits_mlp.py", ["--quick", "--batch", "4"], [
        "(relu, biases)",
        "node 5: 1 x 7 blocks of 4 x 20 (A whole, B streams in panels in pieces of 128 rows, 14 loads, "
        "sums in the output's rows)",
        "machine == integer interpreter on the first batch, both outputs: True",
        "RTL bit-exact on 0 images",
    ]),
    # issue 25: the CNN, from PyTorch unchanged (BatchNorm folded, max pools, flatten, linear)
    ("digits_cnn.py", ["--quick"], [
        '%2 = conv2d %0, %1 window="8x8x1 k3x3 s1x1 p1x1" bias=[...] per_channel=True -> (256, 8)',
        '%9 = reshape %8 count=4 -> (4, 64)',
        "machine == integer interpreter on the first batch, both outputs: True",
        "cycles per run: 15,753 (cycles=15753 dma=1554 mxu=11742 vpu=2448 sfu=0)",
        "per-tensor weight scales instead: GA-2 accuracy",
        "machine == integer interpreter on the first batch: True",
        "RTL bit-exact on 0 images",
    ]),
    ("digits_mlp.py", ["--quick", "--batch", "4", "--act", "gelu"], [
        "(gelu, biases)",
        "machine == integer interpreter on the first batch, both outputs: True",
    ]),
    ("attention_block.py", ["--tests", "4"], [
        "%7  = matmul  %2, %4    -> (8, 8)    ^T x0.2500",
        "machine == integer interpreter, every output value of every run: True",
    ]),
    ("big_mlp.py", ["--quick"], [
        "6,794 weight words, scratchpad 4,096 words",
        "layer '0'     16 x 64 by 64 x 48: 1 x 2 blocks of 16 x 24 (A whole, B streams in panels, 2 loads)",
        "4,736 cycles, 4,096 words loaded, footprint 4,096 words",
        "layer '3'     16 x 48 by 48 x 64: 1 x 2 blocks of 16 x 32 (A whole, B streams in panels, 2 loads, "
        "sums in the output's rows)",
        "cycles 10,655 on the reference machine",
        "DMA: 8,128 words moved, a bound of 2,032 cycles",
        "MXU: 6,912 steps (K summed over 124 MMs)",
        "(the last batch: 2 images, padded)",
        "machine == integer interpreter on every batch: True",
        "the seed's compiler (every weight whole) refuses it",
        "streaming costs 4 cycles (0.04%)",
    ]),
    # MLPerf Tiny's DS-CNN from PyTorch (issue 25): equal to the interpreter, within 10% of PyTorch
    ("mlperf_tiny.py", ["--model", "ds_cnn", "--param", "t8"], [
        "ds_cnn on T=8 LANES=8 SPAD_WORDS=4096 EXT_WORDS=65536 IMEM_WORDS=4096: 11,330 instructions in 3 "
        "launches",
        "equal to the integer interpreter: True",
        "301,591 cycles per image, 2,664,768 multiply-adds, MXU utilisation 13.8%; 4.41 ms at 68.3 MHz",
        "conv2d 25x5x64 k3x3 s1x1 p1x1 dw             72,000  1,948    44,188     2.5%",
        "mlperf_tiny: PASS",
    ]),
    ("sweep.py", ["--machines", "t2", "t8", "--epochs", "1"], [   # cycles do not depend on the weights
        "| t2 | 2 | 4 | 7295 | 24.4% | 201 | 775 | 1407 | 3151 | 5535 | 790.6 |",
        "| t8 | 8 | 8 | 3436 | 3.2% | 119 | 322 | 456 | 820 | 1312 | 119.0 |",
    ]),
]
"""Examples that need the optional torch extra (torch and scikit-learn)."""

DIGITS_MLP_LAST_LINE = (r"digits_mlp (\w+): float (\d+\.\d)%, GA-2 (\d+\.\d)%, agree \d+\.\d%, "
                        r"RTL bit-exact on \d+ images")
DIGITS_CNN_LAST_LINE = (r"digits_cnn: float (\d+\.\d)%, GA-2 (\d+\.\d)%, agree \d+\.\d%, "
                        r"RTL bit-exact on \d+ images")
DIGITS_LAST_LINE = r"digits: float (\d+\.\d)%, GA-2 (\d+\.\d)%, agree \d+\.\d%, RTL bit-exact on \d+ images"


PLOTS = {"attention_step.py": ["memory", "roofline", "scales", "tiling", "timeline"],
         "conv_by_hand.py": ["layers"],
         "own_graph.py": ["memory", "roofline", "scales", "sweep", "tiling", "timeline"]}
"""The plots each example saves in its --plots folder."""


@pytest.mark.parametrize("script, args, expected", cases(RUNS))
def test_example_runs(script, args, expected, tmp_path):
    done = subprocess.run([sys.executable, str(EXAMPLES / script), *args, "--plots", str(tmp_path)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    for text in expected:
        assert text.search(done.stdout) if isinstance(text, re.Pattern) else text in done.stdout, text
    assert sorted(p.stem for p in tmp_path.glob("*.png")) == PLOTS[script]
    if script == "conv_by_hand.py" and "--param" not in args:  # the page quotes these rows as printed
        page = (EXAMPLES.parent / "docs" / "guide" / "conv.md").read_text()
        rows = [line for line in done.stdout.splitlines() if line.startswith("  conv ")]
        assert len(rows) == 4 and all(row in page for row in rows), rows


@pytest.mark.torch
@pytest.mark.parametrize("script, args, expected", cases(TORCH_RUNS))
def test_torch_example_runs(script, args, expected):
    pytest.importorskip("torch")
    pytest.importorskip("sklearn")
    done = subprocess.run([sys.executable, str(EXAMPLES / script), *args], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    for text in expected:
        assert text in done.stdout, text
    if script == "digits.py":  # the last line's format, and GA-2 within 1.5 points of float
        last = done.stdout.strip().splitlines()[-1]
        match = re.fullmatch(DIGITS_LAST_LINE, last)
        assert match, last
        assert abs(float(match[1]) - float(match[2])) <= 1.5, last
    if script == "digits_cnn.py":  # the last line's format (accuracies: the slow RTL test, 40 epochs)
        assert re.fullmatch(DIGITS_CNN_LAST_LINE, done.stdout.strip().splitlines()[-1]), done.stdout
    if script == "digits_mlp.py":  # issue 14: within 1 point of float (1.5 for the gelu variant)
        last = done.stdout.strip().splitlines()[-1]
        match = re.fullmatch(DIGITS_MLP_LAST_LINE, last)
        assert match, last
        assert abs(float(match[2]) - float(match[3])) <= (1.0 if match[1] == "relu" else 1.5), last


@pytest.mark.torch
@pytest.mark.rtl
@pytest.mark.slow
@pytest.mark.parametrize("machine", [[], ["--param", "t8"]], ids=["default", "t8"])
def test_digits_on_the_rtl(machine):
    """The digits MLP bit-exact on the RTL of the machine it was compiled for: at T = 8 the
    program (8 x 8 tiles, its own cycles) runs on build/machines/T8-LANES8/ga2_simtop.v."""
    pytest.importorskip("torch")
    pytest.importorskip("sklearn")
    done = subprocess.run([sys.executable, str(EXAMPLES / "digits.py"), "--quick", "--rtl", "8", *machine],
                          capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr
    t = 8 if machine else 4
    utilisation = re.search(rf"MXU utilisation: \d+ multiply-adds / \({t} x {t} x (\d+) cycles\)",
                            done.stdout)
    assert utilisation, done.stdout
    for simulator in ("icarus", "verilator"):
        assert f"{simulator:9s}: 1 run bit-exact (every memory word, the five counters, the stop; " \
               f"{utilisation[1]} cycles each)" in done.stdout, simulator
    assert done.stdout.strip().endswith("RTL bit-exact on 8 images")


@pytest.mark.torch
@pytest.mark.rtl
@pytest.mark.slow
@pytest.mark.parametrize("act", ["relu", "gelu"])
def test_digits_mlp_on_the_rtl(act):
    """Issue 14: the 64-256-128-10 MLP with biases, 16 test images (4 runs of 4) on Icarus and
    Verilator, bit-exact (memories, counters, stop); the whole test set on the reference."""
    pytest.importorskip("torch")
    pytest.importorskip("sklearn")
    done = subprocess.run([sys.executable, str(EXAMPLES / "digits_mlp.py"), "--batch", "4", "--rtl", "16",
                           "--act", act], capture_output=True, text=True, timeout=3000)
    assert done.returncode == 0, done.stderr
    for simulator in ("icarus", "verilator"):
        assert f"{simulator:9s}: 4 runs bit-exact" in done.stdout, simulator
    last = done.stdout.strip().splitlines()[-1]
    match = re.fullmatch(DIGITS_MLP_LAST_LINE, last)
    assert match and last.endswith("RTL bit-exact on 16 images"), last
    assert abs(float(match[2]) - float(match[3])) <= (1.0 if act == "relu" else 1.5), last


@pytest.mark.rtl
@pytest.mark.slow
def test_conv_by_hand_on_the_rtl():
    """Issue 25: the hand-written convolutions (padding, stride, K past K_MAX, depthwise, im2col,
    1 x 1 strided; per-channel RQ) and the max pool (VADD max) bit-exact on Icarus and Verilator
    (memories, counters, stop), each first checked against numpy on the reference machine."""
    done = subprocess.run([sys.executable, str(EXAMPLES / "conv_by_hand.py"), "--quick", "--plots", "",
                           "--rtl"], capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr
    assert "RTL, 7 programs (conv 3x3, 4->8 on 8 x 8, " in done.stdout
    for simulator in ("icarus", "verilator"):
        assert re.search(rf"{simulator} +PASS: 7 runs bit-exact .*16,261 in all", done.stdout), done.stdout


@pytest.mark.torch
@pytest.mark.rtl
@pytest.mark.slow
def test_resnet8_on_verilator():
    """Issue 25: ResNet-8 from PyTorch on the T = 8 machine of the default sizes (SPAD 4,096,
    EXT 65,536, IMEM 4,096 words), one image: its two launches bit-exact on Verilator (every
    memory word, the counters, the stop; the scratchpad carried from one launch to the next).
    About 3.5 minutes, 2.5 of them building T = 8's Verilator model: make test-all, not CI."""
    pytest.importorskip("torch")
    done = subprocess.run([sys.executable, str(EXAMPLES / "mlperf_tiny.py"), "--model", "resnet8", "--param",
                           "t8", "--rtl", "verilator"], capture_output=True, text=True, timeout=3000)
    assert done.returncode == 0, done.stderr
    assert "354,667 cycles per image" in done.stdout
    assert re.search(r"verilator: 2 runs bit-exact .*123977, 230690 cycles each", done.stdout), done.stdout
    assert done.stdout.strip().endswith("mlperf_tiny: PASS")


@pytest.mark.torch
@pytest.mark.rtl
@pytest.mark.slow
def test_digits_cnn_on_the_rtl():
    """Issue 25: the digits CNN trained by the command (40 epochs), 16 test images (4 runs of 4)
    bit-exact on Icarus and Verilator; >= 97% in float and GA-2 within 0.5 points of it on the
    450 test images (training is this CPU's floating point: twelve runs of the recipe gave 98.4%
    to 99.1% and GA-2 within 0.3 points, docs/guide/conv.md; a slow test, a CI step)."""
    pytest.importorskip("torch")
    pytest.importorskip("sklearn")
    done = subprocess.run([sys.executable, str(EXAMPLES / "digits_cnn.py"), "--rtl", "16"],
                          capture_output=True, text=True, timeout=3000)
    assert done.returncode == 0, done.stderr
    for simulator in ("icarus", "verilator"):
        assert f"{simulator:9s}: 4 runs bit-exact" in done.stdout, simulator
    last = done.stdout.strip().splitlines()[-1]
    match = re.fullmatch(DIGITS_CNN_LAST_LINE, last)
    assert match and last.endswith("RTL bit-exact on 16 images"), last
    assert float(match[1]) >= 97.0 and abs(float(match[1]) - float(match[2])) <= 0.5, last


@pytest.mark.torch
@pytest.mark.slow
def test_a_200k_parameter_digits_mlp_from_pytorch():
    """Issue 14: 64-512-320-128-10 with biases and relu (239,818 parameters) from PyTorch on the
    default machine: its weights packed four to an external word (they do not fit one a word),
    the machine equal to the integer interpreter, GA-2's classes those of float on nearly
    every image (64 test images, 6 epochs)."""
    pytest.importorskip("torch")
    pytest.importorskip("sklearn")
    done = subprocess.run([sys.executable, str(EXAMPLES / "digits_mlp.py"), "--quick", "--batch", "4",
                           "--widths", "64", "512", "320", "128", "10"], capture_output=True, text=True,
                          timeout=1200)
    assert done.returncode == 0, done.stderr
    assert "239,818 parameters" in done.stdout
    assert "weights packed four int8 to a word (LD fmt=1): net.0.weight.T, net.2.weight.T, net.4.weight.T, " \
           "net.6.weight.T" in done.stdout
    assert "machine == integer interpreter on the first batch, both outputs: True" in done.stdout
    match = re.fullmatch(DIGITS_MLP_LAST_LINE, done.stdout.strip().splitlines()[-1])
    assert match and float(re.search(r"agree (\d+\.\d)%", match[0])[1]) >= 95.0, match


def too_small(script: str, flag: str, value: int, low: int) -> str:
    return f"{script}: error: argument {flag}: {value} is too small: give a whole number of at least {low}"


BAD_FLAGS = [
    ("attention_block.py", ["--tests", "0"], too_small("attention_block.py", "--tests", 0, 1)),
    ("attention_block.py", ["--seq", "-2"], too_small("attention_block.py", "--seq", -2, 1)),
    ("attention_block.py", ["--seq", "0"], too_small("attention_block.py", "--seq", 0, 1)),
    ("attention_block.py", ["--dim", "0"], too_small("attention_block.py", "--dim", 0, 1)),
    ("attention_block.py", ["--samples", "0"], too_small("attention_block.py", "--samples", 0, 1)),
    ("attention_block.py", ["--seed", "-1"], too_small("attention_block.py", "--seed", -1, 0)),
    ("attention_block.py", ["--seq", "8.5"],
     "attention_block.py: error: argument --seq: '8.5' is not a whole number"),
    ("attention_step.py", ["--dim", "0"], too_small("attention_step.py", "--dim", 0, 1)),
    ("attention_step.py", ["--cache", "0"], too_small("attention_step.py", "--cache", 0, 1)),
    ("attention_step.py", ["--cache", "-1"], too_small("attention_step.py", "--cache", -1, 1)),
    ("attention_step.py", ["--samples", "0"], too_small("attention_step.py", "--samples", 0, 1)),
    ("own_graph.py", ["--widths", "8", "0"], too_small("own_graph.py", "--widths", 0, 1)),
    ("own_graph.py", ["--widths", "-4"], too_small("own_graph.py", "--widths", -4, 1)),
    ("own_graph.py", ["--widths"], "own_graph.py: error: argument --widths: expected at least one argument"),
    ("digits.py", ["--rtl", "-1"], too_small("digits.py", "--rtl", -1, 0)),
    ("digits.py", ["--epochs", "0"], too_small("digits.py", "--epochs", 0, 1)),
    ("digits.py", ["--epochs", "-3"], too_small("digits.py", "--epochs", -3, 1)),
    ("big_mlp.py", ["--batch", "0"], too_small("big_mlp.py", "--batch", 0, 1)),
    ("big_mlp.py", ["--widths", "32", "10"],
     "big_mlp.py: error: --widths: the first is 64 (pixels), the last 10 (classes)"),
    ("big_mlp.py", ["--spad", "3000"], "big_mlp.py: error: Params.SPAD_WORDS = 3000: must be a power of two "
                                       "from LANES = 4 to 65536 (address fields are 16 bits)"),
    ("own_graph.py", ["--param", "T=0"],
     "own_graph.py: error: Params.T = 0: must be a positive int (machine: T=0)"),
    ("digits.py", ["--param", "t9"],
     "digits.py: error: argument --param: machine item 't9' is neither NAME=VALUE with NAME one of T, K_MAX, "
     "SPAD_WORDS, EXT_WORDS, IMEM_WORDS, SM_MAX_LEN, LANES, OVERLAP nor a preset (t2, t4, t8, t16, default)"),
    ("sweep.py", ["--machines", "T=8"],
     "sweep.py: error: Params.LANES = 4: must be at least T = 8 (the MXU moves a row of B and of the output "
     "in one access): LANES in 8, 16 (machine: T=8)"),
    ("sweep.py", ["--write"], "sweep.py: error: --write records synthesis figures: give --synth or "
                              "--synth-reports too"),
    ("sweep.py", ["--synth", "--synth-reports"], "sweep.py: error: --synth runs synthesis, --synth-reports "
                                                 "reads its last reports: give one"),
    ("transformer_ops.py", ["--token", "16"],
     "transformer_ops.py: error: --token must be 0..15 and --position 0..7"),
    ("transformer_block.py", ["--tokens", "17"], "transformer_block.py: error: --tokens must be 1..16"),
    ("char_gpt.py", ["--tokens", "0"], too_small("char_gpt.py", "--tokens", 0, 1)),
    ("char_gpt.py", ["--prompt", ""], "char_gpt.py: error: --prompt: give at least one character"),
]
"""A flag out of range: argparse's usage and one line naming the flag, status 2, nothing run."""


def ids(runs: list) -> list[str]:
    return [" ".join([script, *args]) for script, args, _ in runs]


@pytest.mark.parametrize("script, args, expected", BAD_FLAGS, ids=ids(BAD_FLAGS))
def test_a_bad_flag_is_refused_by_name(script, args, expected):
    done = subprocess.run([sys.executable, str(EXAMPLES / script), *args], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("usage: ") and done.stderr.splitlines()[-1] == expected, done.stderr


REFUSED_RUNS = [
    ("attention_step.py", ["--cache", "100"], ["error: softmax node 5: rows of 101 values"]),
]
"""A size the compiler refuses: the refusal's message on stderr (the first lines of it, as it
starts), status 2, no traceback."""

TORCH_REFUSED_RUNS = [
    ("attention_block.py", ["--seq", "65"], [
        "error: AttentionBlock: 1 node cannot run on GA-2; nothing was compiled",
        "REFUSED softmax: torch.nn.functional.softmax: its rows hold 65 values, more than the softmax unit's "
        "64 (SM_MAX_LEN)"]),
    ("attention_block.py", ["--seq", "64", "--samples", "2", "--tests", "1"], ["error: scratchpad is full"]),
    # packed four to a word, 64 x 64 weights take 1,024 of the 8,192 words: the input's 1,024 and
    # seven of them fill it, the eighth (module '21') is refused
    ("big_mlp.py", ["--widths", "64", "64", "64", "64", "64", "64", "64", "64", "64", "10", "--quick"], [
        "error: Sequential: 1 node cannot run on GA-2; nothing was compiled",
        "REFUSED _21: Linear module '21': Capra refuses it: external memory is full: node 22 (weight "
        "'21.weight.T') would end at word 9216"]),
    # issue 24, defect 5: this printed a traceback (the refusal chained to the one before it) first
    ("digits.py", ["--param", "SPAD_WORDS=256", "--quick", "--epochs", "1"], [
        "error: scratchpad is full at node 2 (matmul), the 8 x 64 by 64 x 32 product"]),
]


def check_refused(script: str, args: list[str], expected: list[str]) -> None:
    done = subprocess.run([sys.executable, str(EXAMPLES / script), *args], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) >= len(expected), done.stderr
    for line, start in zip(lines, expected, strict=False):
        assert line.startswith(start), done.stderr


@pytest.mark.parametrize("script, args, expected", REFUSED_RUNS, ids=ids(REFUSED_RUNS))
def test_a_refused_size_prints_the_refusal(script, args, expected):
    check_refused(script, args, expected)


@pytest.mark.torch
@pytest.mark.parametrize("script, args, expected", cases(TORCH_REFUSED_RUNS))
def test_a_refused_size_prints_the_refusal_torch(script, args, expected):
    pytest.importorskip("torch")
    check_refused(script, args, expected)


def test_own_graph_reports_a_refused_width_in_its_sweep():
    """A width above K_MAX compiles (K is cut into accumulating MMs); one whose hidden x hidden
    weight cannot fit the external memory is refused before its weights are drawn: 100,000 took
    hours drawing 10^10 of them."""
    done = subprocess.run([sys.executable, str(EXAMPLES / "own_graph.py"), "--no-refusals", "--widths",
                           "100", "100000", "--plots", ""], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert re.search(r"^ +100 +\d+ +\d+ / +\d+ +\d+ +\d+\.\d+% +agree$", done.stdout, re.M), done.stdout
    assert ("  100000  refused: hidden width 100000: its 100000 x 100000 weight alone is more than the "
            "65536 words of external memory (refused before building it)") in done.stdout, done.stdout


@pytest.mark.parametrize("script", sorted({r[0] for r in RUNS + TORCH_RUNS}))
def test_example_help(script):
    done = subprocess.run([sys.executable, str(EXAMPLES / script), "--help"], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and "usage:" in done.stdout


def test_every_slow_run_names_a_run():
    runs = {(script, tuple(args)) for script, args, _ in RUNS + TORCH_RUNS + TORCH_REFUSED_RUNS}
    assert runs >= SLOW_RUNS, SLOW_RUNS - runs


TRANSFORMER_OPS = [
    "    1  GATHER dst=16 src=100 len=64 fmt=1 idx=0 rows=16",
    "    5  LN   dst=272 src=144 len=64 bias=208 eps=0",
    "     5  LN       97 cycles  (2N + 50 = 178)",
    "     1  GATHER   24 cycles",
    "int8 result within 1 of round((z + beta) / (4/127)): True",
    "token id 16 (vocabulary 16): error 7 (row number out of the table) at instruction 1: GATHER idx=0: "
    "row number S[0] = 16 (16 as signed) is not below rows=16",
]
"""What examples/transformer_ops.py prints on the reference machine (issue 26: hand-written
assembly for GATHER and LN; its own checks against NumPy end it with status 1 if they fail)."""


def test_transformer_ops_by_hand():
    done = subprocess.run([sys.executable, str(EXAMPLES / "transformer_ops.py")], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    for text in TRANSFORMER_OPS:
        assert text in done.stdout, text
    assert re.search(r"LN against float LayerNorm: largest \|y/65536 - z\| = \d\.\d\de-0[67]", done.stdout)


@pytest.mark.rtl
@pytest.mark.slow
def test_transformer_ops_on_the_rtl():
    """The hand-written GATHER and LN programs on Icarus and Verilator: every memory word, the
    counters and the stop (BAD_INDEX at pc 1 for a token id past the vocabulary) as the
    reference's (.ci/run runs it too)."""
    done = subprocess.run([sys.executable, str(EXAMPLES / "transformer_ops.py"), "--rtl", "both"],
                          capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stdout + done.stderr
    for sim in ("icarus", "verilator"):
        assert f"{sim:<10} PASS: decode step: GATHER, LN, AMAX -> GATHER" in done.stdout
        assert f"{sim:<10} PASS: token id past the table" in done.stdout


def test_transformer_block_compiles_unchanged():
    """A pre-norm block from PyTorch (issue 26): both forms of attention, the reference machine =
    the integer interpreter, both forms the same program (same cycles)."""
    cycles = []
    for flags in ([], ["--explicit"]):
        done = subprocess.run([sys.executable, str(EXAMPLES / "transformer_block.py"), *flags],
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "reference machine = integer interpreter: True" in done.stdout
        assert "graph: add 5, input 1, layernorm 2, matmul 26, output 1, softmax 4, table 1" in done.stdout
        cycles.append(re.search(r"T = 8, (\d+) cycles, bit-exact", done.stdout).group(1))
    assert cycles[0] == cycles[1]


@pytest.mark.rtl
@pytest.mark.slow
def test_transformer_block_on_the_rtl():
    """The block on Icarus and Verilator: every memory word and counter as the reference's
    (.ci/run runs it too)."""
    done = subprocess.run([sys.executable, str(EXAMPLES / "transformer_block.py"), "--rtl", "both"],
                          capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "icarus     PASS" in done.stdout and "verilator  PASS" in done.stdout


def char_gpt(*args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(EXAMPLES / "char_gpt.py"), *args], capture_output=True,
                          text=True, timeout=timeout)


def test_char_gpt_reference_machine_equals_the_interpreter():
    """The small GPT (issue 26, its saved weights): a prefill step and three decode steps, the
    reference machine's greedy tokens the integer interpreter's."""
    done = char_gpt("--prompt", "The ", "--tokens", "4")
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"reference machine \(\d+ s\): 'The ' \+ '.{4}'", done.stdout), done.stdout
    assert "tokens identical, integer interpreter and reference machine: 4 of 4" in done.stdout


@pytest.mark.slow
def test_char_gpt_200_tokens_reference_machine_equals_the_interpreter():
    """200 tokens (the window slides: the context is 32): the reference machine's tokens are the
    integer interpreter's, every one."""
    done = char_gpt("--prompt", "The compiler ", "--tokens", "200", timeout=3600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "tokens identical, integer interpreter and reference machine: 200 of 200" in done.stdout


@pytest.mark.slow
def test_char_gpt_int8_perplexity_within_five_percent_of_float():
    """GA-2 int8 (the decode steps' logits, by the integer interpreter) against float on the 64
    held-out windows of 32 characters of docs/guide/transformer.md's table: within 5% of the float
    perplexity (issue 26; +3.2% there; +3.7% on 8 windows, +4.7% on 16)."""
    done = char_gpt("--quality", timeout=3600)
    assert done.returncode == 0, done.stdout + done.stderr
    change = float(re.search(r"GA-2 int8 [\d.]+ \(([+-][\d.]+)%\)", done.stdout).group(1))
    assert change < 5, done.stdout


@pytest.mark.rtl
@pytest.mark.slow
def test_char_gpt_on_the_rtl():
    """Two tokens generated on Verilator (each step's token fed back), equal to the reference
    machine's, every step's memories and counters too (.ci/run runs make generate)."""
    done = char_gpt("--prompt", "GA-2 ", "--tokens", "2", "--rtl", "verilator", timeout=1800)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "tokens identical to the reference machine: 2 of 2" in done.stdout
    assert "differs from the reference machine" not in done.stdout
