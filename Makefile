# Elves: the two commands a newcomer needs are `make demo` and `make test`.
# Every target installs what it needs (pinned in tools/versions.env and
# operator/pyproject.toml), so both work on a fresh Debian 12 machine.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -Eeuo pipefail -c
.DEFAULT_GOAL := help

VENV := .venv
PYTEST := $(VENV)/bin/python -m pytest
MVN := mvn -q -B -f services/pom.xml
export ELVES_CACHE ?= $(HOME)/.cache/elves

.PHONY: help demo test results results-page test-unit test-local test-apiserver test-e2e \
        venv deps k6 helm kubernetes crds services services-test

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-16s %s\n", $$1, $$2}'

demo: ## install, build, start the local stack and run the quickstart LoadTest
	./deployments.sh --local
	$(VENV)/bin/elves run loadtests/examples/quickstart.yaml

test: test-unit test-local test-apiserver test-e2e ## every test tier (what CI runs)

results: venv ## run the study's cases on the local stack (an hour or more) and write docs/results.md
	./deployments.sh --local
	$(VENV)/bin/elves suite loadtests/study --results docs/results --page docs/results.md

results-page: venv ## rebuild docs/results.md and .html from the committed docs/results/*/summary.json
	$(VENV)/bin/elves results-page docs/results --page docs/results.md

test-unit: venv deps k6 helm crds services-test ## tier 1: Java slices, pytest, k6 inspect, helm lint/template
	$(PYTEST) tests/unit

# The stack tier 2 starts is stopped afterwards, the tests passed or not; one that ran before stays.
test-local: venv ## tier 2: the real local stack (RabbitMQ, PostgreSQL, Prometheus, k6, the services)
	tools/with-local-stack.sh $(PYTEST) tests/local

test-apiserver: venv deps k6 helm kubernetes crds ## tier 3: etcd + kube-apiserver: CRD, chart dry-run, operator
	$(PYTEST) tests/apiserver

test-e2e: venv deps k6 helm kubernetes services ## tier 4: a throwaway single-node cluster with real pods
	tools/e2e/install-node-deps.sh
	$(PYTEST) tests/e2e

# --- prerequisites ------------------------------------------------------------

venv: $(VENV)/.installed
$(VENV)/.installed: operator/pyproject.toml
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --disable-pip-version-check -e 'operator[test]'
	touch $@

deps: ## Debian packages for the local stack and the API-server tier (etcd)
	tools/install-local-deps.sh

k6: ## k6 built from its Go module at the pinned version
	tools/install-k6.sh

helm: ## helm built from its Go module at the pinned version
	tools/install-helm.sh

kubernetes: ## kube-apiserver and friends built from the Go module proxy (cached)
	tools/build-kubernetes.sh

crds: ## upstream CRDs (prometheus-operator, k6-operator) from their Go modules
	tools/fetch-crds.sh

services: ## build the Spring Boot services
	$(MVN) package -DskipTests

services-test: ## Java tests that need nothing running
	mvn -B -f services/pom.xml test
