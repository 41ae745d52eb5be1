#!/usr/bin/env bash
# Measures what the local Service (the supervisor's HAProxy) costs: the same open-model load
# (bench/k6/steady-rate.js, getUser) against the gateway through the proxy (8080) and straight
# at one ready replica (its own port), in alternating rounds of one run, and prints
#   - per path the median over rounds of p50 / p99 (and the p99 range), the share failed over
#     all rounds (each failed round by status), k6 drops;
#   - the p99 overhead (proxy - direct, medians) and
#   - the proxy's CPU next to the services' (gateway + registry without their JIT compiler
#     threads, from /proc) over the proxied rounds.
# With the kernel's DNAT (the supervisor runs as root) the proxy's process (HAProxy, there
# for the 503 when no replica is ready) forwards nothing: the NAT work is in the senders' own
# system calls, inside the services' and k6's CPU; bench/proxy_hop.py measures it alone.
# The gateway's own call to the registry goes through the registry's proxy (8081) in both
# paths, as it does under `elves run`; "direct" skips only the client's hop.
# Alternating rounds and medians, because on a shared machine a stall of a second decides a
# round's p99 alone; the CPU ratio is what a busy machine disturbs least.
#
# Needs the local stack running (./deployments.sh --local) and k6 (tools/install-k6.sh).
#
# Settings (environment):
#   ELVES_CACHE              where k6 is cached (default: $HOME/.cache/elves)
#   ELVES_LOCAL_PORT_OFFSET  the stack's port offset (default: 0)
#   BENCH_RATE               requests per second (default: 400)
#   BENCH_DURATION           length of each run (default: 20s)
#   BENCH_ROUNDS             rounds of (proxy, direct) (default: 3)
#   BENCH_WARMUP_RUNS        most 10 s warm-up runs before the rounds (default: 12)
set -Eeuo pipefail

REPO_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly REPO_DIR
# shellcheck source=../tools/lib/cache-root.sh
source "${REPO_DIR}/tools/lib/cache-root.sh"
readonly K6="${ELVES_CACHE}/bin/k6"
readonly ELVES="${REPO_DIR}/.venv/bin/elves"
readonly OFFSET="${ELVES_LOCAL_PORT_OFFSET:-0}"
readonly RATE="${BENCH_RATE:-400}"
readonly DURATION="${BENCH_DURATION:-20s}"
readonly ROUNDS="${BENCH_ROUNDS:-3}"
readonly WARMUP_RUNS="${BENCH_WARMUP_RUNS:-12}"
WORK="$(mktemp -d)"
readonly WORK
trap 'rm -rf "${WORK}"' EXIT

readonly SCRIPT_NAME=bench-local-proxy
# shellcheck source=../tools/lib/log.sh
source "${REPO_DIR}/tools/lib/log.sh"

cpu() { "${REPO_DIR}/.venv/bin/python" "${REPO_DIR}/bench/proc_cpu.py"; }

# One run of $3 (default: DURATION) against $2; appends a JSON line (k6 summary figures, CPU used by each process) to
# ${WORK}/$1.jsonl.
run() {
  local label="$1" url="$2" duration="${3:-${DURATION}}" summary="${WORK}/summary.json" before after
  before="$(cpu)"
  ELVES_BENCH_TARGET=getUser ELVES_BENCH_RATE="${RATE}" ELVES_BENCH_URL="${url}" ELVES_BENCH_TOKEN="${TOKEN}" \
    ELVES_BENCH_DURATION="${duration}" ELVES_BENCH_TEST_ID="bench/proxy/$$" \
    nice -n 5 "${K6}" run --quiet --no-color --no-usage-report --summary-trend-stats "p(50),p(99),max" \
    --summary-export "${summary}" "${REPO_DIR}/bench/k6/steady-rate.js" >"${WORK}/k6.log" 2>&1 || true
  after="$(cpu)"
  [[ -s ${summary} ]] || die "k6 wrote no summary for ${label}: $(tail -3 "${WORK}/k6.log")"
  python3 "${REPO_DIR}/bench/k6_run_figures.py" "${summary}" "${before}" "${after}" >>"${WORK}/${label}.jsonl"
  rm -f "${summary}"
}

