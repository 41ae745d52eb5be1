# shellcheck shell=bash
# Configuration files of the cluster's components (sourced by tools/e2e/cluster.sh).
# What matters on these machines and why is in ../shared/notes/single-node-cluster.md.

write_containerd_config() {
  mkdir -p "$STATE/containerd" "$CONTAINERD_ROOT"
  cat >"$STATE/containerd/config.toml" <<TOML
version = 2
root = "$CONTAINERD_ROOT"
state = "$STATE/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs"]

[grpc]
  address = "$CONTAINERD_SOCKET"

[plugins."io.containerd.internal.v1.opt"]
  path = "$STATE/containerd/opt"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  # root here lacks CAP_SYS_RESOURCE: without this every pod sandbox fails in runc.
  restrict_oom_score_adj = true
  # exec, attach and port-forward streams: loopback only.
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$STATE/cni/net.d"
TOML
}

# A bridge on this node's pod subnet. No masquerade: pods talk to each other, to Services
# and to this machine, and since net.ipv4.ip_forward stays 0 nothing they send is routed
# anywhere else. isGateway is false because with it the bridge plugin switches
# net.ipv4.ip_forward on; the bridge and its gateway address are made by make_network.
write_cni_config() {
  mkdir -p "$STATE/cni/net.d" "$STATE/cni/ipam"
  cat >"$STATE/cni/net.d/10-elves.conflist" <<JSON
{
  "cniVersion": "1.0.0",
  "name": "elves-e2e",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$BRIDGE",
      "isGateway": false,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": "$STATE/cni/ipam",
        "ranges": [[{"subnet": "$NODE_POD_CIDR", "gateway": "$POD_GATEWAY_IP"}]],
        "routes": [{"dst": "0.0.0.0/0", "gw": "$POD_GATEWAY_IP"}]
      }
    }
  ]
}
JSON
}

write_kubelet_config() {
  mkdir -p "$STATE/kubelet"
  cat >"$STATE/kubelet/config.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: $KUBELET_PORT
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $KUBELET_HEALTHZ_PORT
tlsCertFile: $PKI/kubelet-serving.crt
tlsPrivateKeyFile: $PKI/kubelet-serving.key
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $PKI/ca.crt}
authorization: {mode: Webhook}
containerRuntimeEndpoint: unix://$CONTAINERD_SOCKET
cgroupDriver: cgroupfs
failSwapOn: false
clusterDNS: [$DNS_SERVICE_IP]
clusterDomain: cluster.local
# No host resolv.conf: pods get only the cluster's DNS, which forwards nowhere.
resolvConf: ""
# The disk is shared with other work: evict only when it is really full, and never
# garbage-collect the images, which cannot be pulled again.
evictionHard: {memory.available: 100Mi, nodefs.available: 2%, nodefs.inodesFree: 2%, imagefs.available: 2%}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
makeIPTablesUtilChains: false
serializeImagePulls: false
# A changed Secret or ConfigMap reaches a running pod's volume at its pod's next sync: at the
# default 1m (plus jitter) each new scrape target waited that long for prometheus-operator's
# config Secret to reach Prometheus' config reloader. Some twenty pods sync cheaply every 10 s.
syncFrequency: 10s
YAML
}

write_kube_proxy_config() {
  mkdir -p "$STATE/kube-proxy"
  cat >"$STATE/kube-proxy/config.yaml" <<YAML
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clientConnection: {kubeconfig: $STATE/kube-proxy.kubeconfig}
hostnameOverride: $NODE_NAME
clusterCIDR: $POD_CIDR
bindAddress: 127.0.0.1
healthzBindAddress: 127.0.0.1:$KUBE_PROXY_HEALTHZ_PORT
metricsBindAddress: 127.0.0.1:$KUBE_PROXY_METRICS_PORT
# NodePorts only on the node's own (sink device) address, never on the machine's interfaces,
# and not on localhost (that would set route_localnet).
nodePortAddresses: ["$NODE_IP/32"]
iptables: {localhostNodePorts: false, masqueradeAll: false}
# Leave the machine's conntrack settings as they are.
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
YAML
}
