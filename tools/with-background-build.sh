#!/usr/bin/env bash
# Runs a command while a build runs in the background, niced, then waits for that build; and,
# optionally, a job that needs part of the build, started beside the command once the build
# says that part is ready:
#
#   tools/with-background-build.sh BUILD [ARG...] [--then-beside JOB [ARG...]] -- COMMAND [ARG...]
#
# `make test` runs tier 2 (COMMAND) beside tools/e2e/prebuild.sh (BUILD) this way: tier 2 mostly
# waits on the load it offers, so on a cold machine the 25 minutes of Go and image builds that
# tiers 3 and 4 need fit into its idle time instead of following it. Then tier 4 (COMMAND) beside
# tier 3 (JOB), once tools/build-kubernetes.sh (BUILD) has found Kubernetes built: tier 4 leaves
# more than a core idle, and tier 3's 6 minutes fit there.
#
# Niced: the build to 19, so it gets a core only when the others leave it idle; the job to
# ELVES_BESIDE_NICENESS (15): its waits have deadlines (30 s and more), which a job niced to 19
# (a weight of 15 against 1024 at 0) could overrun while the command restarts JVMs on both
# cores; and beside tier 2 it must yield to its ingestor, which the local stack runs at 10
# (weight 110): at 10 the job was the ingestor's equal, and a quickstart beside it did not drain
# in time (2026-11-30). At 15 it weighs a third of the ingestor. Each runs in a session of its own, so the
# session's weight is set too: with autogroup scheduling (Debian's default) the kernel shares
# the cores between sessions first, and a nice value alone would only rank a session's
# processes against each other.
#
# BUILD says when the job may start by creating the file $ELVES_BUILD_READY; a build that
# never does lets the job start when it has succeeded. A build that fails starts no job.
#
# The exit status is COMMAND's; when COMMAND passed, the build's, then the job's. The output
# of a build that failed is printed; the job's output is printed whole when COMMAND has ended
# (not into the middle of COMMAND's), passed or not. A COMMAND that fails or is interrupted
# stops the build and the job, each its whole process group.
#
# Settings (environment):
#   ELVES_BUILD_TIMEOUT    seconds the build and the job may still take after COMMAND ended (default: 3600)
#   ELVES_BESIDE_NICENESS  the job's nice value, 0-19 (default: 15)
set -Eeuo pipefail

REPO_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly REPO_DIR
readonly SCRIPT_NAME=with-background-build
# shellcheck source=lib/log.sh
source "${REPO_DIR}/tools/lib/log.sh"

readonly TIMEOUT="${ELVES_BUILD_TIMEOUT:-3600}"
readonly JOB_NICENESS="${ELVES_BESIDE_NICENESS:-15}"
readonly BUILD_NICENESS=19
# Run by `setsid bash -c` as a new session's first process: gives the session its weight
# (autogroup scheduling; a kernel without it has no such file, and the nice value alone
# applies), then runs the program with the same nice value. Usage: NICENESS PROGRAM [ARG...].
# shellcheck disable=SC2016 # expanded by the session's bash
readonly IN_NICED_SESSION='niceness=$1; shift
{ [[ ! -e /proc/self/autogroup ]] || echo "${niceness}" >/proc/self/autogroup; } 2>/dev/null ||
  echo "with-background-build: warning: could not set the session nice value to ${niceness}" >&2
exec nice -n "${niceness}" "$@"'
WORK=""
BUILD_PID=""
BUILD_NAME=""
JOB_PID=""
JOB_NAME=""

# Ends a background session (its whole process group) if it still runs; a job still waiting
# for the build is no group leader yet, so it is ended alone.
stop() {
  local pid=$1 what=$2
  if [[ -n ${pid} ]] && kill -0 "${pid}" 2>/dev/null; then
    log "stopping ${what} (pid ${pid})"
    kill -TERM -- "-${pid}" 2>/dev/null || kill -TERM "${pid}" 2>/dev/null || true
    wait "${pid}" 2>/dev/null || true
  fi
}

finish() {
  local status=$?
  trap - EXIT
  stop "${BUILD_PID}" "the background build"
  if [[ -n ${JOB_PID} ]]; then
    local outcome="stopped before it ended" job_status=0
    if kill -0 "${JOB_PID}" 2>/dev/null; then
      stop "${JOB_PID}" "${JOB_NAME}"
    else  # it ended while the command ran (bash keeps the status of a child it reaped)
      wait "${JOB_PID}" || job_status=$?
      outcome="ended with status ${job_status}"
    fi
    print_job_log "${outcome}"
  fi
  [[ -z ${WORK} ]] || rm -rf "${WORK}"
  exit "${status}"
}

