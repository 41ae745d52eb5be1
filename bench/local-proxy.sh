#!/usr/bin/env bash
# Measures what the local supervisor's round-robin proxy costs: the same open-model load
# (bench/k6/steady-rate.js, getUser) against the gateway through the proxy (8080) and straight
# at one ready replica (its own port), and prints the latency percentiles of both.
#
# Needs the local stack running (./deployments.sh --local) and k6 (tools/install-k6.sh).
#
# Settings (environment):
#   ELVES_CACHE          where k6 is cached (default: $HOME/.cache/elves)
#   BENCH_RATE           requests per second (default: 50)
#   BENCH_DURATION       length of each of the two runs (default: 30s)
set -Eeuo pipefail

readonly REPO_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly K6="${ELVES_CACHE:-${HOME}/.cache/elves}/bin/k6"
readonly ELVES="${REPO_DIR}/.venv/bin/elves"
readonly RATE="${BENCH_RATE:-50}"
readonly DURATION="${BENCH_DURATION:-30s}"
readonly WORK="$(mktemp -d)"
trap 'rm -rf "${WORK}"' EXIT

die() { echo "bench-local-proxy: $*" >&2; exit 1; }

# Runs the load against $2 and prints one line of percentiles labelled $1.
run() {
  local label="$1" url="$2" summary="${WORK}/summary.json"
  ELVES_BENCH_TARGET=getUser ELVES_BENCH_RATE="${RATE}" ELVES_BENCH_URL="${url}" ELVES_BENCH_TOKEN="${TOKEN}" \
    ELVES_BENCH_DURATION="${DURATION}" ELVES_BENCH_TEST_ID="bench/proxy/$$" \
    "${K6}" run --quiet --no-color --no-usage-report --summary-trend-stats "p(50),p(95),p(99),max" \
    --summary-export "${summary}" "${REPO_DIR}/bench/k6/steady-rate.js" >"${WORK}/k6.log" 2>&1 || true
  [[ -s ${summary} ]] || die "k6 wrote no summary for ${label}: $(tail -3 "${WORK}/k6.log")"
  python3 - "${summary}" "${label}" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))["metrics"]
d, failed = m["http_req_duration"], m["http_req_failed"].get("value", 0)
print(f'{sys.argv[2]:<24} p50 {d["p(50)"]:.2f} ms  p95 {d["p(95)"]:.2f} ms  p99 {d["p(99)"]:.2f} ms  '
      f'max {d["max"]:.1f} ms  failed {100 * failed:.2f} %')
PY
}

replica_port() {
  "${ELVES}" local status --json | python3 -c '
import json, sys
pods = json.load(sys.stdin)["deployments"]["gateway"]["pods"]
print(next(p["httpPort"] for p in pods if p["ready"]))'
}

main() {
  [[ -x ${K6} ]] || die "k6 not found at ${K6}: run tools/install-k6.sh"
  "${ELVES}" local status >/dev/null || die "the local stack is not ready: ./deployments.sh --local"
  TOKEN="$("${ELVES}" token --user bench)"
  local port
  port="$(replica_port)"
  echo "GET /api/v1/users/me at ${RATE}/s for ${DURATION} each, on $(nproc) cores (load average $(cut -d' ' -f1 /proc/loadavg)):"
  run "through the proxy" "http://127.0.0.1:8080"
  run "straight to the replica" "http://127.0.0.1:${port}"
}

main "$@"
