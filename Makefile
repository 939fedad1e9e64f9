# hpclab.cluster — the commands a user and CI run. See README.md.
SHELL := /bin/bash
.DEFAULT_GOAL := help
VENV ?= .venv
PY := $(VENV)/bin/python
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
# Every scenario (tests/run-all runs them several at a time, longest first: HPCLAB_TEST_JOBS).
SCENARIOS ?= $(patsubst molecule/%/molecule.yml,%,$(wildcard molecule/*/molecule.yml))

.PHONY: help venv setup lab lab-down test lint sanity unit molecule bench bench-slurm bench-gateway bench-hostlist build clean

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

$(VENV)/.installed: requirements-dev.txt
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -r requirements-dev.txt
	touch $@

.cache/collections/ansible_collections/hpclab/cluster:
	mkdir -p .cache/collections/ansible_collections/hpclab
	ln -sfn ../../../.. $@

venv: $(VENV)/.installed .cache/collections/ansible_collections/hpclab/cluster ## Python environment with the pinned tools
	@# Bytecode of the collection's plugins, as pip wrote it for the pinned packages: without it every Ansible
	@# worker that uses one of our filters compiles all of plugins/filter again (PYTHONDONTWRITEBYTECODE=1
	@# here keeps Python from caching it; a changed file is compiled again here, a stale one is never used).
	@$(PY) -m compileall -q plugins > /dev/null

setup: venv ## Docker engine, shared apt cache and the base node image
	tests/lab/labctl setup

lab: setup ## Start the 3-node lab and deploy site.yml to it
	tests/lab/lab up

lab-down: venv ## Remove the lab's containers and network (nothing else)
	tests/lab/lab down

test: setup ## Everything CI runs: lint, sanity, unit tests, Molecule scenarios
	tests/run-all $(SCENARIOS)

lint: venv ## ansible-lint, production profile
	ansible-lint

sanity: venv ## ansible-test sanity, no ignore files
	tests/sanity

unit: venv ## Unit tests (pytest)
	pytest tests/unit

molecule: setup ## Molecule scenarios (SCENARIOS="munge ...")
	tests/run-all --only-molecule $(SCENARIOS)

bench: setup ## Benchmark: first and no-change converge time per scenario (SCENARIOS="munge ...")
	tests/bench $(SCENARIOS)

bench-slurm: setup ## Benchmark: our Slurm layer against the anchor galaxyproject.slurm, as a ratio (MODES="native container anchor", PAIRS=3)
	BENCH_PAIRS=$(PAIRS) tests/bench-slurm $(MODES)

bench-gateway: ## Benchmark: the LLM gateway's added latency and throughput against the model server, on the running lab (NODE=gpu1)
	BENCH_NODE=$(or $(NODE),gpu1) tests/bench-gateway

bench-hostlist: venv ## Benchmark: Slurm hostlist compress/expand against python-hostlist on 10,000 names
	$(PY) tests/bench-hostlist

build: venv ## Build the collection tarball
	ansible-galaxy collection build --force

clean: lab-down
	rm -rf .cache tests/output hpclab-cluster-*.tar.gz
