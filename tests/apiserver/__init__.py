"""Tier 3: a real etcd + kube-apiserver; the LoadTest CRD, the chart, the operator."""
