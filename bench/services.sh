#!/usr/bin/env bash
# Measures the services' capacity on this machine with k6 (open model) and their own metrics.
#   1. getData accepted per second by one gateway at p99 < 50 ms (rate steps, 20 s each);
#   2. ingestor jobs per minute per replica at its configured cost (while a backlog exists);
#   3. activity logs persisted per second by one registry: addAppLog over HTTP (rate steps),
#      and the queue consumer draining the logs that step 1 queued.
# Prints figures; asserts nothing. Needs the services running (e.g. ./deployments.sh --local).
#
# Settings (environment):
#   ELVES_BENCH_GATEWAY_URL    default http://127.0.0.1:8080
#   ELVES_BENCH_REGISTRY_URL   default http://127.0.0.1:8081
#   ELVES_BENCH_INGESTOR_METRICS  ingestor /actuator/prometheus, default http://127.0.0.1:19280/actuator/prometheus
#   ELVES_BENCH_REGISTRY_METRICS  registry /actuator/prometheus, default http://127.0.0.1:19180/actuator/prometheus
#   ELVES_BENCH_TOKEN          bearer token; else made from ELVES_JWT_SECRET or .elves/secrets/jwt-secret
#   ELVES_BENCH_GETDATA_RATES  default "50 100 200 400"; ELVES_BENCH_ADDAPPLOG_RATES default "100 200 400 800"
#   ELVES_BENCH_STEP           default 20s; ELVES_BENCH_INGESTOR_WINDOW seconds, default 60
set -Eeuo pipefail

readonly ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly K6="${ELVES_CACHE:-$HOME/.cache/elves}/bin/k6"
readonly GATEWAY="${ELVES_BENCH_GATEWAY_URL:-http://127.0.0.1:8080}"
readonly REGISTRY="${ELVES_BENCH_REGISTRY_URL:-http://127.0.0.1:8081}"
readonly INGESTOR_METRICS="${ELVES_BENCH_INGESTOR_METRICS:-http://127.0.0.1:19280/actuator/prometheus}"
readonly REGISTRY_METRICS="${ELVES_BENCH_REGISTRY_METRICS:-http://127.0.0.1:19180/actuator/prometheus}"
readonly STEP="${ELVES_BENCH_STEP:-20s}"
readonly WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

die() { echo "bench: $*" >&2; exit 1; }

token() {
  if [[ -n "${ELVES_BENCH_TOKEN:-}" ]]; then echo "$ELVES_BENCH_TOKEN"; return; fi
  local secret="${ELVES_JWT_SECRET:-}"
  [[ -z "$secret" && -f "$ROOT/.elves/secrets/jwt-secret" ]] && secret="$(cat "$ROOT/.elves/secrets/jwt-secret")"
  [[ -n "$secret" ]] || die "no token: set ELVES_BENCH_TOKEN or ELVES_JWT_SECRET"
  SECRET="$secret" python3 - <<'PY'
import base64, hashlib, hmac, json, os, time
def b64(raw): return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
head = b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
body = b64(json.dumps({"sub": "bench", "admin": False, "exp": int(time.time()) + 7200}).encode())
sig = b64(hmac.new(os.environ["SECRET"].encode(), f"{head}.{body}".encode(), hashlib.sha256).digest())
print(f"{head}.{body}.{sig}")
PY
}

# The value of one counter series summed over its labels, from a Prometheus text page.
metric() {
  curl -sf --max-time 5 "$1" | awk -v name="$2" -v filter="${3:-}" \
    '$1 ~ "^"name"({|$)" && index($1, filter) { sum += $NF } END { printf "%.0f\n", sum }'
}

# Runs one k6 step; prints "rate p99_ms failed_rate achieved_per_s".
step() {
  local target=$1 rate=$2 url=$3 summary="$WORK/$1-$2.json"
  ELVES_BENCH_TARGET="$target" ELVES_BENCH_RATE="$rate" ELVES_BENCH_URL="$url" ELVES_BENCH_TOKEN="${TOKEN:-}" \
    ELVES_BENCH_DURATION="$STEP" ELVES_BENCH_TEST_ID="bench/$target/$rate/$$" \
    "$K6" run --quiet --no-color --summary-trend-stats "p(50),p(99),max" --summary-export "$summary" \
    "$ROOT/bench/k6/steady-rate.js" >"$WORK/k6.log" 2>&1 || true
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
  local window="${ELVES_BENCH_INGESTOR_WINDOW:-60}" before after
  before=$(metric "$INGESTOR_METRICS" elves_ingestor_job_seconds_count 'outcome="completed"') \
    || die "ingestor metrics unreachable at $INGESTOR_METRICS"
  sleep "$window"
  after=$(metric "$INGESTOR_METRICS" elves_ingestor_job_seconds_count 'outcome="completed"')
  echo "  => ingestor: $(( (after - before) * 60 / window )) jobs per minute ($((after - before)) in ${window} s, backlog present)"
}

registry_drain() {
  local before after
  before=$(metric "$REGISTRY_METRICS" elves_registry_logs_persisted_total) || die "registry metrics unreachable"
  sleep 10
  after=$(metric "$REGISTRY_METRICS" elves_registry_logs_persisted_total)
  echo "  => registry: $(( (after - before) / 10 )) logs persisted per second over the last 10 s"
}

main() {
  [[ -x "$K6" ]] || die "k6 not found at $K6: run tools/install-k6.sh first"
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
}

main "$@"
