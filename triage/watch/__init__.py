"""``vllm-triage watch``: the scan on an interval, in the cluster, as Prometheus metrics.

``cycle`` runs one triage per cluster on an interval (sooner when a vLLM pod
restarts or changes readiness) and keeps the last complete one;
``exposition`` turns exactly that into metric families; ``server`` serves
them with the last report on one port.
"""
