#!/usr/bin/env bash
# A throwaway single-node Kubernetes cluster on this machine, for the end-to-end tier.
#
#   tools/e2e/cluster.sh up           start it (idempotent); waits for the node and CoreDNS
#   tools/e2e/cluster.sh down         stop every process it started, undo its host changes
#   tools/e2e/cluster.sh env          print the shell variables to use it (eval "$(... env)")
#   tools/e2e/cluster.sh images NAME...  build images (tools/e2e/build-images.sh) and load them
#   tools/e2e/cluster.sh status       say what runs
#
# containerd (started by hand, runc, CNI bridge), etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler, kubelet and kube-proxy (iptables), CoreDNS as a Deployment, and kube-router
# with only its network policy firewall (the bridge CNI enforces no NetworkPolicy).
# Safety: nothing in the cluster reaches beyond this machine. The node's address sits on a
# sink device (a bridge without ports) and the pod and service ranges are routed to it; the CNI bridge does no
# masquerade; net.ipv4.ip_forward is left at 0 (and `up` refuses a machine where it is 1);
# CoreDNS forwards nowhere; every listener is on loopback or on the node's sink-device address.
#
# Settings (environment):
#   ELVES_CACHE      cache root (default $HOME/.cache/elves): Kubernetes binaries, images,
#                    and containerd's image store ($ELVES_CACHE/e2e/containerd)
#   ELVES_E2E_DIR    the cluster's state, removed by down (default /tmp/elves-e2e)
#   ELVES_E2E_KEEP_ON_FAILURE=1  leave a cluster whose `up` failed running, to look at it
# shellcheck disable=SC2034 # the settings below are read by the sourced lib/*.sh
set -Eeuo pipefail
shopt -s inherit_errexit

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=versions.env
source "$here/versions.env"

# shellcheck source=../lib/cache-root.sh
source "$here/../lib/cache-root.sh"
CACHE=$ELVES_CACHE
STATE=${ELVES_E2E_DIR:-/tmp/elves-e2e}
PKI=$STATE/pki
KUBE_BIN=$CACHE/kubernetes/$KUBERNETES_VERSION/bin
# Where build-go-binaries.sh builds it (the name carries the build list it was built from).
KUBE_ROUTER=$("$here/build-go-binaries.sh" --path kube-router)
CONTAINERD_ROOT=$CACHE/e2e/containerd
CONTAINERD_SOCKET=$STATE/containerd/containerd.sock

# Addresses and ports (read by lib/*.sh too). The ranges are only ever routed to the sink
# device and the bridge.
NODE_NAME=$(hostname)
readonly SINK=elves-e2e0 BRIDGE=elves-br0
readonly NODE_IP=10.88.0.1
readonly POD_CIDR=10.244.0.0/16 NODE_POD_CIDR=10.244.0.0/24 POD_GATEWAY_IP=10.244.0.1
# The routing table (and rule priority) for what arrives from the pods' bridge.
readonly POD_ROUTE_TABLE=2244
readonly SERVICE_CIDR=10.96.0.0/16 API_SERVICE_IP=10.96.0.1 DNS_SERVICE_IP=10.96.0.10
readonly API_PORT=16443 ETCD_PORT=23790 ETCD_PEER_PORT=23800
readonly KUBELET_PORT=10250 KUBELET_HEALTHZ_PORT=10248
readonly CONTROLLER_MANAGER_PORT=10257 SCHEDULER_PORT=10259
readonly KUBE_PROXY_METRICS_PORT=10249 KUBE_PROXY_HEALTHZ_PORT=10256
PAUSE_IMAGE=docker.io/$("$here/build-images.sh" --list pause | cut -d' ' -f2)

readonly SCRIPT_NAME=cluster
# shellcheck source=../lib/log.sh
source "$here/../lib/log.sh"

# shellcheck source=lib/processes.sh
source "$here/lib/processes.sh"
# shellcheck source=lib/pki.sh
source "$here/lib/pki.sh"
# shellcheck source=lib/config.sh
source "$here/lib/config.sh"
# shellcheck source=lib/host.sh
source "$here/lib/host.sh"

kubectl_admin() { kubectl --kubeconfig "$STATE/admin.kubeconfig" "$@"; }
ctr_k8s() { ctr --address "$CONTAINERD_SOCKET" -n k8s.io "$@"; }

