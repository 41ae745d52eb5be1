#!/usr/bin/env bash
# Installs what the local mode and the tests need on Debian 12 (etcd: the API-server tier's
# store, beside the kube-apiserver that tools/build-kubernetes.sh builds). Idempotent: a second run
# changes nothing. (The local node's RabbitMQ plugins and every other file under the state
# directory are written by the local mode itself, not here.)
#
# Packages come from Debian 12's repositories, so their versions are the release's
# (rabbitmq-server 3.10, prometheus 2.42, postgresql 15, OpenJDK 17, Maven 3.8,
# and ShellCheck 0.9 for the scripts' lint test).
# Debian starts a service when its package is installed; this script forbids that
# for the time of the install (policy-rc.d), as the local mode runs its own instances.
#
# It also creates an unprivileged system user per service (the supervisor, when root, runs
# each service as its own user; elves.local.os_users).
#
# Settings (environment):
#   ELVES_APT_MAX_AGE_HOURS  refresh apt's lists when older than this (default: 24)
set -Eeuo pipefail

readonly APT_MAX_AGE_HOURS="${ELVES_APT_MAX_AGE_HOURS:-24}"
readonly PACKAGES=(
  rabbitmq-server prometheus postgresql-15 openjdk-17-jdk-headless maven chromium
  python3-venv curl shellcheck haproxy iptables conntrack etcd-server
)
readonly POLICY_RC=/usr/sbin/policy-rc.d
# elves.local.os_users.SERVICE_USERS (a tier-1 test compares the two).
readonly SERVICE_USERS=(elves-gateway elves-registry elves-ingestor)

readonly SCRIPT_NAME=install-local-deps
# shellcheck source=lib/log.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/log.sh"

as_root() {
  if [[ ${EUID} -eq 0 ]]; then
    "$@"
  elif command -v sudo >/dev/null; then
    sudo "$@"
  else
    die "installing packages needs root (or sudo): $*"
  fi
}

missing_packages() {
  local package
  for package in "${PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "${package}" 2>/dev/null | grep -q 'install ok installed'; then
      echo "${package}"
    fi
  done
}

apt_lists_fresh() {
  # Fresh when some package list exists and is younger than the allowed age.
  [[ -n "$(find /var/lib/apt/lists -maxdepth 1 -name '*_Packages*' \
            -mmin "-$((APT_MAX_AGE_HOURS * 60))" -print -quit 2>/dev/null)" ]]
}

forbid_service_starts() {
  # Only our own policy file is removed again; an existing one is the machine's.
  if [[ -e ${POLICY_RC} ]]; then
    return
  fi
  printf '#!/bin/sh\n# Written by elves install-local-deps.sh for the time of an install.\nexit 101\n' \
    | as_root tee "${POLICY_RC}" >/dev/null
  as_root chmod 755 "${POLICY_RC}"
  trap 'as_root rm -f "${POLICY_RC}"' EXIT
}

install_packages() {
  local missing
  mapfile -t missing < <(missing_packages)
  if [[ ${#missing[@]} -eq 0 ]]; then
    log "packages already installed"
    return
  fi
  log "installing ${missing[*]}"
  if ! apt_lists_fresh; then
    as_root apt-get update -q
  fi
  forbid_service_starts
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
    "${missing[@]}"
}

create_service_users() {
  local user
  for user in "${SERVICE_USERS[@]}"; do
    if ! id -u "${user}" >/dev/null 2>&1; then
      log "creating the system user ${user}"
      as_root useradd --system --user-group --no-create-home --home-dir /nonexistent \
        --shell /usr/sbin/nologin "${user}"
    fi
  done
}

main() {
  [[ -r /etc/debian_version ]] || die "this script installs Debian packages; this is not Debian"
  install_packages
  create_service_users
}

main "$@"
