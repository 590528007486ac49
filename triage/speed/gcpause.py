"""Bulk work without the cyclic garbage collector's full passes.

``lint`` keeps every workload it reads (objects, source marks, facts, findings) until its
report is written: the objects live to the end and are dropped together. Each of the
collector's full passes walks all of them, and the passes come as often as objects are
made, so with the collector on, 4,000 Deployments cost 4.6x what 1,000 do; paused, 3.9x
(bench/lint.py --scale). Reference counting still frees what is not in a cycle; the
collector runs again, once, when the work is done.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused() -> Iterator[None]:
    """The collector off for the block (as it was before, after it)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
