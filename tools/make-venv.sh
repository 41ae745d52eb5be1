#!/usr/bin/env bash
# Creates (or refreshes) the project's virtualenv from the hashed lock: every package, the
# transitive and build dependencies included, checked against its sha256
# (operator/requirements-test.txt); then the elves package itself, editable, with no
# dependencies and no build isolation, so pip fetches nothing unhashed. `make venv` and
# `./deployments.sh --local` both run it; `make lock` rewrites the lock.
#
#   tools/make-venv.sh [VENV]      default: .venv in the repository
set -Eeuo pipefail

REPO_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly REPO_DIR
VENV="${1:-${REPO_DIR}/.venv}"
PIP=("${VENV}/bin/pip" install -q --disable-pip-version-check)

python3 -m venv "${VENV}"
"${PIP[@]}" --require-hashes --requirement "${REPO_DIR}/operator/requirements-test.txt"
"${PIP[@]}" --no-deps --no-build-isolation --editable "${REPO_DIR}/operator"
