"""The README's checklist table names the ten steps as the code does, in order."""

from __future__ import annotations

import re

from tests.conftest import ROOT
from triage.checklist import STEPS

README = (ROOT / "README.md").read_text()


def test_the_checklist_table_is_the_codes() -> None:
    table = README.split("## The checklist", 1)[1].split("\n\n")[2]
    rows = [line for line in table.splitlines() if re.match(r"^\| \d+ \|", line)]
    titles = [row.split("|")[2].strip().replace("`", "") for row in rows]
    assert titles == [s.title for s in STEPS]
