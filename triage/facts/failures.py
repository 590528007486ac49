"""Facts that describe a failure the logs show: what failed, and where.

They do not decide that something failed (the patterns do, from the same
lines); they name the parts a person acts on: the transport of an NCCL
failure and the rank that printed it.

Texts: PyTorch ``ProcessGroupNCCL.cpp`` ("Watchdog caught collective
operation timeout: WorkNCCL(SeqNum=N, OpType=OP, ..., Timeout(ms)=N)"),
NCCL ``src/init.cc`` ncclGetErrorString and the ``NCCL WARN`` lines of
``transport/p2p.cc``, ``misc/ibvwrap.cc``, ``transport/net_ib``,
``misc/socket.cc``, ``proxy.cc``; vLLM ``pynccl_wrapper.py`` ("NCCL error:
...") and ``csrc/custom_all_reduce.cuh`` ("Failed: Cuda error ... 'peer
access is not supported between these two devices'").
"""

from __future__ import annotations

import regex

from triage.facts import (
    LOG_QUERIES,
    ContainerContext,
    Measured,
    Unmeasurable,
    fact,
    stream_label,
)
from triage.logs import LogLine, Query
from triage.snapshot import CURRENT, PREVIOUS
from triage.speed import lazyregex

# Most specific first: a timeout or a transport beats the bare result code.
_NCCL_REGEXES: tuple[tuple[str, regex.Pattern[str]], ...] = (
    ("collective timeout", lazyregex.compile(
        r"Watchdog caught collective operation timeout: WorkNCCL\(SeqNum=(?P<seq>\d+), "
        r"OpType=(?P<op>\w+)[^)]*?Timeout\(ms\)=(?P<ms>\d+)\)")),
    ("P2P / CUDA IPC between GPUs", lazyregex.compile(
        r"peer access is not supported between these two devices|failed to open CUDA IPC "
        r"handle|transport/p2p\.cc:\d+ NCCL WARN")),
    ("InfiniBand / RoCE verbs", lazyregex.compile(
        r"NCCL WARN (?:Call to ibv_\w+ failed|NET/IB ?: (?:Got completion|\S+:\d+ async "
        r"fatal))")),
    ("socket (TCP) between ranks", lazyregex.compile(
        r"NCCL WARN (?:socket\w+:|Connect to \S+ failed|NET/Socket|\[Proxy Service \d+\]|"
        r"Socket recv failed)|socketProgress\w*: Call to \w+ from \S+ failed|Proxy Call to "
        r"rank \d+ failed")),
    ("NCCL remote error (a peer exited or the network failed)", lazyregex.compile(
        r"remote process exited or there was a network error|\bncclRemoteError\b")),
    ("NCCL internal error", lazyregex.compile(r"\bncclInternalError\b|NCCL error[^,]*, internal "
                                          r"error")),
    ("NCCL system error", lazyregex.compile(
        r"unhandled system error|\bncclSystemError\b|NCCL_ERROR_SYSTEM_ERROR")),
    ("NCCL CUDA error", lazyregex.compile(r"unhandled cuda error|\bncclUnhandledCudaError\b")),
)
# Answered by the scan's one pass over each log, like every pattern's regex.
_NCCL_KINDS = tuple((kind, LOG_QUERIES.add(Query(rx))) for kind, rx in _NCCL_REGEXES)
_RANK = (
    lazyregex.compile(r"\[[Rr]ank ?(\d+)\]"),
    lazyregex.compile(r"\bWorker_TP(\d+)"),
    lazyregex.compile(r"\brank=(\d+)"),
)
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
                    secs = int(m.group("ms")) / 1000
                    what = (f"collective timeout: {m.group('op')} SeqNum={m.group('seq')} gave "
                            f"up after {secs:g} s"
                            + (" (the first collective: the ranks never connected)"
                               if m.group("seq") == "1" else ""))
                rank = _rank(line)
                return Measured(what, f"{what}" + (f", on {rank}" if rank else "")
                                + f": {stream_label(stream)} ({ctx.name}) line {line.number}: "
                                  f"{line.message.strip()}")
    unread = ctx.logs_unread()
    if unread:
        raise Unmeasurable(unread[0])
    return Measured(None, "no NCCL failure in the logs read")
