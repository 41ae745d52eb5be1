#!/usr/bin/env bash
# How fast the services are from a fresh start (bench/warm_start.py): each service's time from
# process start to Ready and its CPU seconds by then, when the JIT settled by the engine's rule,
# and how long until the read path (getUser at 100/s through the local Service) has p99 < 50 ms.
# Restarts the services (the supervisor's reset empties the database and the queues).
# Needs the local stack running (./deployments.sh --local). Writes what it prints to
# bench/results/<date>-warm-start-<label>.txt too.
#   bench/warm-start.sh LABEL         # e.g. before, after
#
# Settings (environment):
#   ELVES_LOCAL_PORT_OFFSET   the stack's port offset (default: 0)
#   ELVES_STATE_DIR           the stack's state directory (default: <repo>/.elves)
#   ELVES_BENCH_RATE          requests per second of the read load (default: 100)
#   ELVES_BENCH_LOAD_SECONDS  how long the read load runs (default: 120)
set -Eeuo pipefail

REPO_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly REPO_DIR
readonly SCRIPT_NAME=bench-warm-start
# shellcheck source=../tools/lib/log.sh
source "${REPO_DIR}/tools/lib/log.sh"

main() {
  [[ $# == 1 ]] || die "usage: bench/warm-start.sh LABEL"
  "${REPO_DIR}/.venv/bin/elves" local status >/dev/null || die "the local stack is not ready: ./deployments.sh --local"
  local raw
  raw="${REPO_DIR}/bench/results/$(date -u +%F)-warm-start-$1.txt"
  "${REPO_DIR}/.venv/bin/python" "${REPO_DIR}/bench/warm_start.py" | tee -a "${raw}"
  log "written to ${raw#"${REPO_DIR}/"}"
}

main "$@"
