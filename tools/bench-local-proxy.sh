#!/usr/bin/env bash
# Measures what the local supervisor's round-robin proxy costs: the same open-model load
# (k6, constant arrival rate) against the gateway through the proxy (8080) and straight
# at one ready replica (its own port), and prints the latency percentiles of both.
#
# Needs the local stack running (./deployments.sh --local) and k6 (tools/install-k6.sh).
#
# Settings (environment):
#   ELVES_CACHE          where k6 is cached (default: $HOME/.cache/elves)
#   BENCH_RATE           requests per second (default: 50)
#   BENCH_DURATION       length of each of the two runs (default: 30s)
#   BENCH_PATH           the gateway call (default: /api/v1/users/me)
set -Eeuo pipefail

readonly REPO_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly K6="${ELVES_CACHE:-${HOME}/.cache/elves}/bin/k6"
readonly RATE="${BENCH_RATE:-50}"
readonly DURATION="${BENCH_DURATION:-30s}"
readonly BENCH_PATH="${BENCH_PATH:-/api/v1/users/me}"

die() { echo "bench-local-proxy: $*" >&2; exit 1; }

script() {
  cat <<'EOF'
import http from 'k6/http';
export const options = {
  scenarios: { calls: { executor: 'constant-arrival-rate', rate: Number(__ENV.RATE), timeUnit: '1s',
                        duration: __ENV.DURATION, preAllocatedVUs: 20, maxVUs: 100 } },
  summaryTrendStats: ['p(50)', 'p(95)', 'p(99)', 'max'],
};
export default function () {
  http.get(`${__ENV.TARGET}${__ENV.BENCH_PATH}`, { headers: { Authorization: `Bearer ${__ENV.TOKEN}` } });
}
export function handleSummary(data) {
  const d = data.metrics.http_req_duration.values, f = data.metrics.http_req_failed.values;
  const line = `${__ENV.LABEL.padEnd(22)} p50 ${d['p(50)'].toFixed(2)} ms  p95 ${d['p(95)'].toFixed(2)} ms  `
    + `p99 ${d['p(99)'].toFixed(2)} ms  max ${d.max.toFixed(1)} ms  failed ${(100 * f.rate).toFixed(2)} %\n`;
  return { stdout: line };
}
EOF
}

run() {
  local label="$1" target="$2" file="$3" token="$4"
  "${K6}" run --quiet --no-usage-report -e RATE="${RATE}" -e DURATION="${DURATION}" \
    -e BENCH_PATH="${BENCH_PATH}" -e TARGET="${target}" -e TOKEN="${token}" -e LABEL="${label}" "${file}"
}

replica_port() {
  "${REPO_DIR}/.venv/bin/elves" local status --json | python3 -c '
import json, sys
pods = json.load(sys.stdin)["deployments"]["gateway"]["pods"]
print(next(p["httpPort"] for p in pods if p["ready"]))'
}

main() {
  [[ -x ${K6} ]] || die "k6 not found at ${K6}: run tools/install-k6.sh"
  "${REPO_DIR}/.venv/bin/elves" local status >/dev/null || die "the local stack is not ready: ./deployments.sh --local"
  local token port
  SCRIPT_FILE="$(mktemp --suffix=.js)"
  trap 'rm -f "${SCRIPT_FILE}"' EXIT
  script >"${SCRIPT_FILE}"
  token="$("${REPO_DIR}/.venv/bin/elves" token --user bench)"
  port="$(replica_port)"
  echo "GET ${BENCH_PATH} at ${RATE}/s for ${DURATION} each, on $(nproc) cores (load average $(cut -d' ' -f1 /proc/loadavg)):"
  run "through the proxy" "http://127.0.0.1:8080" "${SCRIPT_FILE}" "${token}"
  run "straight to the replica" "http://127.0.0.1:${port}" "${SCRIPT_FILE}" "${token}"
}

main "$@"
