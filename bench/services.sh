#!/usr/bin/env bash
# Measures the services' capacity on this machine with k6 (open model) and their own metrics.
#   1. getData accepted per second by one gateway at p99 < 50 ms (rate steps, 20 s each);
#   2. ingestor jobs per minute per replica at its configured cost, while step 1's requests
#      wait in its queue (said so when the backlog ran out during the window);
#   3. activity logs persisted per second by one registry: addAppLog over HTTP (rate steps),
#      then its queue consumer draining logs published straight to elves.registry.applog.in.
# Prints figures; asserts nothing. Needs the services running (e.g. ./deployments.sh --local),
# k6 (tools/install-k6.sh) and the repo's .venv with pika (pip install -e 'operator[test]').
# Run it on a quiet machine: other work on the cores changes every figure.
#   bench/services.sh                      # about 6 minutes with the defaults
# It leaves what step 1 queued for the ingestor (thousands of requests) in the queue; empty it
# with the local supervisor's reset: curl -X POST -d '{}' http://127.0.0.1:9400/reset
#
# Settings (environment):
#   ELVES_BENCH_GATEWAY_URL    default http://127.0.0.1:8080
#   ELVES_BENCH_REGISTRY_URL   default http://127.0.0.1:8081
#   ELVES_BENCH_INGESTOR_METRICS  ingestor /actuator/prometheus, default http://127.0.0.1:19280/actuator/prometheus
#   ELVES_BENCH_REGISTRY_METRICS  registry /actuator/prometheus, default http://127.0.0.1:19180/actuator/prometheus
#   ELVES_BENCH_TOKEN          bearer token; else `elves token` for the local stack
#   ELVES_BENCH_GETDATA_RATES  default "50 100 200 400"; ELVES_BENCH_ADDAPPLOG_RATES default "100 200 400 800"
#   ELVES_BENCH_STEP           default 20s; ELVES_BENCH_INGESTOR_WINDOW seconds, default 60
#   ELVES_BENCH_AMQP_PORT      the broker, default 5673 (local mode); ELVES_BENCH_AMQP_USER default elves
#   ELVES_BENCH_AMQP_PASSWORD  default: .elves/secrets/rabbitmq-password
#   ELVES_BENCH_DRAIN_COUNT    activity logs published for the consumer figure, default 20000
set -Eeuo pipefail

readonly ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly K6="${ELVES_CACHE:-$HOME/.cache/elves}/bin/k6"
readonly GATEWAY="${ELVES_BENCH_GATEWAY_URL:-http://127.0.0.1:8080}"
readonly REGISTRY="${ELVES_BENCH_REGISTRY_URL:-http://127.0.0.1:8081}"
readonly INGESTOR_METRICS="${ELVES_BENCH_INGESTOR_METRICS:-http://127.0.0.1:19280/actuator/prometheus}"
readonly REGISTRY_METRICS="${ELVES_BENCH_REGISTRY_METRICS:-http://127.0.0.1:19180/actuator/prometheus}"
readonly STEP="${ELVES_BENCH_STEP:-20s}"
readonly PYTHON="$ROOT/.venv/bin/python"
readonly INGESTOR_QUEUE=elves.ingestor.data.in
readonly WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

die() { echo "bench: $*" >&2; exit 1; }

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

# Runs one k6 step; prints "rate p99_ms failed_rate achieved_per_s".
step() {
  local target=$1 rate=$2 url=$3 summary="$WORK/$1-$2.json"
  # k6 exits non-zero when a check fails; the summary still says how the step went.
  ELVES_BENCH_TARGET="$target" ELVES_BENCH_RATE="$rate" ELVES_BENCH_URL="$url" ELVES_BENCH_TOKEN="${TOKEN:-}" \
    ELVES_BENCH_DURATION="$STEP" ELVES_BENCH_TEST_ID="bench/$target/$rate/$$" \
    "$K6" run --quiet --no-color --summary-trend-stats "p(50),p(99),max" --summary-export "$summary" \
    "$ROOT/bench/k6/steady-rate.js" >"$WORK/k6.log" 2>&1 || true
  [[ -s "$summary" ]] || die "k6 wrote no summary for $target at $rate/s: $(tail -3 "$WORK/k6.log")"
  python3 - "$summary" "$rate" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))["metrics"]
