"""Container logs, searched in one streaming pass in bounded memory.

vLLM's lines come in several shapes (see shared reference, section 0):
``INFO 01-11 15:51:18 llm_engine.py:275] msg`` (V0),
``INFO 04-23 14:42:53 [file.py:124] msg`` (0.8-0.10),
``(EngineCore_DP0 pid=441) INFO 11-24 11:44:17 [gpu_worker.py:348] msg`` (V1),
with optional kubectl ``--timestamps``, ``[rank0]:`` prefixes, ANSI colours
and uvicorn's ``INFO:     msg``. Patterns match the *message* part of a line;
its level lets a pattern ignore advisory INFO lines.

How a log is searched (``scan``): the bytes are read in blocks cut at line
ends, so memory stays bounded whatever the log's size. Every regex the
patterns, the start-up parser and the facts use is a ``Query``; all of them
are compiled into one Hyperscan database in prefilter mode (a superset of
each regex: anchors and lookarounds dropped) that finds candidate lines at
grep speed. Only candidate lines are decoded, cleaned, split into prefix
and message, and checked with the exact ``regex`` pattern (with a timeout)
and the query's levels. Without Hyperscan (or for a regex it cannot take)
the same checks run over each block's messages with ``regex`` alone: slower,
same answers.

The modules, in the order a log goes through them:

- ``source``: where a log's bytes are (``LogSource``) and how they are read, in
  blocks of whole lines with over-long lines cut and redraws split;
- ``lines``: one line parsed (``LogLine``, ``parse_line``): level, process, message;
- ``queries``: what a scan is asked (``Query``, ``QuerySet``) and answers per query
  (``Hit``, ``QueryResult``);
- ``prefilter``: the Hyperscan database that finds candidate lines, cached on disk;
- ``repeats``: blocks of repeated lines, decided once per distinct line;
- ``blocks``: a block's lines, found and parsed only when a search asks;
- ``scanning``: the scan itself (``scan``) and what it found (``LogIndex``);
- ``linetime``: the time a line was printed; ``heap``: the C heap for big logs.

This face re-exports the public names; code that needs a module's own parts (its
limits, its private helpers) imports that module.
"""

from __future__ import annotations

from triage.logs.lines import LogLine, clean, decode, has_stamp, parse_line
from triage.logs.queries import Hit, Query, QueryResult, QuerySet, queries_of
from triage.logs.scanning import LogIndex, scan
from triage.logs.source import LogReleased, LogSource

__all__ = [
    "Hit",
    "LogIndex",
    "LogLine",
    "LogReleased",
    "LogSource",
    "Query",
    "QueryResult",
    "QuerySet",
    "clean",
    "decode",
    "has_stamp",
    "parse_line",
    "queries_of",
    "scan",
]
