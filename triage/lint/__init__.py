"""``vllm-triage lint``: the same patterns on manifests, before they are applied.

``manifests`` reads YAML and JSON files, directories, stdin and kustomize output the way
kubectl does, keeping where every field was written (``sourcemap``); ``kserve`` merges a
ServingRuntime into an InferenceService as KServe's controller does; ``run`` evaluates the
patterns on the pods the templates make; ``report`` turns that into findings at a file,
line and field; ``writers`` and ``sarif`` render it.
"""
