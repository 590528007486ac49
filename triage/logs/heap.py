"""The C heap of a program that reads big logs a block at a time.

A big log is read in blocks of 8 MiB (``triage/logs/source.py``), and each block is copied a
few times on its way (cut at its last line, digits translated, split). glibc gives an
allocation that size its own mapping and unmaps it when freed, so every copy of every
block faults its pages in afresh: at 100 MiB of log that was 0.15-0.2 s of system time,
half of what grep takes for the whole file. Raising the mapping threshold above a block
and the trim threshold above that keeps freed blocks in the heap for the next one; the
peak is the same (the blocks were alive at once anyway), the heap is just not given back
between blocks.

Only the program turns this on (``allow``, from ``triage.cli``), never a program that
imports the package, and only once a log is big enough to need it; elsewhere than glibc
it does nothing.
"""

from __future__ import annotations

_M_TRIM_THRESHOLD = -1  # glibc's mallopt parameters (malloc.h)
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD_BYTES = 32 * 2**20  # glibc's largest; above a block (BLOCK_BYTES, 8 MiB)
TRIM_THRESHOLD_BYTES = 128 * 2**20

_state = {"allowed": False, "done": False}


def allow() -> None:
    """This process is the program: its heap may be tuned for big reads."""
    _state["allowed"] = True


def keep_freed_blocks() -> bool:
    """Keep freed block-sized allocations in the heap from now on (once; True when
    the C library took both settings)."""
    if not _state["allowed"] or _state["done"]:
        return False
    _state["done"] = True
    try:
        import ctypes

        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc (musl has no mallopt, macOS neither)
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)) and \
        bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES))
