"""Where a report or a bundle may go (``--output-file``), decided before anything is written.

- A regular file, a link to one, or a new path: written next to it and renamed over it,
  so the path holds the old file or the new one, never half of one.
- A stream of this process: ``-``, ``/dev/stdout``, ``/dev/stderr``, ``/dev/fd/N``,
  ``/proc/self/fd/N`` or a link to any of them. These are links the kernel resolves to an
  open file descriptor (``2>err.log`` makes ``/dev/stderr`` name a regular file): written
  through that descriptor, never replaced, or a rename would replace the system's
  ``/dev/stderr`` link itself.
- A device, a named pipe, a socket, a directory, another process's descriptor, or a
  link to any of them: refused, left as it is.

Nothing but the path given is ever replaced.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from triage.speed import lazyregex

_KINDS = ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISFIFO, "a named pipe"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISDIR, "a directory"))
# The directories whose entries are a process's open file descriptors (after realpath:
# /proc/self is a link to /proc/PID, /proc/thread-self to /proc/PID/task/TID, and
# /dev/fd to /proc/self/fd on Linux; /dev/fd is a file system of its own on the BSDs).
_FD_DIR = lazyregex.compile(r"^(?:/proc/(?:(\d+)(?:/task/\d+)?|self|thread-self)|/dev)/fd$")
_MAX_LINKS = 40  # what the kernel follows before ELOOP


@dataclass(frozen=True)
class Target:
    """Where ``path`` is written: ``fd`` for a stream of this process (written through),
    ``refused`` for what must not be replaced (why), else the file itself."""

    path: Path
    fd: int | None = None
    refused: str | None = None


def _descriptor(path: str) -> tuple[int, bool] | None:
    """(N, this process's) when ``path`` names an entry of a descriptor directory."""
    parent, name = os.path.split(path)
    if not name.isdigit():
        return None
    try:
        real = os.path.realpath(parent)
    except (OSError, ValueError):
        return None
    m = _FD_DIR.match(real)
    if m is None:
        return None
    return int(name), m.group(1) is None or int(m.group(1)) == os.getpid()


def classify(path: Path) -> Target:
    """Decide what writing ``path`` means (module docstring), without writing anything."""
    if str(path) == "-":
        return Target(path, fd=1)
    hop = os.path.abspath(path)
    for _ in range(_MAX_LINKS):
        named = _descriptor(hop)
        if named is not None:
            fd, ours = named
            if not ours:
                return Target(path, refused=f"another process's file descriptor ({hop})")
            return Target(path, fd=fd)
        try:
            link = os.readlink(hop)
        except (OSError, ValueError):
            break  # not a link (or not there): what it is, is said below
        hop = os.path.join(os.path.realpath(os.path.dirname(hop)), link)
    else:
        return Target(path, refused="a chain of more than 40 links")
    try:
        st = os.stat(path)  # through the links: what the path finally names
    except (OSError, ValueError):
        return Target(path)  # a new path, or a dangling link (replaced)
    with contextlib.suppress(OSError, ValueError, AttributeError):
        if os.path.samestat(st, os.fstat(sys.stdout.fileno())):
            return Target(path, fd=1)  # this process's stdout under another name
    what = next((name for test, name in _KINDS if test(st.st_mode)), None)
    if what is None:
        return Target(path)
    if os.path.islink(path):
        return Target(path, refused=f"a link to {what} ({os.path.realpath(path)})")
    return Target(path, refused=what)


def open_stream(fd: int) -> BinaryIO:
    """A binary file on a copy of descriptor ``fd`` (closing it leaves ``fd`` open), after
    what Python buffered for it was flushed."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            if stream.fileno() == fd:
                stream.flush()
    return os.fdopen(os.dup(fd), "wb")


def write_through(fd: int, data: bytes) -> None:
    """Write all of ``data`` to an open descriptor of this process."""
    with open_stream(fd) as out:
        out.write(data)