# Runs in the background as the job's PID: waits until the build says the job may start
# (it exits 0 without starting it when the build ends without saying so: the build failed),
# then becomes the job, in a session of its own, niced, its output into job.log.
start_job_when_ready() {
  trap 'exit 143' TERM
  until [[ -e ${WORK}/ready ]]; do
    kill -0 "${BUILD_PID}" 2>/dev/null || [[ -e ${WORK}/ready ]] || exit 0
    sleep 1
  done
  touch "${WORK}/job.started"
  exec setsid bash -c "${IN_NICED_SESSION}" job "${JOB_NICENESS}" "$@" >"${WORK}/job.log" 2>&1
}

# The job's whole log and what became of it; nothing when it never started.
print_job_log() {
  [[ -e ${WORK}/job.started ]] || return 0
  {
    echo "----- ${JOB_NAME}, run beside (niced to ${JOB_NICENESS}): $1; its output:"
    cat "${WORK}/job.log"
    echo "----- end of ${JOB_NAME}'s output"
  } >&2
  rm -f "${WORK}/job.started"
}

# Waits for a background process until the deadline; dies naming it when it overruns.
wait_until() {
  local pid=$1 what=$2 deadline=$3
  while kill -0 "${pid}" 2>/dev/null; do
    if ((SECONDS >= deadline)); then
      [[ ${what} != "${BUILD_NAME}" ]] || cat "${WORK}/build.log" >&2
      die "${what} still ran ${TIMEOUT} s after the command ended (ELVES_BUILD_TIMEOUT); stopped it"
    fi
    sleep 1
  done
}

# Waits for the build, then the job, with one deadline; fails naming whichever failed.
wait_for_background() {
  local deadline=$((SECONDS + TIMEOUT)) status=0
  log "waiting up to ${TIMEOUT} s for the background build (${BUILD_NAME})${JOB_NAME:+ and ${JOB_NAME}}"
  wait_until "${BUILD_PID}" "${BUILD_NAME}" "${deadline}"
  wait "${BUILD_PID}" || status=$?
  BUILD_PID=""
  if ((status != 0)); then
    cat "${WORK}/build.log" >&2
    die "${BUILD_NAME} failed (status ${status}; its output is above)"
  fi
  tail -n 1 "${WORK}/build.log" >&2
  [[ -n ${JOB_PID} ]] || return 0
  wait_until "${JOB_PID}" "${JOB_NAME}" "${deadline}"
  [[ -e ${WORK}/job.started ]] || die "${JOB_NAME} never started although ${BUILD_NAME} succeeded"
  wait "${JOB_PID}" || status=$?
  JOB_PID=""
  print_job_log "ended with status ${status}"
  ((status == 0)) || die "${JOB_NAME} failed (status ${status}; its output is above)"
}

usage() { die "$1 (usage: tools/with-background-build.sh BUILD [ARG...] [--then-beside JOB [ARG...]] -- COMMAND [ARG...])"; }

main() {
  local build=() job=()
  while (($# > 0)) && [[ $1 != -- && $1 != --then-beside ]]; do build+=("$1"); shift; done
  if (($# > 0)) && [[ $1 == --then-beside ]]; then
    shift
    while (($# > 0)) && [[ $1 != -- ]]; do job+=("$1"); shift; done
    ((${#job[@]} > 0)) || usage "no job given after --then-beside"
  fi
  ((${#build[@]} > 0)) || usage "no build given"
  (($# > 1)) || usage "no command given after --"
  shift
  [[ ${TIMEOUT} =~ ^[0-9]+$ ]] || die "ELVES_BUILD_TIMEOUT must be a whole number of seconds, not '${TIMEOUT}'"
  if [[ ! ${JOB_NICENESS} =~ ^[0-9]+$ ]] || ((JOB_NICENESS > 19)); then
    die "ELVES_BESIDE_NICENESS must be a nice value from 0 to 19, not '${JOB_NICENESS}'"
  fi
  BUILD_NAME="${build[0]}"
  trap finish EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  WORK="$(mktemp -d "${TMPDIR:-/tmp}/elves-build.XXXXXX")"
  # setsid: the build and its compilers form one process group that finish() can end. Its
  # success also says the job may start, if it did not say so earlier.
  # shellcheck disable=SC2016 # expanded by the build's bash
  ELVES_BUILD_READY="${WORK}/ready" setsid bash -c "${IN_NICED_SESSION}" build "${BUILD_NICENESS}" \
    bash -c '"$@" && touch "${ELVES_BUILD_READY}"' build "${build[@]}" >"${WORK}/build.log" 2>&1 &
  BUILD_PID=$!
  log "running ${BUILD_NAME} in the background (pid ${BUILD_PID}, niced to ${BUILD_NICENESS})"
  if ((${#job[@]} > 0)); then
    JOB_NAME="${job[*]}"
    start_job_when_ready "${job[@]}" &
    JOB_PID=$!
    log "${JOB_NAME} starts beside it once ${BUILD_NAME} says it may (niced to ${JOB_NICENESS})"
  fi
  "$@"
  wait_for_background
}

main "$@"
