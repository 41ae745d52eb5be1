"""The Kubernetes platform and the kopf operator."""