# --- checks --------------------------------------------------------------------

# Every missing prerequisite, one per line (empty when the machine can run the cluster).
missing_prerequisites() {
  [[ $(id -u) == 0 ]] || echo "root (containerd, kubelet, network devices)"
  local tool
  for tool in containerd runc ctr etcd kubectl openssl iptables iptables-save ip6tables-save conntrack ipset ip mmdebstrap umoci skopeo; do
    command -v "$tool" >/dev/null || echo "$tool (tools/e2e/install-node-deps.sh)"
  done
  [[ -x /usr/lib/cni/bridge && -x /usr/lib/cni/host-local ]] || echo "CNI plugins in /usr/lib/cni (tools/e2e/install-node-deps.sh)"
  local c
  for c in kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy; do
    [[ -x $KUBE_BIN/$c ]] || echo "$KUBE_BIN/$c (tools/build-kubernetes.sh)"
  done
  [[ -e /proc/sys/net/bridge/bridge-nf-call-iptables ]] || echo "the br_netfilter kernel module (modprobe br_netfilter)"
  grep -qw overlay /proc/filesystems || echo "the overlay filesystem (modprobe overlay)"
  [[ $(sysctl -n net.ipv4.ip_forward 2>/dev/null) == 0 ]] || echo "net.ipv4.ip_forward = 0 (it is 1: pods could route off the machine)"
  getent ahostsv4 "$NODE_NAME" | awk '{print $1}' | grep -q '^127\.' ||
    echo "the host name '$NODE_NAME' resolving to a 127.x address (the kubelet listens on loopback only)"
}

check_prerequisites() {
  local missing
  missing=$(missing_prerequisites)
  [[ -z $missing ]] || die "cannot start the cluster; missing:"$'\n'"  - ${missing//$'\n'/$'\n'  - }"
}

apiserver_ready() {
  curl -sf --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" \
    "https://$NODE_IP:$API_PORT/readyz" >/dev/null
}

# True when every recorded component runs and the API server answers.
cluster_running() {
  [[ -f $STATE/processes ]] || return 1
  local name
  for name in containerd etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kube-router; do
    [[ -n $(pid_of "$name") ]] || return 1
  done
  apiserver_ready
}

# On a failed wait: the reason, then the end of the component's log.
fail_with_log() {
  log "$1"
  [[ -f $STATE/logs/$2.log ]] && { log "last lines of $STATE/logs/$2.log:"; tail -n 25 "$STATE/logs/$2.log" >&2; }
  return 1
}

# --- up ------------------------------------------------------------------------

# Fails when something has opened a way off the machine while the cluster started
# (the CNI bridge plugin, for one, switches net.ipv4.ip_forward on when told isGateway).
check_confinement() {
  local address
  [[ $(sysctl -n net.ipv4.ip_forward) == 0 ]] ||
    { log "net.ipv4.ip_forward was switched on while the cluster started: refusing to run it"; return 1; }
  # The question is asked right: another pod is reached over the bridge...
  [[ $(pod_route_device "${NODE_POD_CIDR%.*}.2") == "$BRIDGE" ]] ||
    { log "cannot tell where the pods' packets go (no route to the pod subnet over $BRIDGE)"; return 1; }
  # ... and the default gateway, or any outside address, is not reached at all.
  local gateway device
  gateway=$(ip route show default | awk '{print $3; exit}')
  for address in ${gateway:-} 192.0.2.123 198.51.100.1; do
    device=$(pod_route_device "$address")
    [[ -z $device ]] || { log "packets from pods to $address would be forwarded to $device: refusing to run it"; return 1; }
  done
}

start_containerd() {
  write_containerd_config
  write_cni_config
  start_process containerd containerd --config "$STATE/containerd/config.toml"
  wait_for "containerd's socket" 30 ctr --address "$CONTAINERD_SOCKET" version ||
    fail_with_log "containerd did not start" containerd
}

start_etcd() {
  start_process etcd etcd --name elves-e2e --data-dir "$STATE/etcd" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster "elves-e2e=http://127.0.0.1:$ETCD_PEER_PORT"
  wait_for "etcd" 30 curl -sf "http://127.0.0.1:$ETCD_PORT/health" || fail_with_log "etcd did not become healthy" etcd
}

