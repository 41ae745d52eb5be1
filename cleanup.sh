#!/usr/bin/env bash
# Removes what ./deployments.sh installed or started.
#
#   ./cleanup.sh --local   stops the local supervisor by its PID (it stops its
#                          children gracefully), checks that none of the processes it
#                          started is left, then removes the local state (.elves/).
#                          The state is kept when a process survives, so a second
#                          run can still find it by PID.
#   ./cleanup.sh [OPTIONS] the cluster installation: tools/cluster/cleanup.sh
#                          (see `tools/cluster/cleanup.sh --help` for its options).
#
# Settings (environment):
#   ELVES_STATE_DIR      local state directory (default: <repo>/.elves)
#   ELVES_STOP_TIMEOUT   seconds the supervisor gets to stop everything (default: 120)
set -Eeuo pipefail

readonly REPO_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
readonly STATE_DIR="${ELVES_STATE_DIR:-${REPO_DIR}/.elves}"
readonly STOP_TIMEOUT="${ELVES_STOP_TIMEOUT:-120}"
readonly ELVES="${REPO_DIR}/.venv/bin/elves"
readonly SUPERVISOR_PID_FILE="${STATE_DIR}/run/supervisor.pid"
readonly CHILDREN="${STATE_DIR}/run/children.json"
readonly CHILDREN_AT_STOP="${STATE_DIR}/run/children-at-stop.json"

log() { echo "cleanup: $*" >&2; }
die() { log "error: $*"; exit 1; }

usage() {
  sed -n '2,/^set -E/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
}

# The supervisor's command line, to be sure the PID in the file is still ours.
is_supervisor() {
  local pid="$1"
  tr '\0' ' ' <"/proc/${pid}/cmdline" 2>/dev/null | grep -q 'local supervise'
}

stop_supervisor() {
  local pid deadline
  pid="$(cat "${SUPERVISOR_PID_FILE}" 2>/dev/null)" || { log "no supervisor pid file"; return; }
  if [[ -z ${pid} ]] || ! kill -0 "${pid}" 2>/dev/null || ! is_supervisor "${pid}"; then
    log "the supervisor (pid ${pid:-?}) is not running"
    return
  fi
  # What it runs now, to check afterwards that each of these processes has ended.
  if [[ -f ${CHILDREN} ]]; then
    cp "${CHILDREN}" "${CHILDREN_AT_STOP}"
  fi
  log "stopping the supervisor (pid ${pid}) and its children"
  kill -TERM "${pid}"
  deadline=$((SECONDS + STOP_TIMEOUT))
  while kill -0 "${pid}" 2>/dev/null; do
    if ((SECONDS > deadline)); then
      die "the supervisor (pid ${pid}) did not stop within ${STOP_TIMEOUT} s; see ${STATE_DIR}/logs/supervisor.log"
    fi
    sleep 0.5
  done
}

reap_children() {
  # Every process the supervisor recorded must be gone; one still alive (the supervisor
  # died, or its stop failed) is killed by its recorded PID, and a survivor stops the
  # cleanup with the state kept.
  local record
  for record in "${CHILDREN_AT_STOP}" "${CHILDREN}"; do
    [[ -f ${record} ]] || continue
    [[ -x ${ELVES} ]] || die "${ELVES} is missing; cannot read ${record}"
    "${ELVES}" local reap --record "${record}" \
      || die "processes of the local stack survive; state kept in ${STATE_DIR}"
  done
}

remove_state() {
  # Rename first, then delete: an interrupted removal never leaves a half-deleted
  # state directory where the next deployment would look.
  local doomed="${STATE_DIR}.removing.$$" stale
  for stale in "${STATE_DIR}".removing.*; do
    [[ -d ${stale} ]] && rm -rf "${stale}"
  done
  mv "${STATE_DIR}" "${doomed}"
  rm -rf "${doomed}"
  log "removed ${STATE_DIR}"
}

cleanup_local() {
  if [[ ! -d ${STATE_DIR} ]]; then
    log "nothing to clean: ${STATE_DIR} does not exist"
    return
  fi
  stop_supervisor
  reap_children
  remove_state
}

cleanup_cluster() {
  exec "${REPO_DIR}/tools/cluster/cleanup.sh" "$@"
}

main() {
  case "${1:-}" in
    --local) cleanup_local ;;
    -h|--help) usage ;;
    *) cleanup_cluster "$@" ;;
  esac
}

main "$@"
