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
