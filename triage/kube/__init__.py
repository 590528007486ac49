"""Kubernetes knowledge: what the API objects say about a workload (``workload``: owners,
containers, requests, probes, rollouts) and label selectors as the API server parses them
(``labelselector``). Pure functions over API dicts; no reads."""
