"""Stopping an exec credential plugin that does not return: the child processes a load
started, and their descendants, found in /proc and ended (SIGTERM, then SIGKILL)."""

from __future__ import annotations

import os
import signal
import time
from contextlib import suppress
from pathlib import Path


def _stop(pids: set[int], grace: float = 0.5) -> None:
    """SIGTERM these processes and their descendants, SIGKILL what is left after
    ``grace`` seconds (a plugin's own children hold its output pipe open)."""
    tree = set(pids)
    frontier = set(pids)
    while frontier:
        frontier = set().union(*(_children(p) for p in frontier)) - tree
        tree |= frontier
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in tree:
            with suppress(OSError):
                os.kill(pid, sig)
        deadline = time.monotonic() + grace
        while sig == signal.SIGTERM and time.monotonic() < deadline and \
                any(_running(p) for p in tree):
            time.sleep(0.02)
        tree = {p for p in tree if _running(p)}
        if not tree:
            return


def _running(pid: int) -> bool:
    """Alive and not a zombie (Linux /proc; after kill(0) elsewhere)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        try:
            os.kill(pid, 0)
        except OSError:
            return False
        return not Path("/proc").is_dir()
    return state not in ("Z", "X")


def _children(parent: int | None = None) -> set[int]:
    """The child processes of ``parent`` (this process) (Linux /proc; empty elsewhere)."""
    out: set[int] = set()
    me = os.getpid() if parent is None else parent
    with suppress(OSError):
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            with suppress(OSError, ValueError, IndexError):
                stat_text = Path(f"/proc/{entry}/stat").read_text()
                if int(stat_text.rsplit(")", 1)[1].split()[1]) == me:
                    out.add(int(entry))
    return out
