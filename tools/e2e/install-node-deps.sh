#!/usr/bin/env bash
# Installs the Debian packages a throwaway single-node cluster needs (tools/e2e/cluster.sh)
# and the image builder (tools/e2e/build-images.sh). Versions are pinned by the
# distribution (Debian 12 bookworm): containerd 1.6.20, runc 1.1.5, CNI plugins 1.1.1, ...
#
# Idempotent: packages already installed are not touched and apt-get update runs only
# when something is missing. Nothing is started: Debian's maintainer scripts would try to
# start containerd through systemd or invoke-rc.d, so a policy-rc.d that refuses every
# start is in place for the duration of the install (these machines have no systemd;
# the cluster harness starts containerd by hand).
set -Eeuo pipefail

readonly PACKAGES=(
  containerd                 # the container runtime the kubelet talks to (CRI)
  runc                       # the OCI runtime containerd calls
  containernetworking-plugins # bridge, host-local, loopback (in /usr/lib/cni)
  etcd-server                # the API server's store
  mmdebstrap                 # Debian root filesystems for images, no registry
  umoci                      # root filesystem -> OCI image
  skopeo                     # OCI image -> docker-archive for `ctr images import`
  iptables                   # kube-proxy (iptables mode)
  conntrack                  # kube-proxy clears conntrack entries with it
  ipset                      # kube-router's NetworkPolicy firewall keeps pod addresses in ipsets
  socat                      # kubectl port-forward through the kubelet
  busybox-static             # the shell in small images
  iproute2                   # the dummy interface and host routes
  ca-certificates            # mmdebstrap reaching the Debian mirror over https
)

readonly SCRIPT_NAME=install-node-deps
# shellcheck source=../lib/log.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/log.sh"

missing_packages() {
  local p status
  for p in "${PACKAGES[@]}"; do
    status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
    [[ $status == "install ok installed" ]] || echo "$p"
  done
}

main() {
  [[ $(id -u) == 0 ]] || die "must run as root (apt-get install)"
  command -v apt-get >/dev/null || die "apt-get not found: this script expects Debian 12"

  local missing
  mapfile -t missing < <(missing_packages)
  if ((${#missing[@]} == 0)); then
    echo "install-node-deps: all ${#PACKAGES[@]} packages already installed"
    return 0
  fi

  echo "install-node-deps: installing ${missing[*]}"
  local policy=/usr/sbin/policy-rc.d had_policy=0
  [[ -e $policy ]] && had_policy=1
  if ((!had_policy)); then
    printf '#!/bin/sh\n# tools/e2e/install-node-deps.sh: no service starts during install\nexit 101\n' >"$policy"
    chmod 755 "$policy"
    trap 'rm -f "$policy"' EXIT
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  mapfile -t missing < <(missing_packages)
  ((${#missing[@]} == 0)) || die "still missing after install: ${missing[*]}"
  echo "install-node-deps: done"
}

main "$@"