start_control_plane() {
  # The aggregation layer, for aggregated APIs such as KEDA's external metrics and
  # metrics-server's (the opt-in autoscaling tests install them): the API server proxies their
  # requests as front-proxy-client (lib/pki.sh), naming the user in the headers below, which
  # those servers trust from that certificate only. --enable-aggregator-routing sends the
  # proxied requests to an endpoint's address, as the API server's Service proxy does, not to
  # the Service's ClusterIP: the control plane runs on the host, which needs no kube-proxy rule
  # to reach a pod on the bridge (nor, for metrics-server on the host network, its sink address).
  local aggregation=(
    --requestheader-client-ca-file "$PKI/front-proxy-ca.crt" --requestheader-allowed-names front-proxy-client
    --requestheader-username-headers X-Remote-User --requestheader-group-headers X-Remote-Group
    --requestheader-extra-headers-prefix X-Remote-Extra-
    --proxy-client-cert-file "$PKI/front-proxy-client.crt" --proxy-client-key-file "$PKI/front-proxy-client.key"
    --enable-aggregator-routing=true
  )
  start_process kube-apiserver "$KUBE_BIN/kube-apiserver" \
    --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
    --bind-address "$NODE_IP" --advertise-address "$NODE_IP" --secure-port "$API_PORT" \
    --service-cluster-ip-range "$SERVICE_CIDR" \
    --client-ca-file "$PKI/ca.crt" --tls-cert-file "$PKI/apiserver.crt" --tls-private-key-file "$PKI/apiserver.key" \
    --kubelet-client-certificate "$PKI/apiserver-kubelet-client.crt" --kubelet-client-key "$PKI/apiserver-kubelet-client.key" \
    --kubelet-certificate-authority "$PKI/ca.crt" --kubelet-preferred-address-types Hostname \
    --service-account-key-file "$PKI/sa.pub" --service-account-signing-key-file "$PKI/sa.key" \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction \
    --allow-privileged=false --profiling=false \
    "${aggregation[@]}"
  wait_for "the API server" 90 apiserver_ready || fail_with_log "kube-apiserver did not become ready" kube-apiserver

  start_process kube-controller-manager "$KUBE_BIN/kube-controller-manager" \
    --kubeconfig "$STATE/controller-manager.kubeconfig" \
    --authentication-kubeconfig "$STATE/controller-manager.kubeconfig" \
    --authorization-kubeconfig "$STATE/controller-manager.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$CONTROLLER_MANAGER_PORT" \
    --service-account-private-key-file "$PKI/sa.key" --root-ca-file "$PKI/ca.crt" \
    --cluster-signing-cert-file "$PKI/ca.crt" --cluster-signing-key-file "$PKI/ca.key" \
    --use-service-account-credentials --leader-elect=false \
    --service-cluster-ip-range "$SERVICE_CIDR" --cluster-name elves-e2e --profiling=false
  start_process kube-scheduler "$KUBE_BIN/kube-scheduler" \
    --kubeconfig "$STATE/scheduler.kubeconfig" \
    --authentication-kubeconfig "$STATE/scheduler.kubeconfig" \
    --authorization-kubeconfig "$STATE/scheduler.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$SCHEDULER_PORT" --leader-elect=false --profiling=false
}

start_node() {
  write_kubelet_config
  start_process kubelet "$KUBE_BIN/kubelet" --config "$STATE/kubelet/config.yaml" \
    --kubeconfig "$STATE/kubelet.kubeconfig" --hostname-override "$NODE_NAME" --node-ip "$NODE_IP" \
    --root-dir "$STATE/kubelet/root"
  write_kube_proxy_config
  start_process kube-proxy "$KUBE_BIN/kube-proxy" --config "$STATE/kube-proxy/config.yaml"
}

