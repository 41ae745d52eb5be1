#!/usr/bin/env bash
# Measures the services' capacity on this machine with k6 (open model) and their own metrics.
#   1. getData accepted per second by one gateway at p99 < 50 ms (a ramp of 15 s steps, 3 times), with
#      the rest of the system working on what it accepts;
#   2. ingestor jobs per minute per replica at its configured cost, while step 1's requests
#      wait in its queue (said so when the backlog ran out during the window);
#   3. activity logs persisted per second by one registry: addAppLog over HTTP (rate steps),
#      then its queue consumer draining a backlog of logs published straight to
#      elves.registry.applog.in.
# Prints figures; asserts nothing. Needs the services running (e.g. ./deployments.sh --local),
# k6 (tools/install-k6.sh) and the repo's .venv with pika (pip install -e 'operator[test]').
# Run it on a quiet machine: other work on the cores changes every figure. k6 runs on the same
# cores as the services, so near the limits the load generator takes its share of them too.
#   bench/services.sh                      # about 13 minutes with the defaults
# It leaves what step 1 queued for the ingestor (thousands of requests) in the queue; empty it
# with the local supervisor's reset: curl -X POST -d '{}' http://127.0.0.1:9400/reset
#
# Settings (environment):
#   ELVES_BENCH_GATEWAY_URL    default http://127.0.0.1:18080 (local mode's gateway-0)
#   ELVES_BENCH_REGISTRY_URL   default http://127.0.0.1:18180 (local mode's registry-0)
#   ELVES_BENCH_GATEWAY_METRICS   gateway /actuator/prometheus, default http://127.0.0.1:19080/actuator/prometheus
#   ELVES_BENCH_INGESTOR_METRICS  ingestor /actuator/prometheus, default http://127.0.0.1:19280/actuator/prometheus
#   ELVES_BENCH_REGISTRY_METRICS  registry /actuator/prometheus, default http://127.0.0.1:19180/actuator/prometheus
#   ELVES_BENCH_TOKEN          bearer token; else `elves token` for the local stack
#   ELVES_BENCH_GETDATA_RATES  default "200 400 600 800 1000 1200"
#   ELVES_BENCH_ADDAPPLOG_RATES default "400 800 1200 1600 2000 2400"
#   ELVES_BENCH_STEP           default 15s; ELVES_BENCH_REPEATS of each ramp, default 3
#   ELVES_BENCH_INGESTOR_WINDOW seconds, default 60
#   ELVES_BENCH_AMQP_PORT      the broker, default 5673 (local mode); ELVES_BENCH_AMQP_USER default elves
#   ELVES_BENCH_AMQP_PASSWORD  default: .elves/secrets/rabbitmq-password
#   ELVES_BENCH_DRAIN_COUNT    activity logs published for the consumer figure, default 100000
#   ELVES_BENCH_SUPERVISOR_URL the local mode's control API, default http://127.0.0.1:9400; when it
#                              answers, the registry is frozen while those logs are published
set -Eeuo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly ROOT
# shellcheck source=../tools/lib/cache-root.sh
source "${ROOT}/tools/lib/cache-root.sh"
readonly K6="${ELVES_CACHE}/bin/k6"
# The replicas themselves, not the local supervisor's proxy (8080/8081), which would be measured too.
readonly GATEWAY="${ELVES_BENCH_GATEWAY_URL:-http://127.0.0.1:18080}"
readonly REGISTRY="${ELVES_BENCH_REGISTRY_URL:-http://127.0.0.1:18180}"
readonly GATEWAY_METRICS="${ELVES_BENCH_GATEWAY_METRICS:-http://127.0.0.1:19080/actuator/prometheus}"
readonly INGESTOR_METRICS="${ELVES_BENCH_INGESTOR_METRICS:-http://127.0.0.1:19280/actuator/prometheus}"
readonly REGISTRY_METRICS="${ELVES_BENCH_REGISTRY_METRICS:-http://127.0.0.1:19180/actuator/prometheus}"
readonly SUPERVISOR="${ELVES_BENCH_SUPERVISOR_URL:-http://127.0.0.1:9400}"
readonly STEP="${ELVES_BENCH_STEP:-15s}"
readonly REPEATS="${ELVES_BENCH_REPEATS:-3}"
readonly PYTHON="$ROOT/.venv/bin/python"
readonly INGESTOR_QUEUE=elves.ingestor.data.in
WORK="$(mktemp -d)"
readonly WORK
trap 'rm -rf "$WORK"' EXIT

readonly SCRIPT_NAME=bench
# shellcheck source=../tools/lib/log.sh
source "${ROOT}/tools/lib/log.sh"

