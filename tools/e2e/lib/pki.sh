# shellcheck shell=bash
# Certificates and kubeconfigs for the throwaway cluster (sourced by tools/e2e/cluster.sh).
# One CA, ECDSA P-256 keys (fast to make), valid for a few days: the cluster lives for a
# test session. Every identity is the one Kubernetes' built-in RBAC roles expect.

# issue_cert NAME CN ORG KIND SANS [ISSUER]: signs $PKI/NAME.{crt,key} with the CA ISSUER
# (default ca). KIND is client or server; SANS is an openssl subjectAltName list (may be empty).
issue_cert() {
  local name=$1 cn=$2 org=$3 kind=$4 sans=$5 issuer=${6:-ca} subject="/CN=$2"
  [[ -n $org ]] && subject="/O=$org/CN=$cn"
  local ext=$PKI/$name.ext
  {
    echo "basicConstraints=CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    if [[ $kind == server ]]; then echo "extendedKeyUsage=serverAuth"; else echo "extendedKeyUsage=clientAuth"; fi
    [[ -n $sans ]] && echo "subjectAltName=$sans"
  } >"$ext"
  openssl req -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
    -keyout "$PKI/$name.key" -out "$PKI/$name.csr" -subj "$subject" 2>/dev/null
  openssl x509 -req -in "$PKI/$name.csr" -CA "$PKI/$issuer.crt" -CAkey "$PKI/$issuer.key" -CAcreateserial \
    -days 7 -extfile "$ext" -out "$PKI/$name.crt" 2>/dev/null
  rm -f "$PKI/$name.csr" "$ext"
}

# write_kubeconfig NAME: $STATE/NAME.kubeconfig for the client certificate NAME.
write_kubeconfig() {
  cat >"$STATE/$1.kubeconfig" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
- name: elves-e2e
  cluster: {server: "https://$NODE_IP:$API_PORT", certificate-authority: "$PKI/ca.crt"}
users:
- name: $1
  user: {client-certificate: "$PKI/$1.crt", client-key: "$PKI/$1.key"}
contexts:
- name: elves-e2e
  context: {cluster: elves-e2e, user: $1, namespace: default}
current-context: elves-e2e
KUBECONFIG
}

# make_ca NAME CN: a self-signed CA $PKI/NAME.{crt,key}.
make_ca() {
  openssl req -x509 -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -days 7 \
    -keyout "$PKI/$1.key" -out "$PKI/$1.crt" -subj "/CN=$2" 2>/dev/null
}

make_pki() {
  mkdir -p "$PKI"
  make_ca ca elves-e2e-ca
  # The aggregation layer's front proxy: the API server presents front-proxy-client when it
  # passes a request on to an aggregated API (KEDA's external metrics, metrics-server), and
  # those servers trust the user it names only from a certificate of this CA with that name
  # (kube-apiserver --requestheader-*). A CA of its own, as kubeadm makes, so no client
  # certificate of the cluster CA can pose as the front proxy.
  make_ca front-proxy-ca elves-e2e-front-proxy-ca
  issue_cert front-proxy-client front-proxy-client "" client "" front-proxy-ca
  # The service-account token signing key pair.
  openssl ecparam -name prime256v1 -genkey -noout -out "$PKI/sa.key" 2>/dev/null
  openssl ec -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub" 2>/dev/null

  issue_cert apiserver kube-apiserver "" server \
    "IP:$NODE_IP,IP:$API_SERVICE_IP,IP:127.0.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
  issue_cert apiserver-kubelet-client kube-apiserver-kubelet-client system:masters client ""
  issue_cert kubelet-serving "system:node:$NODE_NAME" system:nodes server "DNS:$NODE_NAME,IP:127.0.0.1"
  issue_cert admin elves-e2e-admin system:masters client ""
  issue_cert controller-manager system:kube-controller-manager "" client ""
  issue_cert scheduler system:kube-scheduler "" client ""
  issue_cert kube-proxy system:kube-proxy "" client ""
  issue_cert kubelet "system:node:$NODE_NAME" system:nodes client ""
  # kube-router's firewall: bound to a read-only ClusterRole by manifests/kube-router.yaml.
  issue_cert kube-router elves-e2e:kube-router "" client ""
  local k
  for k in admin controller-manager scheduler kube-proxy kubelet kube-router; do write_kubeconfig "$k"; done
}
