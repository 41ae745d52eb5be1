#!/usr/bin/env bash
# Prints the path of the helm that every script and test of this repository uses, so there
# is one lookup: ELVES_HELM, else the pinned helm tools/install-helm.sh builds
# ($ELVES_CACHE/bin/helm), else helm on PATH. Exits 1, saying what to do, when there is none.
#
# Settings (environment):
#   ELVES_HELM    a helm binary to use whatever else there is
#   ELVES_CACHE   cache root (default: $HOME/.cache/elves)
set -Eeuo pipefail

# shellcheck source=lib/cache-root.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/cache-root.sh"

main() {
  local cached="${ELVES_CACHE}/bin/helm"
  if [[ -n ${ELVES_HELM:-} ]]; then
    echo "${ELVES_HELM}"
  elif [[ -x ${cached} ]]; then
    echo "${cached}"
  elif ! command -v helm; then
    echo "which-helm: no helm: run tools/install-helm.sh (or make helm), set ELVES_HELM, or put helm on PATH" >&2
    exit 1
  fi
}

main "$@"
