# Sourced by the scripts that need facts the Python owns (the system's deployments, the
# local mode's paths and URLs) instead of restating them: `load_facts` sets them as the
# shell assignments operator/elves/shell_env.py prints (`elves local env` prints the same).
# It runs with the system's python3, so no virtualenv is needed. The sourcing script
# defines REPO_DIR and die first.
# shellcheck shell=bash

load_facts() {
  local facts
  facts="$(PYTHONPATH="${REPO_DIR}/operator" python3 -m elves.shell_env)" \
    || die "python3 -m elves.shell_env failed (see above)"
  eval "${facts}"
}

# The local supervisor's pid when one runs (its pid file names a live process whose command
# line is `elves local supervise`, not a stranger that got the pid later); status 1 when none
# does. Needs load_facts first.
local_supervisor_pid() {
  local pid
  pid="$(cat "${LOCAL_SUPERVISOR_PID_FILE}" 2>/dev/null)" || return 1
  [[ -n ${pid} ]] && kill -0 "${pid}" 2>/dev/null || return 1
  tr '\0' ' ' <"/proc/${pid}/cmdline" 2>/dev/null | grep -q 'local supervise' || return 1
  echo "${pid}"
}
