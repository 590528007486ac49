"""``python -m triage``: the same program as the ``vllm-triage`` command."""

from triage.cli import main

main()