token() {
  if [[ -n "${ELVES_BENCH_TOKEN:-}" ]]; then echo "$ELVES_BENCH_TOKEN"; return; fi
  # The same signing code as every other Elves token (secret from the local stack's state).
  "$ROOT/.venv/bin/elves" token --user bench --ttl 7200 || die "no token: set ELVES_BENCH_TOKEN or start the local stack"
}

# The value of one counter series summed over its labels, from a Prometheus text page.
metric() {
  curl -sf --max-time 5 "$1" | awk -v name="$2" -v filter="${3:-}" \
    '$1 ~ "^"name"({|$)" && index($1, filter) { sum += $NF } END { printf "%.0f\n", sum }'
}

# The broker's settings for bench/registry_drain.py.
amqp() {
  local password="${ELVES_BENCH_AMQP_PASSWORD:-}"
  [[ -z "$password" && -f "$ROOT/.elves/secrets/rabbitmq-password" ]] && password="$(cat "$ROOT/.elves/secrets/rabbitmq-password")"
  [[ -n "$password" ]] || die "no broker password: set ELVES_BENCH_AMQP_PASSWORD"
  "$PYTHON" "$ROOT/bench/registry_drain.py" --port "${ELVES_BENCH_AMQP_PORT:-5673}" \
    --user "${ELVES_BENCH_AMQP_USER:-elves}" --password "$password" "$@"
}

# Ready messages in one queue.
depth() {
  amqp depth "$1" | awk '{print $2}'
}

# Runs one k6 step; prints "rate p99_ms failed_rate achieved_per_s cpu_ms_per_request", the last
# from the serving process's own CPU counter (a ratio that a noisy machine disturbs less).
step() {
  local target=$1 rate=$2 url=$3 metrics=$4 summary="$WORK/$1-$2.json" cpu_before cpu_after
  cpu_before=$(metric "$metrics" process_cpu_time_ns_total) || die "metrics unreachable at $metrics"
  # k6 exits non-zero when a check fails; the summary still says how the step went.
  ELVES_BENCH_TARGET="$target" ELVES_BENCH_RATE="$rate" ELVES_BENCH_URL="$url" ELVES_BENCH_TOKEN="${TOKEN:-}" \
    ELVES_SERVICE_KEY="${ELVES_SERVICE_KEY:-$(cat "$ROOT/.elves/secrets/service-key" 2>/dev/null)}" \
    ELVES_BENCH_DURATION="${DURATION:-$STEP}" ELVES_BENCH_TEST_ID="bench/$target/$rate/$$" \
    "$K6" run --quiet --no-color --summary-trend-stats "p(50),p(99),max" --summary-export "$summary" \
    "$ROOT/bench/k6/steady-rate.js" >"$WORK/k6.log" 2>&1 || true
  cpu_after=$(metric "$metrics" process_cpu_time_ns_total)
  [[ -s "$summary" ]] || die "k6 wrote no summary for $target at $rate/s: $(tail -3 "$WORK/k6.log")"
  python3 - "$summary" "$rate" "$((cpu_after - cpu_before))" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))["metrics"]
d, f, r = m["http_req_duration"], m["http_req_failed"], m["http_reqs"]
# Failed answers and iterations k6 dropped (no free VU: the service fell behind) both count.
dropped = m.get("dropped_iterations", {}).get("count", 0)
failed = (f.get("value", f.get("rate", 0)) * r["count"] + dropped) / max(1, r["count"] + dropped)
cpu_ms = int(sys.argv[3]) / 1e6 / max(1, r["count"])
print(f'{sys.argv[2]} {d["p(99)"]:.1f} {failed:.4f} {r["rate"]:.1f} {cpu_ms:.2f}')
PY
}

# Steps up the rate, the whole ramp REPEATS times; reports per rate the median p99 (and its
# range) and the sustained rate: the highest rate whose median p99 < 50 ms with no failures,
# below which every rate passed too. Repeated ramps rather than repeated steps, and medians,
# because one stall of this shared machine (a fraction of a second) decides a step's p99 alone:
# a stall then spoils one sample of a rate, not all of them.
ramp() {
  local target=$1 url=$2 metrics=$3 rates=$4 sustained=0 broken="" rate
  local -A samples=()
  # A short untimed step first: the JIT compiles the request path (the first seconds are slower).
  DURATION=10s step "$target" "${rates%% *}" "$url" "$metrics" >/dev/null
  for _ in $(seq "$REPEATS"); do
    for rate in $rates; do samples[$rate]+="$(step "$target" "$rate" "$url" "$metrics")"$'\n'; done
  done
  printf '  %-8s %-22s %-10s %-12s %s\n' "rate/s" "p99 ms (min-max)" "failed" "achieved/s" "CPU ms/request"
  for rate in $rates; do
    read -r r p99 range failed achieved cpu < <(median_of_repeats <<<"${samples[$rate]}")
    printf '  %-8s %-22s %-10s %-12s %s\n' "$r" "$p99 ($range)" "$failed" "$achieved" "$cpu"
    if python3 -c "import sys; sys.exit(0 if $p99 < 50 and $failed == 0 else 1)"; then
      [[ -n "$broken" ]] || sustained=$achieved
    else
      broken=${broken:-$rate}
    fi
  done
  echo "  => $target: $sustained per second sustained at p99 < 50 ms with no failures${broken:+ (first broken at $broken/s)}"
}

