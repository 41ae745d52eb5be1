# shellcheck shell=bash
# Changes the cluster makes to the host, each recorded at `up` and undone at `down`
# (sourced by tools/e2e/cluster.sh): the sink device and its routes, the bridge,
# iptables chains, ipsets, sysctls, pod network namespaces, mounts, cgroups.

# Sysctls that kubelet or kube-proxy may set: their values before `up` are restored.
readonly TOUCHED_SYSCTLS=(vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops
  kernel.keys.root_maxkeys kernel.keys.root_maxbytes net.ipv4.conf.all.route_localnet
  net.bridge.bridge-nf-call-iptables net.bridge.bridge-nf-call-ip6tables net.ipv4.ip_forward)

# --- before up: what the host looks like ---------------------------------------

record_baseline() {
  local b=$STATE/baseline
  mkdir -p "$b"
  local s
  for s in "${TOUCHED_SYSCTLS[@]}"; do
    echo "$s $(sysctl -n "$s" 2>/dev/null)"
  done >"$b/sysctls"
  iptables_chains iptables-save >"$b/iptables"
  iptables_chains ip6tables-save >"$b/ip6tables"
  ipset list -n 2>/dev/null >"$b/ipsets" || true
  ls /var/run/netns 2>/dev/null >"$b/netns" || true
  local h
  for h in /sys/fs/cgroup/*/; do [[ -d $h/kubepods ]] && echo "$h"; done >"$b/cgroups" || true
}

# "table chain" for every chain iptables-save shows.
iptables_chains() {
  "$1" 2>/dev/null | awk '/^\*/{t=substr($1,2)} /^:/{print t, substr($1,2)}'
}

# --- network -------------------------------------------------------------------

# The node's address lives on a sink device, and the pod and service ranges are routed
# to it: a packet for a cluster address that no bridge or kube-proxy rule claims is
# dropped here instead of following the default route off the machine. The sink is a
# bridge without ports (this kernel has no dummy driver): whatever it is given to send
# goes nowhere, while its own address is local like any other.
make_network() {
  ip link add "$SINK" type bridge
  echo "$SINK" >>"$STATE/links"
  ip addr add "$NODE_IP/32" dev "$SINK"
  ip link set "$SINK" up
  ip route add "$POD_CIDR" dev "$SINK"
  ip route add "$SERVICE_CIDR" dev "$SINK"
  # The pods' bridge, with their gateway address (this machine, as seen from the pods).
  ip link add "$BRIDGE" type bridge
  echo "$BRIDGE" >>"$STATE/links"
  ip addr add "$POD_GATEWAY_IP/${NODE_POD_CIDR#*/}" dev "$BRIDGE"
  ip link set "$BRIDGE" up
  # kube-proxy's ClusterIP rules must see traffic between pods on the bridge.
  sysctl -qw net.bridge.bridge-nf-call-iptables=1
  confine_pod_forwarding
}

# A pod reaching a Service backed by another pod sends to its gateway (this machine),
# kube-proxy's DNAT turns the packet towards the other pod, and the kernel must forward
# it back out of the bridge it came from. Forwarding is switched on for the bridge only
# (net.ipv4.ip_forward, i.e. every other interface, stays 0), and what arrives from the
# bridge is routed by a table of its own that knows the pod subnet and nothing else
# (everything else is a blackhole): the only forwarding path is bridge -> same bridge.
# Addresses of this machine (the node, the gateway) are local and never forwarded.
confine_pod_forwarding() {
  ip route add "$NODE_POD_CIDR" dev "$BRIDGE" table "$POD_ROUTE_TABLE"
  ip route add blackhole default table "$POD_ROUTE_TABLE"
  ip rule add iif "$BRIDGE" lookup "$POD_ROUTE_TABLE" priority "$POD_ROUTE_TABLE"
  echo "$POD_ROUTE_TABLE" >"$STATE/route-table"
  sysctl -qw "net.ipv4.conf.$BRIDGE.forwarding=1"
}

# The interface the kernel would forward a pod's packet for ADDRESS to ("" when it would
# drop it). Asked of the kernel with a pod address as the source; nothing is sent.
pod_route_device() {
  local pod_address=${NODE_POD_CIDR%.*}.254
  { ip route get "$1" from "$pod_address" iif "$BRIDGE" 2>/dev/null || true; } | awk '{for (i = 1; i < NF; i++) if ($i == "dev") {print $(i+1); exit}}'
}

remove_network() {
  local link veth table
  if [[ -f $STATE/route-table ]]; then
    table=$(<"$STATE/route-table")
    while ip rule del lookup "$table" 2>/dev/null; do :; done
    ip route flush table "$table" 2>/dev/null || true
  fi
  # veths left behind by pods that were not torn down through CNI.
  for veth in $(ip -o link show master "$BRIDGE" 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1); do
    ip link del "$veth" 2>/dev/null || true
  done
  if [[ -f $STATE/links ]]; then
    while read -r link; do
      ip link del "$link" 2>/dev/null || true
    done <"$STATE/links"
  fi
}

