"""A checklist step's verdict and a finding's severity: the tool's own words, as enums."""

from __future__ import annotations

from enum import Enum


class Verdict(str, Enum):
    PASS = "pass"
    WARN = "warn"
    FAIL = "fail"
    UNKNOWN = "unknown"
    NA = "n/a"

    def __str__(self) -> str:
        return self.value


class Severity(str, Enum):
    CRITICAL = "critical"
    WARNING = "warning"
    INFO = "info"

    def __str__(self) -> str:
        return self.value

    @property
    def rank(self) -> int:
        """Sort key: critical first."""
        return {"critical": 0, "warning": 1, "info": 2}[self.value]

    @property
    def verdict(self) -> Verdict | None:
        """The verdict a finding of this severity gives its checklist step."""
        return {"critical": Verdict.FAIL, "warning": Verdict.WARN}.get(self.value)
