"""Parsed input from someone else, bounded: a bundle's objects, a manifest, a pattern
file. YAML aliases make a few hundred bytes into gigabytes of objects once anything
walks them, so what a file parses to is counted, as everything downstream walks it
(a shared value as often as it is reached), against a budget, before anything else
reads it. One mechanism for every reader of such input (``triage.collect.bundle``,
``triage.lint.manifests``, ``triage.rules.loader``)."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

MAX_FILE_BYTES = 64 * 1024 * 1024  # one file or bundle member
MAX_VALUES_PER_FILE = 2_000_000  # values (dicts, lists, scalars) in one parsed file
MAX_VALUES_TOTAL = 5_000_000  # in all the files of one input


MAX_ENTRIES = 100_000  # files in one directory of input


class Refused(ValueError):
    """Input over its bounds, or not a file to read; the message names it and says why."""


def read_bytes(path: Path, cap: int = MAX_FILE_BYTES) -> bytes:
    """A file's bytes, at most ``cap``: a FIFO, a device or a directory in place of a
    file is refused without waiting on it, and so is a file larger than ``cap``. OSError
    when it cannot be opened."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise Refused(f"{path}: not a regular file")
        data = fh.read(cap + 1)
    if len(data) > cap:
        raise Refused(f"{path}: larger than {cap // 2**20} MiB")
    return data


def read_text(path: Path, cap: int = MAX_FILE_BYTES) -> str:
    """``read_bytes``, as UTF-8 text."""
    return read_bytes(path, cap).decode("utf-8")


def count_values(data: Any, name: str, budget: int) -> int:
    """How many values ``data`` holds, walking shared ones as often as they are
    reached (as everything downstream does); raises ``Refused`` past ``budget``."""
    count = 0
    stack = [data]
    while stack:
        item = stack.pop()
        count += 1
        if count > budget:
            raise Refused(f"{name}: more than {budget:,} values once parsed (YAML aliases "
                            "or an oversized list?); refusing it")
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return count
