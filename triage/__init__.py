"""vllm-triage: read-only incident triage for vLLM inference servers on Kubernetes."""

# The one place the version is written (pyproject.toml reads it from here): looking it up
# in the installed metadata costs a tenth of a second at every start.
__version__ = "0.1.0"
