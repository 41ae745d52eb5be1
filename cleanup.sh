#!/usr/bin/env bash
# Removes what ./deployments.sh installed or started.
#
#   ./cleanup.sh --local   stops the local supervisor by its PID (it stops its
#                          children gracefully), checks that none of the processes it
#                          started is left, then removes the local state directory, but
#                          only one that ./deployments.sh --local created (it holds the
#                          marker file .elves-state): any other path is refused, named.
#                          The state is kept when a process survives, so a second
#                          run can still find it by PID.
#   ./cleanup.sh [OPTIONS] the cluster installation: tools/cluster/cleanup.sh
#                          (see `tools/cluster/cleanup.sh --help` for its options).
#
# Settings (environment):
#   ELVES_STATE_DIR      local state directory (default: <repo>/.elves)
#   ELVES_STOP_TIMEOUT   seconds the supervisor gets to stop everything (default: 120)
# Paths come from the Python (tools/facts.sh: `elves local env`).
set -Eeuo pipefail

REPO_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
readonly REPO_DIR
readonly STOP_TIMEOUT="${ELVES_STOP_TIMEOUT:-120}"
readonly ELVES="${REPO_DIR}/.venv/bin/elves"

readonly SCRIPT_NAME=cleanup
# shellcheck source=tools/lib/log.sh
source "${REPO_DIR}/tools/lib/log.sh"

usage() {
  sed -n '2,/^set -E/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
}

# shellcheck source=tools/facts.sh
source "${REPO_DIR}/tools/facts.sh"

stop_supervisor() {
  local recorded pid deadline
  recorded="$(cat "${LOCAL_SUPERVISOR_PID_FILE}" 2>/dev/null)" || { log "no supervisor pid file"; return; }
  if ! pid="$(local_supervisor_pid)"; then
    log "the supervisor (pid ${recorded:-?}) is not running"
    return
  fi
  # What it runs now, to check afterwards that each of these processes has ended.
  if [[ -f ${LOCAL_CHILDREN} ]]; then
    cp "${LOCAL_CHILDREN}" "${LOCAL_CHILDREN_AT_STOP}"
  fi
  log "stopping the supervisor (pid ${pid}) and its children"
  kill -TERM "${pid}"
  deadline=$((SECONDS + STOP_TIMEOUT))
  while kill -0 "${pid}" 2>/dev/null; do
    if ((SECONDS > deadline)); then
      die "the supervisor (pid ${pid}) did not stop within ${STOP_TIMEOUT} s; see ${LOCAL_SUPERVISOR_LOG}"
    fi
    sleep 0.5
  done
}

reap_children() {
  # Every process the supervisor recorded must be gone; one still alive (the supervisor
  # died, or its stop failed) is killed by its recorded PID, and a survivor stops the
  # cleanup with the state kept.
  local record
  for record in "${LOCAL_CHILDREN_AT_STOP}" "${LOCAL_CHILDREN}"; do
    [[ -f ${record} ]] || continue
    [[ -x ${ELVES} ]] || die "${ELVES} is missing; cannot read ${record}"
    "${ELVES}" local reap --record "${record}" \
      || die "processes of the local stack survive; state kept in ${LOCAL_STATE_DIR}"
  done
}

# True when directory $1 is one the local mode created: a real directory (not a link)
# holding the marker file, which `elves local prepare` writes only into a directory it created.
created_by_us() {
  [[ -d $1 && ! -L $1 && -f $1/${LOCAL_STATE_MARKER##*/} && ! -L $1/${LOCAL_STATE_MARKER##*/} ]]
}

remove_state() {
  # Rename first, then delete: an interrupted removal never leaves a half-deleted
  # state directory where the next deployment would look.
  local doomed="${LOCAL_STATE_DIR}.removing.$$" stale
  created_by_us "${LOCAL_STATE_DIR}" \
    || die "not removing ${LOCAL_STATE_DIR}: it has no marker file ${LOCAL_STATE_MARKER##*/}, so ./deployments.sh --local did not create it (its processes are stopped; delete it yourself if it is yours to delete)"
  for stale in "${LOCAL_STATE_DIR}".removing.*; do
    if created_by_us "${stale}"; then
      rm -rf "${stale}"
    fi
  done
  mv "${LOCAL_STATE_DIR}" "${doomed}"
  rm -rf "${doomed}"
  log "removed ${LOCAL_STATE_DIR}"
}

cleanup_local() {
  load_facts
  if [[ ! -e ${LOCAL_STATE_DIR} ]]; then
    log "nothing to clean: ${LOCAL_STATE_DIR} does not exist"
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
