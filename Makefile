# gpu-lab: see README.md. Every target runs with the toolchain toolchain/decide.py picks (your
# pulumi when recent enough, else the offline build) and your backend (scripts/env.sh);
# nothing here needs PATH changes by hand.
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
PY := .venv/bin/python
VENV_STAMP := .venv/.stamp-$(shell cat requirements.txt requirements-dev.txt | sha256sum | cut -c1-12)
PYTEST := . scripts/env.sh && $(PY) -m pytest
# Parallel test workers. Every engine and end-to-end test has its own project copy, backend,
# temp dir, sim cluster directory and ports (variants/sim/ctl/ports.py), and they mostly wait on
# the engine, its plugins and the control plane, so more workers than cores pay off. A module
# whose tests share one lab in order is marked xdist_group and runs on one worker (loadgroup).
# The bounded waits the end-to-end tests assert (a gate that stops within 30 s, ...) are the
# lab's own timers and bounds, which hold under this load. TEST_JOBS=0: in process, in order.
# --no-loadscope-reorder: the workers take the tests in tests/conftest.py's order (slowest
# first), not loadgroup's default of the biggest group first.
TEST_JOBS ?= 6
XDIST := $(if $(filter 0,$(TEST_JOBS)),,-n $(TEST_JOBS) --dist loadgroup --no-loadscope-reorder)

# Never through sudo: sudo's secure_path drops your PATH (your pulumi would look missing and the
# offline toolchain would be built) and .venv/.state would become root's. The k3s lab runs only
# its root steps through `sudo -n` itself (variants/k3s/ctl.py).
ifneq ($(and $(SUDO_USER),$(filter 0,$(shell id -u))),)
$(error gpu-lab: run make as $(SUDO_USER), not through sudo (sudo drops your PATH and would make .venv/.state root's); the k3s lab asks `sudo -n` for its root steps. Root-owned files from an earlier sudo run: sudo chown -R $(SUDO_USER): .venv .state stacks)
endif

.PHONY: help lab verify debug-bundle destroy repair preview card toolchain toolchain-tests venv test test-unit test-engine test-e2e lint bench clean-state

help:
	@echo "make lab        build the lab (GPU lab on a GPU host, simulated lab elsewhere)"
	@echo "make verify     re-run the gate, the smoke test and the compute check now; rewrite the card"
	@echo "make debug-bundle  one tar.gz under .state/ with the lab's state and logs, secrets removed"
	@echo "make destroy    tear the lab down (zero residue); FORGET=1: drop what an unreachable cluster holds from the state"
	@echo "make repair     repair what an interrupted run left (asks first; YES=1 does not ask)"
	@echo "make preview    pulumi preview of the lab's stack, with the checklist policy pack"
	@echo "make card       write baseline-card.md/json/html from the stack outputs"
	@echo "make test       every test (unit, engine, end to end)"
	@echo "make test-unit  fast tests, no engine"
	@echo "make toolchain  find (or build, offline) what this machine's stack needs"
	@echo "make clean-state  delete the local state, refused while a stack still owns resources"
	@echo "make bench      time up / no-op up / destroy against a plain script; a simulated fleet of 10 and 100 nodes"

$(VENV_STAMP): requirements.txt requirements-dev.txt
	test -x $(PY) || python3 -m venv .venv
	$(PY) -m pip install -q --disable-pip-version-check -r requirements-dev.txt
	rm -f .venv/.stamp-*; touch $@

# The program's own modules compiled once here (up to date: a fraction of a second), as pip
# compiles what it installs: every `pulumi up` starts a dozen Python processes (the program, its
# checks, the sim's control), and where PYTHONDONTWRITEBYTECODE is set none of them could cache
# what it compiled. A stale file is recompiled by Python itself (timestamps).
PROGRAM_SOURCES := __main__.py components program gpulab variants policy ops
venv: $(VENV_STAMP)
	@$(PY) -m compileall -q $(PROGRAM_SOURCES)

# Only what this machine's stack needs: nothing on a GPU host with a recent pulumi.
toolchain: venv
	@stack=$$(GPULAB_CHOICE_QUIET=1 scripts/choose-variant) && toolchain/setup.sh --stack $$stack

# Everything the tests use: the simulated control plane too.
toolchain-tests: venv
	@toolchain/setup.sh --stack sim --for tests

# The variant, then the toolchain, are chosen and said (with why) before anything is built.
lab: venv
	@stack=$$(scripts/choose-variant) && toolchain/setup.sh --stack $$stack && \
	  GPULAB_STACK=$$stack GPULAB_CHOICE_QUIET=1 scripts/lab up

# Measure again against the running lab: only the gate, the smoke Pod and the compute check
# are replaced; ends with the card's one-line summary, exit code the checklist's.
verify: venv
	@scripts/lab verify

# Works with the cluster down too: it bundles what it can read and says what it could not.
debug-bundle: venv
	@scripts/lab debug-bundle

preview: venv
	@stack=$$(scripts/choose-variant) && toolchain/setup.sh --stack $$stack && \
	  GPULAB_STACK=$$stack GPULAB_CHOICE_QUIET=1 scripts/lab preview

destroy: venv
	scripts/lab destroy $(if $(FORGET),--forget,)

# What a killed or interrupted run left (a stale lock, pending operations, a Helm release
# stuck pending, orphaned processes): listed, then repaired once you say so.
repair: venv
	@scripts/lab repair $(if $(YES),--yes,)

# From the last run's outputs; says so, and that the cluster is down, when it does not answer.
card: venv
	@scripts/lab card

lint: venv
	.venv/bin/ruff check . && .venv/bin/ruff format --check . && .venv/bin/mypy && .venv/bin/lint-imports

test-unit: venv
	$(PYTEST) -q $(XDIST) -m "not engine and not sim" tests

test-engine: toolchain-tests
	$(PYTEST) -q $(XDIST) -m "engine" tests

test-e2e: toolchain-tests
	$(PYTEST) -q $(XDIST) -m "sim" tests

# Offline CI and this workplace: the chart copy beside the checkout (see README).
export GPULAB_CHART_PATH ?= $(if $(wildcard ../shared/charts/gpu-operator/Chart.yaml),$(abspath ../shared/charts/gpu-operator),)
# Offline: NVIDIA's device plugin chart from the Go module cache, where make toolchain-tests put
# it (toolchain/device-plugin-chart.sh; --path-only fetches nothing); empty elsewhere.
export GPULAB_DEVICE_PLUGIN_CHART_PATH ?= $(shell toolchain/device-plugin-chart.sh --path-only 2>/dev/null)
# Offline: NVIDIA's DRA driver chart, the same way (toolchain/dra-chart.sh).
export GPULAB_DRA_CHART_PATH ?= $(shell toolchain/dra-chart.sh --path-only 2>/dev/null)
# Offline: Kueue's chart (queues: true), the same way (toolchain/kueue-chart.sh).
export GPULAB_KUEUE_CHART_PATH ?= $(shell toolchain/kueue-chart.sh --path-only 2>/dev/null)

# Every test in one run over TEST_JOBS workers: the long end-to-end tests are collected first
# (tests/e2e sorts before tests/unit), so they start at once and the short ones fill the gaps.
test: toolchain-tests lint
	$(PYTEST) -q $(XDIST) --durations=15 tests

bench: toolchain-tests
	. scripts/env.sh && rc=0 && { $(PY) hack/bench/bench.py || rc=$$?; } && { $(PY) hack/bench/fleet.py || rc=$$?; } && exit $$rc

clean-state: venv
	@scripts/lab clean-state
