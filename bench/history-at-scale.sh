#!/usr/bin/env bash
# History at scale: getHistory and the paged getAllHistory in one run, with
# ROWS activity-log rows in the table. Seeds the rows over the LoadTest's load users through the
# local stack's psql (bench/history_rows.py), runs loadtests/examples/history-at-scale.yaml
# through `elves run` (the user's path: HAProxy, gateway, registry), prints each endpoint's
# percentiles and PostgreSQL's own time for one user's getHistory query, and removes the seed.
#
# Needs the local stack running (./deployments.sh --local).
#   bench/history-at-scale.sh [ROWS]        default 1000000
#
# Settings (environment): ELVES_LOCAL_PORT_OFFSET, ELVES_STATE_DIR as for the stack.
set -Eeuo pipefail

REPO_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly REPO_DIR
readonly ELVES="${REPO_DIR}/.venv/bin/elves"
readonly PYTHON="${REPO_DIR}/.venv/bin/python"
readonly LOADTEST="${REPO_DIR}/loadtests/examples/history-at-scale.yaml"
readonly ROWS="${1:-1000000}"
WORK="$(mktemp -d)"
readonly WORK
trap 'rm -rf "${WORK}"' EXIT

readonly SCRIPT_NAME=bench-history-at-scale
# shellcheck source=../tools/lib/log.sh
source "${REPO_DIR}/tools/lib/log.sh"
rows() { "${PYTHON}" "${REPO_DIR}/bench/history_rows.py" "$@"; }

cleanup() {
  rows remove || echo "bench-history-at-scale: removing the seeded rows failed; run: ${PYTHON} bench/history_rows.py remove" >&2
  rm -rf "${WORK}"
}

main() {
  [[ "${ROWS}" =~ ^[1-9][0-9]*$ ]] || die "ROWS must be a positive whole number, not '${ROWS}'"
  "${ELVES}" local status >/dev/null || die "the local stack is not ready: ./deployments.sh --local"
  local users
  users="$("${PYTHON}" -c 'import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))["spec"]["load"]["users"])' "${LOADTEST}")"
  trap cleanup EXIT
  local started=${SECONDS}
  rows seed "${ROWS}" "${users}"
  echo "$(basename "${LOADTEST}") on $(nproc) cores with $(rows count) activity-log rows (${ROWS} seeded over ${users} users in $((SECONDS - started)) s), load average $(cut -d' ' -f1 /proc/loadavg)"
  echo "  PostgreSQL, one user's getHistory (20 newest of $((ROWS / users))):"
  rows explain | grep -E 'Index|Limit|Execution' | sed 's/^/    /'
  "${ELVES}" run --reports "${WORK}/reports" "${LOADTEST}" >"${WORK}/run.log" 2>&1 || true
  # The endpoint table (with its header, so the columns can be read), the ledger and the verdict.
  grep -E '^(endpoint |all |getHistory|getAllHistory|dropped|ledger|Harness|Verdict)' "${WORK}/run.log" \
    | sed 's/^/  /' || die "elves run printed no summary: $(tail -5 "${WORK}/run.log")"
  echo "  load average $(cut -d' ' -f1 /proc/loadavg) at the end"
}

main "$@"
