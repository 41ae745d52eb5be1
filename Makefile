# Elves: the two commands a newcomer needs are `make demo` and `make test`.
# Every target installs what it needs (pinned in tools/versions.env and
# operator/pyproject.toml), so both work on a fresh Debian 12 machine.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -Eeuo pipefail -c
.DEFAULT_GOAL := help

VENV := .venv
PYTEST := $(VENV)/bin/python -m pytest
MVN := mvn -q -B -f services/pom.xml
# The cache root's default is defined once, in tools/lib/cache-root.sh (unset or empty: the default).
ifeq ($(ELVES_CACHE),)
ELVES_CACHE := $(shell . tools/lib/cache-root.sh && printf %s "$$ELVES_CACHE")
endif
export ELVES_CACHE

.PHONY: help demo test results results-page test-unit test-local test-apiserver test-e2e test-autoscaling \
        venv lock deps k6 helm kafka kubernetes crds services services-test

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-16s %s\n", $$1, $$2}'

demo: ## install, build, start the local stack and run the quickstart LoadTest
	./deployments.sh --local
	$(VENV)/bin/elves run loadtests/examples/quickstart.yaml

# Tier 2 runs beside the build of what tiers 3 and 4 need, tier 4 beside tier 3, both niced:
# tier 2 leaves the build its idle time, tier 4 more than a core for tier 3 (docs/testing.md,
# "What runs beside what"). Beside tier 4, tools/build-kubernetes.sh only checks that the
# prebuild built Kubernetes. Tier 3's output is printed when tier 4 ends.
test: test-unit ## every test tier (what CI runs)
	tools/e2e/install-node-deps.sh
	tools/with-background-build.sh tools/e2e/prebuild.sh -- $(MAKE) --no-print-directory test-local
	tools/with-background-build.sh tools/build-kubernetes.sh --then-beside $(MAKE) --no-print-directory test-apiserver \
	  -- $(MAKE) --no-print-directory test-e2e

results: venv ## run the study's cases on the local stack (an hour or more) and write docs/results.md
	./deployments.sh --local
	$(VENV)/bin/elves suite loadtests/study --results docs/results --page docs/results.md

results-page: venv ## rebuild docs/results.md and .html from the committed docs/results/*/summary.json
	$(VENV)/bin/elves results-page docs/results --page docs/results.md

# Tier 1's tests on every core (pytest-xdist), each file on one worker so that a module's
# Prometheus starts once; those marked serial measure a real process's CPU, timing or nice value,
# which a test beside them would change: they run after, alone (and not under nice).
test-unit: venv deps k6 helm crds services-test ## tier 1: Java slices, pytest, k6 inspect, helm lint/template
	$(PYTEST) -n auto --dist loadfile -m "not serial" tests/unit
	$(PYTEST) -m serial tests/unit

# The stack tier 2 starts is stopped afterwards, the tests passed or not; one that ran before stays.
test-local: venv kafka ## tier 2: the real local stack (RabbitMQ, PostgreSQL, Prometheus, k6, the services)
	tools/with-local-stack.sh $(PYTEST) tests/local

test-apiserver: venv deps k6 helm kubernetes crds ## tier 3: etcd + kube-apiserver: CRD, chart dry-run, operator
	$(PYTEST) tests/apiserver

test-e2e: venv deps k6 helm kubernetes services ## tier 4: a throwaway single-node cluster with real pods
	tools/e2e/install-node-deps.sh
	$(PYTEST) tests/e2e

# Opt-in, not part of `make test`: on a cold machine, building KEDA and metrics-server beside
# tier 4 and these tests after it took `make test` to 76.2 min, over its 75 (docs/testing.md).
# -rA prints the figures and the times of each step.
test-autoscaling: venv deps k6 helm kubernetes services ## tier 4's KEDA and HPA scale-ups on the cluster (opt-in)
	tools/e2e/install-node-deps.sh
	$(PYTEST) -rA -m autoscaling tests/e2e

# --- prerequisites ------------------------------------------------------------

venv: $(VENV)/.installed
# From the hashed lock (tests/unit/tools/test_python_lock.py keeps it in step with pyproject.toml).
$(VENV)/.installed: operator/pyproject.toml operator/requirements-test.txt tools/make-venv.sh
	tools/make-venv.sh $(VENV)
	touch $@

# pip-tools is a tool of this target only (a throwaway venv), never a dependency of the project.
# Kept pins stay; a new or changed pin in pyproject.toml is resolved, hashed and written.
PIP_COMPILE = $(ELVES_CACHE)/pip-tools/bin/pip-compile -q --generate-hashes --allow-unsafe --all-build-deps \
  --strip-extras --no-emit-index-url --no-emit-find-links
lock: ## regenerate the hashed Python locks operator/requirements*.txt from operator/pyproject.toml (needs PyPI)
	python3 -m venv $(ELVES_CACHE)/pip-tools
	$(ELVES_CACHE)/pip-tools/bin/pip install -q --disable-pip-version-check pip-tools
	cd operator && $(PIP_COMPILE) --output-file=requirements.txt pyproject.toml
	cd operator && $(PIP_COMPILE) --extra=test --constraint=requirements.txt --output-file=requirements-test.txt pyproject.toml

deps: ## Debian packages for the local stack and the API-server tier (etcd)
	tools/install-local-deps.sh

k6: ## k6 built from its Go module at the pinned version
	tools/install-k6.sh

helm: ## helm built from its Go module at the pinned version
	tools/install-helm.sh

kafka: ## Apache Kafka's broker jars from Maven Central at the pinned version, hash-checked (cached)
	tools/install-kafka.sh >/dev/null

kubernetes: ## kube-apiserver and friends built from the Go module proxy (cached)
	tools/build-kubernetes.sh

crds: ## upstream CRDs (prometheus-operator, k6-operator, KEDA) from their Go modules
	tools/fetch-crds.sh

services: ## build the Spring Boot services
	$(MVN) package -DskipTests

# `package`, not `test`: the same tests, and the jars they leave let tier 2's deployments.sh
# skip its own build (45 s of a cold run on 2026-11-29).
services-test: ## Java tests that need nothing running (and the jars)
	mvn -B -f services/pom.xml package
