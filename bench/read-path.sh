#!/usr/bin/env bash
# The read path through the user's path (`elves run`, the local Service, k6 on the same cores):
# runs a LoadTest (default loadtests/examples/read-path-breakpoint.yaml; overload.yaml for
# graceful overload) and prints its verdict lines, the breakpoint, and CPU per request of every process
# (gateway, registry, PostgreSQL, RabbitMQ, ingestor and the proxy from /proc, bench/proc_cpu.py;
# k6 and the engine from the harness's CPU line) over the whole run; for a load that drops
# (overload.yaml), the p99 of accepted and of refused requests during the overload and how
# long p99 took to be back under 50 ms (bench/overload_figures.py).
# CPU per request is the figure to compare between builds on a busy machine: latency and the
# breakpoint move with whatever else runs on the cores; say how busy it was (load average).
# Past capacity k6 and the system fight for shared cores and k6 counts its own wait as latency:
# for overload figures, give k6 a core of its own (ELVES_LOCAL_LOAD_CPUS=0 ./deployments.sh
# --local; the first line printed names the split).
#
# Needs the local stack running (./deployments.sh --local).
#   bench/read-path.sh [LOADTEST.yaml]
#
# Settings (environment):
#   ELVES_LOCAL_PORT_OFFSET  the stack's port offset (default: 0)
#   ELVES_STATE_DIR          the stack's state directory (default: <repo>/.elves)
set -Eeuo pipefail

REPO_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly REPO_DIR
readonly ELVES="${REPO_DIR}/.venv/bin/elves"
readonly LOADTEST="${1:-${REPO_DIR}/loadtests/examples/read-path-breakpoint.yaml}"
WORK="$(mktemp -d)"
readonly WORK
trap 'rm -rf "${WORK}"' EXIT

readonly SCRIPT_NAME=bench-read-path
# shellcheck source=../tools/lib/log.sh
source "${REPO_DIR}/tools/lib/log.sh"

cpu() { "${REPO_DIR}/.venv/bin/python" "${REPO_DIR}/bench/proc_cpu.py"; }

main() {
  local status split
  status="$("${ELVES}" local status)" || die "the local stack is not ready: ./deployments.sh --local"
  split="$(sed -n 's/^cpus *//p' <<<"${status}")"  # ELVES_LOCAL_LOAD_CPUS, if the stack has it
  echo "$(basename "${LOADTEST}") on $(nproc) cores${split:+ (${split})}, load average $(cut -d' ' -f1 /proc/loadavg) at the start"
  local before after
  before="$(cpu)"
  "${ELVES}" run --reports "${WORK}/reports" "${LOADTEST}" >"${WORK}/run.log" 2>&1 || true
  after="$(cpu)"
  grep -E '^(all |warm-up|breakpoint|dropped|ledger|Harness|Verdict|gateway |registry )' "${WORK}/run.log" \
    | sed 's/^/  /' || die "elves run printed no summary: $(tail -5 "${WORK}/run.log")"
  python3 - "${before}" "${after}" "${WORK}/run.log" <<'PY'
import json, re, sys
before, after, log = json.loads(sys.argv[1]), json.loads(sys.argv[2]), open(sys.argv[3]).read()
# Requests k6 sent over the whole run: the warm-up's and the rest's.
total = sum(int(n) for n in re.findall(r"^all\s+(\d+)", log, re.M))
total += sum(int(n) for n in re.findall(r"^warm-up: .*?\((\d+) requests", log, re.M))
harness = dict((name, float(s)) for name, s in re.findall(r"(engine|k6) ([\d.]+)s \(", log))
cpu = {name: after[name] - before[name] for name in after if name in before}
cpu.update(harness)
per = lambda seconds: 1000 * seconds / max(total, 1)
print(f"  CPU per request over {total} requests, ms (in brackets: without the JIT compiler threads):")
for name, seconds in sorted(((n, s) for n, s in cpu.items() if not n.endswith(".jit")), key=lambda kv: -kv[1]):
    jit = cpu.get(f"{name}.jit")
    print(f"    {name:<10} {per(seconds):6.2f}" + ("" if jit is None else f"  ({per(seconds - jit):.2f})"))
PY
  local report
  report="$(sed -n 's/^Report: //p' "${WORK}/run.log")"
  if [[ -n "${report}" ]]; then
    "${REPO_DIR}/.venv/bin/python" "${REPO_DIR}/bench/overload_figures.py" "$(dirname "${report}")"
  fi
  echo "  load average $(cut -d' ' -f1 /proc/loadavg) at the end"
}

main "$@"