# kube-router's network policy controller, and nothing else of it: no routing (one node,
# the bridge), no service proxy (kube-proxy), no health or metrics listener (they would
# listen on every interface). It reads the node's InternalIP (the kubelet's --node-ip) to
# find the pods it guards, so it starts once the node has registered. Its chains hang from
# INPUT, FORWARD and OUTPUT (bridged pod-to-pod traffic reaches FORWARD through
# net.bridge.bridge-nf-call-iptables, which make_network sets); a packet no policy allows
# is REJECTed. `down` removes its chains (remove_iptables_changes) and ipsets.
start_firewall() {
  kubectl_admin apply -f "$here/manifests/kube-router.yaml" >/dev/null
  start_process kube-router "$KUBE_ROUTER" --kubeconfig "$STATE/kube-router.kubeconfig" \
    --hostname-override "$NODE_NAME" --run-firewall=true --run-router=false --run-service-proxy=false \
    --service-cluster-ip-range "$SERVICE_CIDR" --health-port 0 --metrics-port 0
  wait_for "kube-router's first policy sync" 60 firewall_synced ||
    fail_with_log "kube-router did not set up its firewall chains" kube-router
}

# True once kube-router has run a full sync: the ACCEPT for traffic that passed the
# policies closes its FORWARD chain, and FORWARD jumps to it.
firewall_synced() {
  [[ -n $(pid_of kube-router) ]] || return 1
  local chain forward
  chain=$(iptables -S KUBE-ROUTER-FORWARD 2>/dev/null) && forward=$(iptables -S FORWARD 2>/dev/null) || return 1
  [[ $chain == *'explicitly ACCEPT traffic that comply to network policies'* && $forward == *'-j KUBE-ROUTER-FORWARD'* ]]
}

start_coredns() {
  local image
  image=$("$here/build-images.sh" --list coredns | cut -d' ' -f2)
  sed -e "s|@IMAGE@|$image|" -e "s|@DNS_SERVICE_IP@|$DNS_SERVICE_IP|" "$here/manifests/coredns.yaml" |
    kubectl_admin apply -f - >/dev/null
}

wait_until_ready() {
  # Pods cannot be created until the controller-manager has made the default account.
  wait_for "the default ServiceAccount" 60 kubectl_admin get serviceaccount default ||
    fail_with_log "kube-controller-manager did not create the default ServiceAccount" kube-controller-manager
  wait_for "node $NODE_NAME to register" 60 kubectl_admin get node "$NODE_NAME" ||
    fail_with_log "the kubelet did not register node $NODE_NAME" kubelet
  kubectl_admin wait --for=condition=Ready "node/$NODE_NAME" --timeout=90s >/dev/null ||
    fail_with_log "node $NODE_NAME did not become Ready" kubelet
  kubectl_admin -n kube-system rollout status deployment/coredns --timeout=120s >/dev/null ||
    { kubectl_admin -n kube-system describe pods -l k8s-app=kube-dns | tail -n 20 >&2; fail_with_log "CoreDNS did not become ready" kubelet; }
}

up() {
  if cluster_running; then
    log "already up (state in $STATE)"
    return 0
  fi
  check_prerequisites
  [[ ! -e $STATE ]] || { log "a previous cluster left $STATE: taking it down first"; down; }
  # The firewall's program, built once from its Go module (cached), before anything starts.
  "$here/build-go-binaries.sh" kube-router >&2
  mkdir -p "$STATE/logs"
  local started=$SECONDS phase=$SECONDS
  # A failed `up` takes down what it started, unless asked to keep it for inspection.
  trap 'up_failed' ERR

  record_baseline
  make_network
  make_pki
  log "network and certificates ready ($((SECONDS - phase)) s)"; phase=$SECONDS
  start_containerd
  "$here/build-images.sh" --import "$CONTAINERD_SOCKET" pause coredns
  log "containerd and images ready ($((SECONDS - phase)) s)"; phase=$SECONDS
  start_etcd
  start_control_plane
  log "control plane ready ($((SECONDS - phase)) s)"; phase=$SECONDS
  start_node
  start_coredns
  wait_until_ready
  log "node Ready and CoreDNS ready ($((SECONDS - phase)) s)"; phase=$SECONDS
  start_firewall
  log "NetworkPolicy firewall (kube-router) ready ($((SECONDS - phase)) s)"
  check_confinement
  trap - ERR
  log "up in $((SECONDS - started)) s; to use it: eval \"\$($0 env)\""
}

