#!/usr/bin/env bash
# Runs a command against the local stack and leaves the machine as it found it:
#
#   tools/with-local-stack.sh COMMAND [ARG...]
#
# starts the stack with ./deployments.sh --local (which waits until every replica is ready),
# runs COMMAND, and stops the stack again with ./cleanup.sh --local when this run started
# it, whether COMMAND passed, failed or was interrupted. A stack that was running before
# (its supervisor alive) stays running. The exit status is COMMAND's (or deployments.sh's
# when the stack did not come up); a failed cleanup turns a success into 1.
# `make test-local` runs tier 2 this way.
#
# Settings (environment): those of ./deployments.sh and ./cleanup.sh (ELVES_STATE_DIR,
# ELVES_LOCAL_PORT_OFFSET, ...), passed on to them and to COMMAND.
set -Eeuo pipefail

REPO_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly REPO_DIR
readonly SCRIPT_NAME=with-local-stack
# shellcheck source=lib/log.sh
source "${REPO_DIR}/tools/lib/log.sh"
# shellcheck source=facts.sh
source "${REPO_DIR}/tools/facts.sh"

STARTED_HERE=0  # 1 once this run has started a stack that was not running

# On exit, whatever the reason: stop the stack this run started, keep the command's status.
finish() {
  local status=$?
  trap - EXIT
  if [[ ${STARTED_HERE} == 1 ]]; then
    log "stopping the local stack this run started (./cleanup.sh --local)"
    if ! "${REPO_DIR}/cleanup.sh" --local; then
      log "error: ./cleanup.sh --local failed; the stack may still run (state in ${LOCAL_STATE_DIR})"
      ((status != 0)) || status=1
    fi
  fi
  exit "${status}"
}

main() {
  (($# > 0)) || die "no command given (usage: tools/with-local-stack.sh COMMAND [ARG...])"
  load_facts
  local pid
  if pid="$(local_supervisor_pid)"; then
    log "a local stack runs already (supervisor pid ${pid}, state in ${LOCAL_STATE_DIR}): it stays running"
  else
    STARTED_HERE=1
  fi
  trap finish EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  "${REPO_DIR}/deployments.sh" --local
  "$@"
}

main "$@"
