"""vllm-triage: read-only incident triage for vLLM inference servers on Kubernetes."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("vllm-triage")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0+source"
