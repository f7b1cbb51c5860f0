# gpu-lab: see README.md. Every target runs with the project's toolchain and local state
# (scripts/env.sh); nothing here needs PATH changes by hand.
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
PY := .venv/bin/python
VENV_STAMP := .venv/.stamp-$(shell cat requirements.txt requirements-dev.txt | sha256sum | cut -c1-12)
PYTEST := . scripts/env.sh && $(PY) -m pytest

.PHONY: help lab destroy preview card toolchain venv test test-unit test-engine test-e2e lint bench clean-state

help:
	@echo "make lab        build the lab (GPU lab on a GPU host, simulated lab elsewhere)"
	@echo "make destroy    tear the lab down (zero residue)"
	@echo "make preview    pulumi preview of the lab's stack, with the checklist policy pack"
	@echo "make card       write baseline-card.md/json from the stack outputs"
	@echo "make test       every test (unit, engine, end to end)"
	@echo "make test-unit  fast tests, no engine"
	@echo "make toolchain  build/find pulumi, its plugins and the simulated control plane"
	@echo "make bench      time up / no-op up / destroy against a plain script"

$(VENV_STAMP): requirements.txt requirements-dev.txt
	test -x $(PY) || python3 -m venv .venv
	$(PY) -m pip install -q --disable-pip-version-check -r requirements-dev.txt
	rm -f .venv/.stamp-*; touch $@

venv: $(VENV_STAMP)

toolchain: venv
	toolchain/build-pulumi.sh
	toolchain/sim/build.sh

# The variant is chosen (and said, with why) before the toolchain build's output.
lab:
	@stack=$$(scripts/choose-variant) && $(MAKE) --no-print-directory toolchain && \
	  GPULAB_STACK=$$stack GPULAB_CHOICE_QUIET=1 scripts/lab up

preview:
	@stack=$$(scripts/choose-variant) && $(MAKE) --no-print-directory toolchain && \
	  GPULAB_STACK=$$stack GPULAB_CHOICE_QUIET=1 scripts/lab preview

destroy: venv
	scripts/lab destroy

card: venv
	@stack=$$(scripts/choose-variant) && . scripts/env.sh && \
	  scripts/pulumi stack output --json --stack $$stack > .state/outputs-$$stack.json && \
	  tf=(); [[ -f .state/tflops.json ]] && tf=(--tflops .state/tflops.json); \
	  $(PY) -m gpulab.card --outputs .state/outputs-$$stack.json "$${tf[@]}" --out-dir .

lint: venv
	.venv/bin/ruff check . && .venv/bin/ruff format --check . && .venv/bin/mypy

test-unit: venv
	$(PYTEST) -q -m "not engine and not sim" tests

test-engine: toolchain
	$(PYTEST) -q -m "engine" tests

test-e2e: toolchain
	$(PYTEST) -q -m "sim" tests

# Offline CI and this workplace: the chart copy beside the checkout (see README).
export GPULAB_CHART_PATH ?= $(if $(wildcard ../shared/charts/gpu-operator/Chart.yaml),$(abspath ../shared/charts/gpu-operator),)

test: toolchain lint
	$(PYTEST) -q tests

bench: toolchain
	. scripts/env.sh && $(PY) bench/bench.py

clean-state:
	rm -rf .state
