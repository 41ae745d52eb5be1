#!/usr/bin/env bash
# Runs a command while a build runs in the background, niced, then waits for that build:
#
#   tools/with-background-build.sh BUILD [ARG...] -- COMMAND [ARG...]
#
# `make test` runs tier 2 beside tools/e2e/prebuild.sh this way. Tier 2 mostly waits on the
# load it offers, so on a cold machine the 25 minutes of Go and image builds that tiers 3
# and 4 need fit into its idle time instead of following it. Niced to 19, the build gets a
# core only when the command leaves it idle, so the tests keep the machine they would have
# had alone.
#
# The exit status is COMMAND's; when COMMAND passed, the build's (its output is printed when
# it failed). A COMMAND that fails or is interrupted stops the build, its whole process group.
#
# Settings (environment):
#   ELVES_BUILD_TIMEOUT  seconds the build may still take after COMMAND ended (default: 3600)
set -Eeuo pipefail

REPO_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly REPO_DIR
readonly SCRIPT_NAME=with-background-build
# shellcheck source=lib/log.sh
source "${REPO_DIR}/tools/lib/log.sh"

readonly TIMEOUT="${ELVES_BUILD_TIMEOUT:-3600}"
BUILD_PID=""
BUILD_LOG=""
BUILD_NAME=""

# Stops the build (a session of its own: the whole group) if it still runs.
stop_build() {
  if [[ -n ${BUILD_PID} ]] && kill -0 "${BUILD_PID}" 2>/dev/null; then
    log "stopping the background build (pid ${BUILD_PID})"
    kill -TERM -- "-${BUILD_PID}" 2>/dev/null || true
    wait "${BUILD_PID}" 2>/dev/null || true
  fi
}

finish() {
  local status=$?
  trap - EXIT
  stop_build
  [[ -z ${BUILD_LOG} ]] || rm -f "${BUILD_LOG}"
  exit "${status}"
}

# Waits for the build with a deadline; prints its log when it failed or overran.
wait_for_build() {
  local deadline=$((SECONDS + TIMEOUT))
  log "waiting up to ${TIMEOUT} s for the background build (${BUILD_NAME})"
  while kill -0 "${BUILD_PID}" 2>/dev/null; do
    if ((SECONDS >= deadline)); then
      cat "${BUILD_LOG}" >&2
      die "${BUILD_NAME} still ran ${TIMEOUT} s after the command ended (ELVES_BUILD_TIMEOUT); stopped it"
    fi
    sleep 1
  done
  local status=0
  wait "${BUILD_PID}" || status=$?
  BUILD_PID=""
  if ((status != 0)); then
    cat "${BUILD_LOG}" >&2
    die "${BUILD_NAME} failed (status ${status}; its output is above)"
  fi
  tail -n 1 "${BUILD_LOG}" >&2
}

usage() { die "$1 (usage: tools/with-background-build.sh BUILD [ARG...] -- COMMAND [ARG...])"; }

main() {
  local build=()
  while (($# > 0)) && [[ $1 != -- ]]; do build+=("$1"); shift; done
  ((${#build[@]} > 0)) || usage "no build given"
  (($# > 1)) || usage "no command given after --"
  shift
  [[ ${TIMEOUT} =~ ^[0-9]+$ ]] || die "ELVES_BUILD_TIMEOUT must be a whole number of seconds, not '${TIMEOUT}'"
  BUILD_NAME="${build[0]}"
  trap finish EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  BUILD_LOG="$(mktemp "${TMPDIR:-/tmp}/elves-build.XXXXXX")"
  # setsid: the build and its compilers form one process group that stop_build can end.
  setsid nice -n 19 "${build[@]}" >"${BUILD_LOG}" 2>&1 &
  BUILD_PID=$!
  log "running ${BUILD_NAME} in the background (pid ${BUILD_PID}, niced)"
  "$@"
  wait_for_build
}

main "$@"
