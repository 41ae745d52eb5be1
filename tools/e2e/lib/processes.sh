# shellcheck shell=bash
# Processes the cluster harness starts, recorded so that `down` stops exactly those
# (sourced by tools/e2e/cluster.sh). Each is recorded as "name pid start-time": the start
# time (field 22 of /proc/PID/stat) guards against stopping a stranger that reused a PID.

start_time_of() { awk '{print $22}' "/proc/$1/stat" 2>/dev/null; }

# start_process NAME COMMAND...: runs COMMAND in its own session, output to logs/NAME.log.
start_process() {
  local name=$1
  shift
  mkdir -p "$STATE/logs"
  setsid "$@" >"$STATE/logs/$name.log" 2>&1 </dev/null &
  local pid=$!
  echo "$name $pid $(start_time_of "$pid")" >>"$STATE/processes"
}

# True when the recorded process is still the one we started.
recorded_alive() {
  local pid=$1 started=$2
  [[ -d /proc/$pid && $(start_time_of "$pid") == "$started" ]]
}

# pid_of NAME: the PID of a recorded process that is still alive (empty otherwise).
pid_of() {
  local name pid started
  [[ -f $STATE/processes ]] || return 0
  while read -r name pid started; do
    if [[ $name == "$1" ]] && recorded_alive "$pid" "$started"; then echo "$pid"; fi
  done <"$STATE/processes"
}

# stop_pid PID STARTED NAME: SIGTERM, then SIGKILL after a deadline.
stop_pid() {
  local pid=$1 started=$2 name=$3 deadline=$((SECONDS + ${STOP_TIMEOUT:-15}))
  recorded_alive "$pid" "$started" || return 0
  kill -TERM "$pid" 2>/dev/null || return 0
  while recorded_alive "$pid" "$started"; do
    if ((SECONDS >= deadline)); then
      log "$name (pid $pid) ignored SIGTERM for ${STOP_TIMEOUT:-15} s: SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
      sleep 0.2
      break
    fi
    sleep 0.1
  done
}

# stop_process NAME: stops one recorded process.
stop_process() {
  local name pid started
  [[ -f $STATE/processes ]] || return 0
  while read -r name pid started; do
    if [[ $name == "$1" ]]; then stop_pid "$pid" "$started" "$name"; fi
  done <"$STATE/processes"
}

# stop_all_processes: every recorded process, the last started first.
stop_all_processes() {
  [[ -f $STATE/processes ]] || return 0
  local name pid started
  while read -r name pid started; do
    stop_pid "$pid" "$started" "$name"
  done < <(tac "$STATE/processes")
}

# wait_for WHAT SECONDS COMMAND...: polls COMMAND until it succeeds; on the deadline,
# fails naming WHAT (and the log to read).
wait_for() {
  local what=$1 seconds=$2
  shift 2
  local deadline=$((SECONDS + seconds))
  until "$@" >/dev/null 2>&1; do
    if ((SECONDS >= deadline)); then
      log "gave up after $seconds s waiting for $what"
      return 1
    fi
    sleep 0.2
  done
}