# --- iptables ------------------------------------------------------------------

# Deletes every chain that was not there before `up`, and the rules that jump to them.
remove_new_chains() {
  local save=$1 restore=$2 baseline=$3
  [[ -f $baseline ]] || return 0
  command -v "$save" >/dev/null || return 0
  local script
  script=$("$save" 2>/dev/null | awk -v baseline="$baseline" '
    BEGIN { while ((getline line < baseline) > 0) old[line] = 1 }
    /^\*/ { table = substr($1, 2); next }
    /^:/  { chain = substr($1, 2); if (!((table " " chain) in old)) newc[table, chain] = 1; next }
    /^-A/ { rules[table] = rules[table] "\n" $0; next }
    END {
      for (key in newc) { split(key, k, SUBSEP); tables[k[1]] = 1 }
      for (t in tables) {
        print "*" t
        n = split(rules[t], lines, "\n")
        for (i = 1; i <= n; i++) {
          if (lines[i] == "") continue
          split(lines[i], f, " ")
          if ((t, f[2]) in newc) continue          # flushed below
          for (j = 3; j <= length(f); j++)
            if ((f[j] == "-j" || f[j] == "-g") && ((t, f[j+1]) in newc)) { sub(/^-A/, "-D", lines[i]); print lines[i]; break }
        }
        for (key in newc) { split(key, k, SUBSEP); if (k[1] == t) print "-F " k[2] }
        for (key in newc) { split(key, k, SUBSEP); if (k[1] == t) print "-X " k[2] }
        print "COMMIT"
      }
    }')
  [[ -z $script ]] || "$restore" --noflush <<<"$script" || log "could not remove every new $save chain"
}

remove_iptables_changes() {
  local proxy=$KUBE_BIN/kube-proxy
  # kube-proxy knows its own chains best (both families).
  [[ -x $proxy ]] && "$proxy" --cleanup >"$STATE/logs/kube-proxy-cleanup.log" 2>&1 || true
  remove_new_chains iptables-save iptables-restore "$STATE/baseline/iptables"
  remove_new_chains ip6tables-save ip6tables-restore "$STATE/baseline/ip6tables"
  remove_new_ipsets
}

# Destroys every ipset that was not there before `up` (kube-router's KUBE-SRC-*, KUBE-DST-*
# sets of pod addresses). Called once no iptables rule refers to them any more.
remove_new_ipsets() {
  [[ -f $STATE/baseline/ipsets ]] || return 0
  command -v ipset >/dev/null || return 0
  local set
  for set in $(ipset list -n 2>/dev/null); do
    grep -qxF -- "$set" "$STATE/baseline/ipsets" && continue
    ipset destroy "$set" 2>/dev/null || log "could not destroy ipset $set"
  done
}

# --- sysctls, mounts, namespaces, cgroups -------------------------------------------

restore_sysctls() {
  [[ -f $STATE/baseline/sysctls ]] || return 0
  local name value
  while read -r name value; do
    [[ -n $value && $(sysctl -n "$name" 2>/dev/null) != "$value" ]] || continue
    sysctl -qw "$name=$value" || log "could not restore $name=$value"
  done <"$STATE/baseline/sysctls"
}

# Unmounts everything mounted below the given directories, deepest first.
unmount_below() {
  local dir mount
  for dir in "$@"; do
    [[ -d $dir ]] || continue
    for mount in $(awk -v d="$(realpath "$dir")" '$5 == d || index($5, d "/") == 1 {print $5}' /proc/self/mountinfo | sort -r); do
      umount "$mount" 2>/dev/null || umount -l "$mount" 2>/dev/null || log "could not unmount $mount"
    done
  done
}

# Pod network namespaces containerd pinned under /var/run/netns during this cluster's life.
remove_new_netns() {
  [[ -d /var/run/netns ]] || return 0
  local path ns
  for path in /var/run/netns/cni-*; do
    [[ -e $path ]] || continue
    ns=${path##*/}
    grep -qx "$ns" "$STATE/baseline/netns" 2>/dev/null && continue
    umount "/var/run/netns/$ns" 2>/dev/null || true
    rm -f "/var/run/netns/$ns"
  done
}

# The kubepods cgroups kubelet made (only where there were none before up), innermost first.
remove_kubelet_cgroups() {
  local h
  for h in /sys/fs/cgroup/*/; do
    [[ -d $h/kubepods ]] || continue
    grep -qx "$h" "$STATE/baseline/cgroups" 2>/dev/null && continue
    find "$h/kubepods" -depth -type d -exec rmdir {} + 2>/dev/null || log "cgroup $h/kubepods not empty: left"
  done
}
