"""Facts that describe a failure the logs show: what failed, and where.

They do not decide that something failed (the patterns do, from the same
lines); they name the parts a person acts on: the transport of an NCCL
failure and the rank that printed it.

Texts: ``patterns/wordings.yaml`` (``nccl_*``, ``cuda_peer_access_unsupported``), each
with its source: PyTorch's ProcessGroupNCCL watchdog, NCCL's result codes and WARN lines,
vLLM's pynccl wrapper and custom all-reduce.
"""

from __future__ import annotations

import regex

from triage.facts import (
    LOG_QUERIES,
    ContainerContext,
    Measured,
    PodContext,
    Unmeasurable,
    fact,
    stream_label,
)
from triage.logs import LogLine, Query
from triage.snapshot import CURRENT, PREVIOUS
from triage.speed import lazyregex
from triage.vllm import wordings

# Most specific first: a timeout or a transport beats the bare result code. The texts are
# patterns/wordings.yaml's; nccl-failure and shm-too-small name some of the same.
_NCCL_REGEXES: tuple[tuple[str, regex.Pattern[str]], ...] = (
    ("collective timeout", wordings.regex("nccl_watchdog_timeout")),
    ("P2P / CUDA IPC between GPUs", wordings.either("cuda_peer_access_unsupported",
                                                    "nccl_p2p_warn")),
    ("InfiniBand / RoCE verbs", wordings.regex("nccl_ib_verbs_warn")),
    ("socket (TCP) between ranks", wordings.either(
        "nccl_socket_warn", "nccl_socket_progress_failed", "nccl_proxy_call_failed")),
    ("NCCL remote error (a peer exited or the network failed)",
     wordings.regex("nccl_remote_error")),
    ("NCCL internal error", wordings.regex("nccl_internal_error")),
    ("NCCL system error", wordings.regex("nccl_system_error")),
    ("NCCL CUDA error", wordings.regex("nccl_cuda_error")),
)
# Answered by the scan's one pass over each log, like every pattern's regex.
_NCCL_KINDS = tuple((kind, LOG_QUERIES.add(Query(rx))) for kind, rx in _NCCL_REGEXES)
# What the watchdog's line says after "WorkNCCL(": the collective and the timeout.
_WATCHDOG_WORK = wordings.regex("nccl_watchdog_work")
# Who printed a line: torch.distributed's [rank0]: / [Rank 0], vLLM's worker process names.
_RANK = (
    lazyregex.compile(r"\[[Rr]ank ?(\d+)\]"),
    lazyregex.compile(r"\b(?:Worker_|VllmWorker )TP(\d+)"),
    lazyregex.compile(r"\brank=(\d+)"),
)
# NCCL's own prefix of its lines: host:pid:tid [local GPU].
_NCCL_DEVICE = lazyregex.compile(r"\S+:\d+:\d+ \[(\d+)\] ")


def _rank(line: LogLine) -> str:
    for rx in _RANK:
        m = rx.search(line.raw)
        if m:
            return f"rank {m.group(1)}"
    m = _NCCL_DEVICE.search(line.raw)
    if m:
        return f"local GPU {m.group(1)} (NCCL's device index)"
    return ""


@fact("nccl_failure", unit="text", scope="container",
      doc="what an NCCL / collective failure in the logs was: a collective timeout, P2P, "
          "InfiniBand verbs, sockets, or only NCCL's result code; the evidence names the line "
          "and the rank; None when the logs read show none")
def nccl_failure(ctx: ContainerContext) -> Measured:
    for kind, query in _NCCL_KINDS:
        for stream in (PREVIOUS, CURRENT):
            index = ctx.log(stream)
            for hit in index.result(query).first if index is not None else []:
                line = hit.line
                m = query.regex.search(line.message)
                if m is None:
                    continue
                what = kind
                if kind == "collective timeout":
                    work = _WATCHDOG_WORK.match(line.message, m.end())
                    if work is None:  # the watchdog's line without its work item
                        continue
                    secs = int(work.group("ms")) / 1000
                    what = (f"collective timeout: {work.group('op')} SeqNum={work.group('seq')} "
                            f"gave up after {secs:g} s"
                            + (" (the first collective: the ranks never connected)"
                               if work.group("seq") == "1" else ""))
                rank = _rank(line)
                return Measured(what, f"{what}" + (f", on {rank}" if rank else "")
                                + f": {stream_label(stream)} ({ctx.name}) line {line.number}: "
                                  f"{line.message.strip()}")
    unread = ctx.logs_unread()
    if unread:
        raise Unmeasurable(unread[0])
    return Measured(None, "no NCCL failure in the logs read")


# The CUDA error a run ended with (patterns/wordings.yaml cuda_runtime_error): its last one.
_CUDA_ERROR = LOG_QUERIES.add(Query(wordings.regex("cuda_runtime_error")))


@fact("cuda_error", unit="text", scope="container",
      doc="the CUDA error the container's last run ended with: the words of the last "
          "'CUDA error: ...' (PyTorch's RuntimeError or torch.AcceleratorError) or the "
          "CUDA_ERROR_* code in its previous log, else its current log; None when the logs "
          "read show none")
def cuda_error(ctx: ContainerContext) -> Measured:
    ctx.runtime("the container's logs")
    for stream in (PREVIOUS, CURRENT):
        index = ctx.log(stream)
        hits = index.result(_CUDA_ERROR).last if index is not None else []
        if hits:
            hit = hits[-1]
            text = hit.groups[1] or hit.groups[2] or hit.groups[0] or ""
            return Measured(text, f"{stream_label(stream)} ({ctx.name}) line {hit.line.number}: "
                                  f"{hit.line.message.strip()[:200]}")
    if not ctx.logs and ctx.logs_unread():
        raise Unmeasurable(ctx.logs_unread()[0])
    return Measured(None, f"container {ctx.name}: no CUDA error in the logs read")


@fact("pod_cuda_error", unit="text", scope="pod",
      doc="the CUDA error one of the pod's triaged containers last ended with (cuda_error of "
          "the first that has one); None when none has one or the pod is not triaged")
def pod_cuda_error(ctx: PodContext) -> Measured:
    unknown: str | None = None
    for container in ctx.containers:
        found = container.fact("cuda_error")
        if found.unknown:
            unknown = unknown or found.unknown
        elif found.value is not None:
            return Measured(found.value, f"pod {ctx.pod_name}: {found.evidence}")
    if unknown:
        raise Unmeasurable(unknown)
    return Measured(None, f"pod {ctx.pod_name}: no CUDA error in its triaged containers' logs")
