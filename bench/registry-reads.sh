#!/usr/bin/env bash
# What each of the registry's read calls costs it: the calls the gateway makes for a user's
# read (getUser, getStatus, getHistory, getAllHistory), one at a time at one constant rate
# (bench/k6/steady-rate.js), straight through the registry's local Service (8081) as the
# gateway calls it. Prints per call the registry's CPU per call with and without its JIT
# compiler threads, PostgreSQL's, p50 / p99 and failures, and each call's CPU next to the
# cheapest one's (one row of users): how much of a call is rows (the driver, the mapping, the
# JSON) and how much is the call itself (Tomcat, Spring MVC, the filters, the metrics).
# The registry's CPU per request is the read path's largest cost after the gateway's; this says
# where it goes.
#
# Needs the local stack running (./deployments.sh --local) and k6 (tools/install-k6.sh). It
# seeds one user (ELVES_BENCH_USER) with 150 activity logs and one request.
#
# Settings (environment):
#   ELVES_CACHE              where k6 is cached (default: $HOME/.cache/elves)
#   ELVES_LOCAL_PORT_OFFSET  the stack's port offset (default: 0)
#   ELVES_STATE_DIR          the stack's state directory (default: <repo>/.elves)
#   BENCH_RATE               calls per second (default: 300)
#   BENCH_DURATION           length of each measured run (default: 30s; first every call runs
#                            twice for 10 s, untimed)
#   BENCH_CALLS              which calls, in order, the first the yardstick (default: "registryUser
#                            registryStatus registryHistory registryAllHistory": bench/k6/steady-rate.js)
set -Eeuo pipefail

REPO_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly REPO_DIR
# shellcheck source=../tools/lib/cache-root.sh
source "${REPO_DIR}/tools/lib/cache-root.sh"
readonly K6="${ELVES_CACHE}/bin/k6"
readonly ELVES="${REPO_DIR}/.venv/bin/elves"
readonly PYTHON="${REPO_DIR}/.venv/bin/python"
readonly OFFSET="${ELVES_LOCAL_PORT_OFFSET:-0}"
readonly STATE_DIR="${ELVES_STATE_DIR:-${REPO_DIR}/.elves}"
readonly RATE="${BENCH_RATE:-300}"
readonly DURATION="${BENCH_DURATION:-30s}"
readonly CALLS="${BENCH_CALLS:-registryUser registryStatus registryHistory registryAllHistory}"
readonly USER_ID="${ELVES_BENCH_USER:-bench-reads}"
readonly REGISTRY="http://127.0.0.1:$((8081 + OFFSET))"
readonly GATEWAY="http://127.0.0.1:$((8080 + OFFSET))"
WORK="$(mktemp -d)"
readonly WORK
trap 'rm -rf "${WORK}"' EXIT

readonly SCRIPT_NAME=bench-registry-reads
# shellcheck source=../tools/lib/log.sh
source "${REPO_DIR}/tools/lib/log.sh"

cpu() { "${PYTHON}" "${REPO_DIR}/bench/proc_cpu.py"; }

# 150 activity logs for the user (more than the 101 rows a page of all-history reads) and one
# request of theirs, recorded by the registry; prints the request's id.
seed() {
  "${PYTHON}" - "${REGISTRY}" "${GATEWAY}" "${SERVICE_KEY}" "${USER_ID}" "$("${ELVES}" token --user "${USER_ID}")" <<'PY'
import sys, time, requests
registry, gateway, key, user, token = sys.argv[1:]
headers = {"X-Elves-Service-Key": key}
with requests.Session() as session:
    for _ in range(150):
        session.post(f"{registry}/api/v1/logs", json={"userId": user, "endpoint": "bench"}, headers=headers,
                     timeout=10).raise_for_status()
answer = requests.post(f"{gateway}/api/v1/data", headers={"Authorization": f"Bearer {token}"}, timeout=10,
                       json={"radar": "KTLX", "date": "2021-06-01", "start": "10:00", "end": "11:00"})
if answer.status_code != 202:
    sys.exit(f"getData answered {answer.status_code}: {answer.text[:200]}")
request_id = answer.json()["id"]
deadline = time.monotonic() + 60
while requests.get(f"{registry}/api/v1/requests/{request_id}", params={"user": user}, headers=headers,
                   timeout=10).status_code != 200:
    if time.monotonic() > deadline:
        sys.exit(f"the registry did not record request {request_id} within 60 s")
    time.sleep(0.5)  # polling, bounded by the deadline above
print(request_id)
PY
}