up_failed() {
  # A failure inside $(...) reaches here twice: in the subshell, then in `up` itself.
  ((BASH_SUBSHELL == 0)) || exit 1
  trap - ERR
  if [[ ${ELVES_E2E_KEEP_ON_FAILURE:-0} == 1 ]]; then
    log "up failed; the cluster is left running (ELVES_E2E_KEEP_ON_FAILURE=1): $0 down to stop it"
  else
    log "up failed; taking down what was started (logs are kept in $STATE.failed-logs)"
    rm -rf "$STATE.failed-logs"
    cp -r "$STATE/logs" "$STATE.failed-logs" 2>/dev/null || true
    down
  fi
  exit 1
}

# --- down ----------------------------------------------------------------------

# Stops every pod through the kubelet (so CNI releases addresses and namespaces), then
# removes whatever containers are left directly in containerd.
stop_pods() {
  if [[ -n $(pid_of kubelet) ]] && apiserver_ready; then
    stop_process kube-controller-manager
    stop_process kube-scheduler
    kubectl_admin delete pods --all --all-namespaces --force --grace-period=0 --wait=false >/dev/null 2>&1 || true
    wait_for "the kubelet to stop every pod" 60 no_running_tasks || log "some pods did not stop through the kubelet"
  fi
  [[ -n $(pid_of containerd) ]] || return 0
  stop_process kubelet
  local id
  for id in $(ctr_k8s tasks ls -q 2>/dev/null); do
    ctr_k8s tasks kill -s SIGKILL "$id" >/dev/null 2>&1 || true
  done
  wait_for "containerd to stop the remaining tasks" 30 no_running_tasks || true
  for id in $(ctr_k8s tasks ls -q 2>/dev/null); do ctr_k8s tasks rm -f "$id" >/dev/null 2>&1 || true; done
  for id in $(ctr_k8s containers ls -q 2>/dev/null); do ctr_k8s containers rm "$id" >/dev/null 2>&1 || true; done
}

no_running_tasks() { [[ -z $(ctr_k8s tasks ls -q 2>/dev/null) ]]; }

# containerd's shims outlive containerd by design; ours carry our socket in their command line.
stop_our_shims() {
  local cmdline pid
  for cmdline in /proc/[0-9]*/cmdline; do
    pid=${cmdline#/proc/}
    pid=${pid%/cmdline}
    if { tr '\0' ' ' <"$cmdline"; } 2>/dev/null | grep -q "containerd-shim.* -address $CONTAINERD_SOCKET "; then
      log "stopping a leftover containerd shim (pid $pid)"
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done
}

down() {
  if [[ ! -d $STATE ]]; then
    log "not up (no $STATE)"
    return 0
  fi
  stop_pods
  stop_all_processes
  stop_our_shims
  remove_iptables_changes
  unmount_below "$STATE" "$CONTAINERD_ROOT"
  remove_new_netns
  remove_network
  restore_sysctls
  remove_kubelet_cgroups
  rm -rf "$STATE"
  log "down: every process stopped, host changes undone"
}

# --- the rest ------------------------------------------------------------------

env_vars() {
  cat <<ENV
export KUBECONFIG=$STATE/admin.kubeconfig
export ELVES_E2E_CONTAINERD_SOCKET=$CONTAINERD_SOCKET
export ELVES_E2E_NODE_NAME=$NODE_NAME
export ELVES_E2E_DIR=$STATE
ENV
}

status() {
  local name pid started
  [[ -f $STATE/processes ]] || { echo "not up"; return 1; }
  while read -r name pid started; do
    if recorded_alive "$pid" "$started"; then echo "$name: running (pid $pid)"; else echo "$name: stopped"; fi
  done <"$STATE/processes"
}

load_images() {
  [[ -n $(pid_of containerd) ]] || die "the cluster is not up: run $0 up first"
  "$here/build-images.sh" --import "$CONTAINERD_SOCKET" "$@"
}

main() {
  case ${1:-} in
    up) up ;;
    down) down ;;
    env) env_vars ;;
    status) status ;;
    images) shift; load_images "$@" ;;
    prerequisites) missing_prerequisites ;;
    confinement) check_confinement && echo "confined: pods can reach nothing beyond this machine" ;;
    *) sed -n '2,9p' "${BASH_SOURCE[0]}" >&2; exit 2 ;;
  esac
}

main "$@"
