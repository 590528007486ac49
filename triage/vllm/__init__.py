"""vLLM knowledge: which pods are vLLM servers (``selection``), the engine's effective
flags (``engine_config``), the start-up milestones it logs (``milestones``) and its
Prometheus metrics (``metrics``)."""