report() {
  python3 - "${WORK}/proxy.jsonl" "${WORK}/direct.jsonl" <<'PY'
import json, statistics, sys
rounds = {label: [json.loads(l) for l in open(path)] for label, path in zip(("proxy", "direct"), sys.argv[1:])}
med = {label: {k: statistics.median(r[k] for r in runs) for k in ("p50", "p99")} for label, runs in rounds.items()}
for label, title in (("proxy", "through the proxy"), ("direct", "straight to the replica")):
    runs = rounds[label]
    p99s = ", ".join(f"{r['p99']:.1f}" for r in runs)
    print(f"  {title:<24} p50 {med[label]['p50']:.2f} ms  p99 {med[label]['p99']:.2f} ms (rounds: {p99s})  "
          f"failed {100 * sum(r['failed'] * r['requests'] for r in runs) / max(sum(r['requests'] for r in runs), 1):.2f} %"
          f"  dropped {sum(r['dropped'] for r in runs)}")
    # Per round, so a cold first round is told from a steady loss; each failure by its status.
    for n, r in enumerate(runs, 1):
        if r["failed"] or r.get("failures"):
            why = ", ".join(f"{count} x {'no answer' if status == '0' else 'HTTP ' + status}"
                            for status, count in r.get("failures", {}).items())
            print(f"    round {n}: failed {100 * r['failed']:.2f} % of {r['requests']} ({why or 'no status counted'})")
print(f"  p99 overhead of the proxy (medians): {med['proxy']['p99'] - med['direct']['p99']:+.2f} ms, "
      f"p50 {med['proxy']['p50'] - med['direct']['p50']:+.2f} ms")
# The services' CPU without their JIT compiler threads: a young JVM's compiling is no cost of the requests.
cpu = {k: sum(r["cpu"].get(k, 0) - r["cpu"].get(f"{k}.jit", 0) for r in rounds["proxy"])
       for k in ("proxy", "gateway", "registry")}
requests = sum(r["requests"] for r in rounds["proxy"])
services = cpu["gateway"] + cpu["registry"]
print(f"  CPU over the proxied rounds ({requests} requests): proxy {cpu['proxy']:.1f} s, "
      f"gateway {cpu['gateway']:.1f} s, registry {cpu['registry']:.1f} s; "
      f"proxy = {100 * cpu['proxy'] / max(services, 1e-9):.1f} % of the services'; "
      f"per request: proxy {1000 * cpu['proxy'] / max(requests, 1):.3f} ms, "
      f"gateway {1000 * cpu['gateway'] / max(requests, 1):.3f} ms, registry {1000 * cpu['registry'] / max(requests, 1):.3f} ms")
PY
}

# Untimed warm-up runs of 10 s until one fails nothing and its p99 is within a fifth of the
# run before (at most WARMUP_RUNS). On a freshly started stack a fixed 10 s was not enough:
# the first timed round met JVMs still compiling, whose slow answers filled the gateway's
# 64 concurrent reads (ELVES_GATEWAY_MAX_READS), and it shed the rest with 429 (2026-11-27:
# 13 % of the first round, whichever path it ran; none once warm).
warm_up() {
  local url="$1" n
  for n in $(seq "${WARMUP_RUNS}"); do
    run warmup "${url}" 10s
    if python3 - "${WORK}/warmup.jsonl" <<'PY'
import json, sys
runs = [json.loads(line) for line in open(sys.argv[1])]
settled = len(runs) >= 2 and runs[-1]["failed"] == 0 and abs(runs[-1]["p99"] - runs[-2]["p99"]) <= 0.2 * runs[-2]["p99"]
sys.exit(0 if settled else 1)
PY
    then
      echo "  warm-up: settled after ${n} runs of 10s (no failure, p99 steady)"
      return
    fi
  done
  echo "  warm-up: NOT settled after ${WARMUP_RUNS} runs of 10s (the first rounds may meet compiling JVMs)"
}

balancing() {
  "${ELVES}" local status --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["proxy"]["balancing"])'
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
  echo "GET /api/v1/users/me at ${RATE}/s, ${ROUNDS} rounds of ${DURATION} per path, on $(nproc) cores" \
       "(load average $(cut -d' ' -f1 /proc/loadavg) at the start), balancing: $(balancing):"
  warm_up "http://127.0.0.1:$((8080 + OFFSET))"
  # Alternating which path goes first, so neither always meets the JVMs a round younger.
  local round
  for round in $(seq "${ROUNDS}"); do
    if ((round % 2)); then
      run proxy "http://127.0.0.1:$((8080 + OFFSET))"; run direct "http://127.0.0.1:${port}"
    else
      run direct "http://127.0.0.1:${port}"; run proxy "http://127.0.0.1:$((8080 + OFFSET))"
    fi
  done
  report
  echo "  (load average $(cut -d' ' -f1 /proc/loadavg) at the end)"
}

main "$@"
