"""The fallback's root-cause line: the line a person should read first, never an INFO line,
never usage text or a hint; argparse's "error:" line and torch's "terminated with
exception:" outrank them (issue 15's three real cases)."""

from __future__ import annotations

import pytest

from tests.unit import context
from triage.rules.evaluate import root_cause
from triage.rules.language import RootCauseLeaf
from triage.rules.loader import load_patterns

CRASHED = {"state": {"waiting": {"reason": "CrashLoopBackOff"}},
           "lastState": {"terminated": {"reason": "Error", "exitCode": 1}}, "restartCount": 3}

ARGPARSE = """\
usage: vllm [-h] [-v] {chat,complete,serve,bench,collect-env,run-batch} ...
vllm: error: unrecognized arguments: --enable-metrics
"""
FORKED = """\
(VllmWorkerProcess pid=213) ERROR 11-28 03:05:29 multiproc_worker_utils.py:226] Exception in worker VllmWorkerProcess while processing method init_device: Cannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing, you must use the 'spawn' start method, Traceback (most recent call last):
(VllmWorkerProcess pid=213) ERROR 11-28 03:05:29 multiproc_worker_utils.py:226]   File "/usr/local/lib/python3.12/dist-packages/vllm/executor/multiproc_worker_utils.py", line 223, in _run_worker_process
(VllmWorkerProcess pid=213) ERROR 11-28 03:05:29 multiproc_worker_utils.py:226]     output = executor(*args, **kwargs)
(VllmWorkerProcess pid=214) INFO 11-28 03:05:29 multiproc_worker_utils.py:222] Worker ready; awaiting tasks
"""
WATCHDOG = """\
[rank0]:[E1128 02:58:38.245661327 ProcessGroupNCCL.cpp:1595] [PG 0 (default_pg) Rank 0] Process group watchdog thread terminated with exception: CUDA error: an illegal memory access was encountered
CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.
For debugging consider passing CUDA_LAUNCH_BLOCKING=1
Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.

"""


def _fallback_leaf() -> RootCauseLeaf:
    pattern = load_patterns().by_id()["crashloop-unknown"]
    return next(c for c in pattern.show if isinstance(c, RootCauseLeaf))


@pytest.mark.parametrize(("log", "cause"), [
    (ARGPARSE, "vllm: error: unrecognized arguments: --enable-metrics"),
    (FORKED, "Exception in worker VllmWorkerProcess while processing method init_device: "
             "Cannot re-initialize CUDA in forked subprocess"),
    (WATCHDOG, "Process group watchdog thread terminated with exception: CUDA error: an "
               "illegal memory access was encountered"),
])
def test_root_cause_line_is_the_cause_not_usage_info_or_hints(log: str, cause: str) -> None:
    evidence = root_cause(context(status=CRASHED, previous_log=log), _fallback_leaf())
    assert " line " in evidence[0] and ">" in evidence[0].split(" line ", 1)[1][:8], evidence
    assert cause in evidence[0], evidence


def test_an_info_line_is_never_marked_as_the_cause() -> None:
    log = ("(APIServer pid=1) INFO 11-28 03:05:19 [api_server.py:1805] vLLM API server version "
           "0.10.1.1\n(VllmWorkerProcess pid=213) INFO 11-28 03:05:29 "
           "multiproc_worker_utils.py:222] Worker ready; awaiting tasks\n")
    evidence = root_cause(context(status=CRASHED, previous_log=log), _fallback_leaf())
    assert all("> " not in e.split(" line ", 1)[-1][:8] for e in evidence), evidence