# Lines of step() for one rate in; "rate median_p99 min-max worst_failed median_achieved median_cpu" out.
median_of_repeats() {
  python3 -c '
import statistics, sys
rows = [line.split() for line in sys.stdin if line.strip()]
p99 = [float(r[1]) for r in rows]
median = lambda i: statistics.median(float(r[i]) for r in rows)
print(rows[0][0], f"{statistics.median(p99):.1f}", f"{min(p99):.0f}-{max(p99):.0f}",
      f"{max(float(r[2]) for r in rows):.4f}", f"{median(3):.1f}", f"{median(4):.2f}")'
}

ingestor_rate() {
  local window="${ELVES_BENCH_INGESTOR_WINDOW:-60}" before after cpu_before cpu_after backlog jobs
  backlog=$(depth "$INGESTOR_QUEUE")
  (( backlog > 0 )) || die "no backlog in $INGESTOR_QUEUE: step 1 queued nothing for the ingestor"
  before=$(metric "$INGESTOR_METRICS" elves_ingestor_job_seconds_count 'outcome="completed"') \
    || die "ingestor metrics unreachable at $INGESTOR_METRICS"
  cpu_before=$(metric "$INGESTOR_METRICS" process_cpu_time_ns_total)
  sleep "$window"  # the measurement window, not a wait for something
  after=$(metric "$INGESTOR_METRICS" elves_ingestor_job_seconds_count 'outcome="completed"')
  cpu_after=$(metric "$INGESTOR_METRICS" process_cpu_time_ns_total)
  backlog=$(depth "$INGESTOR_QUEUE")
  jobs=$((after - before))
  (( jobs > 0 )) || die "the ingestor completed no job in ${window} s"
  echo "  => ingestor: $(( jobs * 60 / window )) jobs per minute ($jobs in ${window} s," \
    "$(( (cpu_after - cpu_before) / jobs / 1000000 )) ms of CPU per job;" \
    "$( (( backlog > 0 )) && echo "$backlog still queued" || echo "the backlog ran out: a lower bound")), one replica"
}

registry_drain() {
  local freeze=()
  # Local mode: freeze the registry while the logs are published, so that it drains a backlog.
  export ELVES_CONTROL_TOKEN="${ELVES_CONTROL_TOKEN:-$(cat "$ROOT/.elves/secrets/control-token" 2>/dev/null)}"
  if curl -sf --max-time 2 -o /dev/null -H "Authorization: Bearer $ELVES_CONTROL_TOKEN" "$SUPERVISOR/state"; then
    freeze=(--freeze "$SUPERVISOR")
  fi
  echo "  => registry consumer: $(amqp drain --metrics "$REGISTRY_METRICS" --count "${ELVES_BENCH_DRAIN_COUNT:-100000}" "${freeze[@]}")"
}

main() {
  [[ -x "$K6" ]] || die "k6 not found at $K6: run tools/install-k6.sh first"
  [[ -x "$PYTHON" ]] || die "no $PYTHON: create the repo's .venv (see README)"
  TOKEN="$(token)"
  curl -sf --max-time 5 -o /dev/null -H "Authorization: Bearer $TOKEN" "$GATEWAY/api/v1/users/me" \
    || die "gateway at $GATEWAY does not answer an authenticated call"
  echo "machine: $(nproc) cores, $(free -g | awk '/Mem/ {print $2}') GiB; $(date -u +%FT%TZ)"
  echo "1. getData at the gateway ($GATEWAY), ${STEP} per step"
  ramp getData "$GATEWAY" "$GATEWAY_METRICS" "${ELVES_BENCH_GETDATA_RATES:-200 400 600 800 1000 1200}"
  echo "2. ingestor throughput while the getData backlog drains"
  ingestor_rate
  echo "3. registry: addAppLog over HTTP ($REGISTRY), then the queue consumer"
  ramp addAppLog "$REGISTRY" "$REGISTRY_METRICS" "${ELVES_BENCH_ADDAPPLOG_RATES:-400 800 1200 1600 2000 2400}"
  registry_drain
  echo "left in $INGESTOR_QUEUE: $(depth "$INGESTOR_QUEUE") (empty it: curl -X POST -d '{}' http://127.0.0.1:9400/reset)"
}

main "$@"
