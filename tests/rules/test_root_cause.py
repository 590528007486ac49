"""The fallback's root-cause line: the line a person should read first, never an INFO line,
never usage text or a hint; argparse's "error:" line and torch's "terminated with
exception:" outrank them (three real cases)."""

from __future__ import annotations

import pytest

from tests.conftest import FIXTURES, fixture_names
from tests.support.evidence import LOG_ITEM, first_line_problem
from tests.support.unit import context
from triage import pipeline
from triage.collect.bundle import load
from triage.rules.evaluate import lead_with_cause, root_cause
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
# torch 2.6's watchdog abort: the cause, then libstdc++'s terminate, torch's what(), and
# Python's faulthandler line after abort() (aftermath, not the cause)
ABORTED = """\
[rank0]:[E512 10:21:08.164595040 ProcessGroupNCCL.cpp:2057] [PG ID 12 PG GUID 35(EXPERT_MODEL_PARALLEL_GROUP) Rank 0] Process group watchdog thread terminated with exception: CUDA error: an illegal memory access was encountered
Search for `cudaErrorIllegalAddress' in https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html for more information.
Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.

Exception raised from c10_cuda_check_implementation at /pytorch/c10/cuda/CUDAException.cpp:44 (most recent call first):
frame #0: c10::Error::Error(c10::SourceLocation, std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >) + 0xb0 (0xede05571c700 in /usr/local/lib/python3.12/dist-packages/torch/lib/libc10.so)
terminate called after throwing an instance of 'c10::DistBackendError'
  what():  [PG ID 12 PG GUID 35(EXPERT_MODEL_PARALLEL_GROUP) Rank 0] Process group watchdog thread terminated with exception: CUDA error: an illegal memory access was encountered
Fatal Python error: Aborted
"""
# the kubelet's SIGTERM after the real error: vLLM's handler raises KeyboardInterrupt
SIGTERMED = """\
(EngineCore_DP0 pid=270) ERROR 11-28 02:39:51 [core.py:700] RuntimeError: CUDA error: an illegal memory access was encountered
(APIServer pid=1)   File "/usr/local/lib/python3.12/dist-packages/vllm/entrypoints/openai/api_server.py", line 564, in signal_handler
(APIServer pid=1)     raise KeyboardInterrupt("terminated")
(APIServer pid=1) KeyboardInterrupt: terminated
"""
# V0's client: the wrappers say the engine died; the real error came before them
V0_DEAD = """\
ERROR 11-28 02:39:36 engine.py:135] ValueError: Attempted to assign 119 = 119 multimodal tokens to 120 placeholders
ERROR 11-28 02:39:37 client.py:282] RuntimeError('Engine process (pid 76) died.')
ERROR 11-28 02:39:37 [serving_chat.py:885] vllm.engine.multiprocessing.MQEngineDeadError: Engine loop is not running. Inspect the stacktrace to find the original error
CRITICAL 11-28 02:39:39 launcher.py:99] MQLLMEngine is already dead, terminating server process
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
    (ABORTED, "[E512 10:21:08.164595040 ProcessGroupNCCL.cpp:2057] [PG ID 12 PG GUID "
              "35(EXPERT_MODEL_PARALLEL_GROUP) Rank 0] Process group watchdog thread terminated "
              "with exception: CUDA error"),
    (SIGTERMED, "RuntimeError: CUDA error: an illegal memory access was encountered"),
    (V0_DEAD, "ValueError: Attempted to assign 119 = 119 multimodal tokens"),
])
def test_root_cause_line_is_the_cause_not_usage_info_or_hints(log: str, cause: str) -> None:
    evidence = root_cause(context(status=CRASHED, previous_log=log), _fallback_leaf())
    assert " line " in evidence[0] and ">" in evidence[0].split(" line ", 1)[1][:8], evidence
    assert cause in evidence[0], evidence


@pytest.mark.parametrize("pattern", ["crashloop-unknown", "engine-died"])
def test_aftermath_lines_lose_to_the_cause_in_both_fallbacks(pattern: str) -> None:
    leaf = next(c for c in load_patterns().by_id()[pattern].show
                if isinstance(c, RootCauseLeaf))
    for log, cause in ((ABORTED, "terminated with exception: CUDA error"),
                       (SIGTERMED, "RuntimeError: CUDA error"),
                       (V0_DEAD, "ValueError: Attempted to assign")):
        evidence = root_cause(context(status=CRASHED, previous_log=log), leaf)
        assert cause in evidence[0], (pattern, evidence)
    # alone, a wrapper is still shown: it says more than the bare tail
    alone = "CRITICAL 11-28 02:39:39 launcher.py:99] MQLLMEngine is already dead\n" \
            "ERROR 11-28 02:39:37 client.py:282] RuntimeError('Engine process (pid 76) died.')\n"
    evidence = root_cause(context(status=CRASHED, previous_log=alone), leaf)
    assert "Engine process (pid 76) died" in evidence[0], evidence


def test_an_info_line_is_never_marked_as_the_cause() -> None:
    log = ("(APIServer pid=1) INFO 11-28 03:05:19 [api_server.py:1805] vLLM API server version "
           "0.10.1.1\n(VllmWorkerProcess pid=213) INFO 11-28 03:05:29 "
           "multiproc_worker_utils.py:222] Worker ready; awaiting tasks\n")
    evidence = root_cause(context(status=CRASHED, previous_log=log), _fallback_leaf())
    assert all("> " not in e.split(" line ", 1)[-1][:8] for e in evidence), evidence


# --- every finding that quotes a log opens with the line that states the cause -----------

@pytest.mark.slow  # every fixture analyzed (the examples are checked with test_patterns)
def test_every_fixtures_first_evidence_line_states_the_cause() -> None:
    wrong = []
    for name in fixture_names():
        report = pipeline.analyze(load(FIXTURES / name))
        for pod in report.pods:
            for f in pod.findings:
                why = first_line_problem(f.evidence)
                if why:
                    wrong.append(f"{name}: {pod.name}: {f.id}: {why}")
                proof_line = next((c.proof for c in report.cards if c.finding == f.id
                                   and c.pods[0] == pod.name), "")
                if proof_line and LOG_ITEM.match(proof_line) and \
                        not proof_line.startswith(f.evidence[0]):
                    wrong.append(f"{name}: {pod.name}: {f.id}: the card's proof is not the "
                                 f"first evidence line: {proof_line[:100]!r}")
    assert wrong == [], "\n".join(wrong)


def test_evidence_shows_each_log_line_once_and_a_source_echo_never_as_proof() -> None:
    # engine-died's rule matched the wrapper and the line of code that raised it; its show
    # adds the root-cause line with the wrapper's lines around it again as context
    echo = '(APIServer pid=1)     raise RuntimeError("Engine core initialization failed. "'
    wrapper = ("(APIServer pid=1) RuntimeError: Engine core initialization failed. See root "
               "cause above. Failed core proc(s): {'EngineCore_0': 1}")
    cause = ("(EngineCore_0 pid=270) ERROR 11-28 03:08:45 [core.py:700] AttributeError: "
             "'Gemma3TextConfig' object has no attribute 'sliding_window_pattern'")
    evidence = [f"previous log (vllm) line 14> {echo}", f"previous log (vllm) line 15> {wrapper}",
                f"previous log (vllm) line 11> {cause}", f"previous log (vllm) line 14  {echo}",
                f"previous log (vllm) line 15  {wrapper}", "containerStatuses[vllm] exitCode = 1"]
    out = lead_with_cause(evidence, decided=2)
    assert out[0] == f"previous log (vllm) line 11> {cause}"
    numbers = [LOG_ITEM.match(e).group(2) for e in out if LOG_ITEM.match(e)]
    assert sorted(numbers) == ["11", "14", "15"], out
    assert f"previous log (vllm) line 14  {echo}" in out
    assert f"previous log (vllm) line 15> {wrapper}" in out
    assert out[-1] == "containerStatuses[vllm] exitCode = 1"
