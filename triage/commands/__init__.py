"""One module per command of ``vllm-triage``; ``common`` holds what they share
(options, the one-line error handling, writing the report). ``triage.cli``
builds the application from them."""