d, f, r = m["http_req_duration"], m["http_req_failed"], m["http_reqs"]
print(f'{sys.argv[2]} {d["p(99)"]:.1f} {f.get("value", f.get("rate", 0)):.4f} {r["rate"]:.1f}')
PY
}

# Steps up the rate; reports each step and the best rate with p99 < 50 ms and no failures.
ramp() {
  local target=$1 url=$2 rates=$3 best=0
  printf '  %-8s %-10s %-10s %s\n' "rate/s" "p99 ms" "failed" "achieved/s"
  for rate in $rates; do
    read -r r p99 failed achieved < <(step "$target" "$rate" "$url")
    printf '  %-8s %-10s %-10s %s\n' "$r" "$p99" "$failed" "$achieved"
    if python3 -c "import sys; sys.exit(0 if $p99 < 50 and $failed == 0 else 1)"; then best=$achieved; fi
  done
  echo "  => $target: $best per second at p99 < 50 ms with no failures"
}

ingestor_rate() {
  local window="${ELVES_BENCH_INGESTOR_WINDOW:-60}" before after backlog
  backlog=$(depth "$INGESTOR_QUEUE")
  (( backlog > 0 )) || die "no backlog in $INGESTOR_QUEUE: step 1 queued nothing for the ingestor"
  before=$(metric "$INGESTOR_METRICS" elves_ingestor_job_seconds_count 'outcome="completed"') \
    || die "ingestor metrics unreachable at $INGESTOR_METRICS"
  sleep "$window"  # the measurement window, not a wait for something
  after=$(metric "$INGESTOR_METRICS" elves_ingestor_job_seconds_count 'outcome="completed"')
  backlog=$(depth "$INGESTOR_QUEUE")
  echo "  => ingestor: $(( (after - before) * 60 / window )) jobs per minute ($((after - before)) in ${window} s;" \
    "$( (( backlog > 0 )) && echo "$backlog still queued" || echo "the backlog ran out: a lower bound")), one replica"
}

registry_drain() {
  echo "  => registry consumer: $(amqp drain --metrics "$REGISTRY_METRICS" --count "${ELVES_BENCH_DRAIN_COUNT:-20000}")"
}

main() {
  [[ -x "$K6" ]] || die "k6 not found at $K6: run tools/install-k6.sh first"
  [[ -x "$PYTHON" ]] || die "no $PYTHON: create the repo's .venv (see README)"
  TOKEN="$(token)"
  curl -sf --max-time 5 -o /dev/null -H "Authorization: Bearer $TOKEN" "$GATEWAY/api/v1/users/me" \
    || die "gateway at $GATEWAY does not answer an authenticated call"
  echo "machine: $(nproc) cores, $(free -g | awk '/Mem/ {print $2}') GiB; $(date -u +%FT%TZ)"
  echo "1. getData at the gateway ($GATEWAY), ${STEP} per step"
  ramp getData "$GATEWAY" "${ELVES_BENCH_GETDATA_RATES:-50 100 200 400}"
  echo "2. ingestor throughput while the getData backlog drains"
  ingestor_rate
  echo "3. registry: addAppLog over HTTP ($REGISTRY), then the queue consumer"
  ramp addAppLog "$REGISTRY" "${ELVES_BENCH_ADDAPPLOG_RATES:-100 200 400 800}"
  registry_drain
  echo "left in $INGESTOR_QUEUE: $(depth "$INGESTOR_QUEUE") (empty it: curl -X POST -d '{}' http://127.0.0.1:9400/reset)"
}

main "$@"
