"""Elves: a benchmark harness for event-driven systems on Kubernetes and on one machine."""