# One run of the call $1 for $2; appends a JSON line (k6's figures, CPU per process) to ${WORK}/$1.jsonl.
run() {
  local call="$1" duration="$2" summary="${WORK}/summary.json" before after
  before="$(cpu)"
  ELVES_BENCH_TARGET="${call}" ELVES_BENCH_RATE="${RATE}" ELVES_BENCH_URL="${REGISTRY}" ELVES_BENCH_DURATION="${duration}" \
    ELVES_SERVICE_KEY="${SERVICE_KEY}" ELVES_BENCH_USER="${USER_ID}" ELVES_BENCH_REQUEST="${REQUEST_ID}" \
    "${K6}" run --quiet --no-color --no-usage-report --summary-trend-stats "p(50),p(99),max" \
    --summary-export "${summary}" "${REPO_DIR}/bench/k6/steady-rate.js" >"${WORK}/k6.log" 2>&1 || true
  after="$(cpu)"
  [[ -s ${summary} ]] || die "k6 wrote no summary for ${call}: $(tail -3 "${WORK}/k6.log")"
  python3 "${REPO_DIR}/bench/k6_run_figures.py" "${summary}" "${before}" "${after}" >"${WORK}/${call}.json"
  rm -f "${summary}"
}

report() {
  python3 - "${WORK}" "${CALLS}" <<'PY'
import json, sys
from pathlib import Path
work, calls = Path(sys.argv[1]), sys.argv[2].split()
rows = {}
for call in calls:
    r = json.loads((work / f"{call}.json").read_text())
    per = lambda name: 1000 * r["cpu"].get(name, 0) / max(r["requests"], 1)
    rows[call] = r | {"registry": per("registry"), "warm": per("registry") - per("registry.jit"),
                      "postgres": per("postgres")}
floor = rows[calls[0]]["warm"]
print(f"  {'call':<18} {'calls':>6} {'registry ms/call':>16} {'(no JIT)':>9} {'x first':>9} "
      f"{'postgres':>9} {'p50 ms':>7} {'p99 ms':>7} failed dropped")
for call, r in rows.items():
    print(f"  {call:<18} {r['requests']:>6} {r['registry']:>16.3f} {r['warm']:>9.3f} {r['warm'] / max(floor, 1e-9):>9.2f} "
          f"{r['postgres']:>9.3f} {r['p50']:>7.2f} {r['p99']:>7.2f} {100 * r['failed']:5.2f}% {r['dropped']:>7}")
PY
}

main() {
  [[ -x ${K6} ]] || die "k6 not found at ${K6}: run tools/install-k6.sh"
  "${ELVES}" local status >/dev/null || die "the local stack is not ready: ./deployments.sh --local"
  SERVICE_KEY="$(cat "${STATE_DIR}/secrets/service-key")" || die "no service key in ${STATE_DIR}/secrets"
  REQUEST_ID="$(seed)" || die "could not seed the user ${USER_ID}"
  echo "the registry's read calls at ${RATE}/s for ${DURATION} each (after 2 x 10 s of each untimed), through ${REGISTRY}," \
       "on $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), load average" \
       "$(cut -d' ' -f1 /proc/loadavg) at the start:"
  local call
  # Untimed: the JIT compiles the calls' paths in their first seconds (every call first, so
  # that the first measured one does not carry the others' share of the warm-up).
  for call in ${CALLS} ${CALLS}; do
    run "${call}" 10s
  done
  for call in ${CALLS}; do
    run "${call}" "${DURATION}"
  done
  report
  echo "  (load average $(cut -d' ' -f1 /proc/loadavg) at the end)"
}

main "$@"
