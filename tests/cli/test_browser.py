"""The HTML report in a real headless Chromium: the pictures are drawn, on screen and on paper.

Debian's ``chromium`` renders the reports of the CUDA OOM, probe-kill and
queueing fixtures (the last scanned with a real Prometheus, so it has window
charts) at a desktop width and at an A4 print width, and prints them to PDF.
What was drawn is checked by its pixels: the timeline's row bands, the
budget bar's weights and KV cache colours, in area, not just in the markup;
in the PDF, the same fills in the page's drawing operators. In CI (``CI``
set) a missing Chromium fails; elsewhere it skips.
"""

from __future__ import annotations

import re
import struct
import subprocess
import zlib
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.cli.test_reports import hostile, parse
from tests.conftest import FIXTURES, need, replay_with_prometheus, run_cli
from triage.results import Report
from triage.writers import html as html_writer

DESKTOP, PRINT = 1280, 794  # px: a laptop browser window; A4 at 96 dpi
BAND = (0xF9, 0xFA, 0xFB)  # timeline row band
WEIGHTS = (0x15, 0x70, 0xEF)  # budget: weights (also timeline progress marks, chart lines)
KV = (0x12, 0xB7, 0x6A)  # budget: KV cache
UNKNOWN = (0xEA, 0xEC, 0xF0)  # budget: vLLM's share not logged


def decode_png(data: bytes) -> tuple[int, int, list[bytes]]:
    """(width, height, rows of RGB bytes) of an 8-bit RGB or RGBA PNG, as Chromium writes."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", 0
    height = depth = color = 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    assert depth == 8 and color in (2, 6), (depth, color)
    bpp = 3 if color == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows: list[bytes] = []
    prev = bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + a) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + b) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xFF
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else b if pb <= pc else c
                line[i] = (line[i] + pred) & 0xFF
        prev = line
        rgb = bytes(line) if bpp == 3 else bytes(
            v for j in range(0, stride, 4) for v in line[j:j + 3])
        rows.append(rgb)
    return width, height, rows


def count(rows: list[bytes], color: tuple[int, int, int]) -> int:
    needle = bytes(color)
    total = 0
    for row in rows:
        for i in range(0, len(row), 3):
            if row[i:i + 3] == needle:
                total += 1
    return total


def chromium(*args: str, profile: Path) -> None:
    binary = need("chromium")
    proc = subprocess.run(
        [binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
         f"--user-data-dir={profile}", *args],
        capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]


def screenshot(page: Path, width: int, tmp: Path) -> tuple[int, int, list[bytes]]:
    shot = tmp / f"{page.stem}-{width}.png"
    chromium(f"--window-size={width},3200", f"--screenshot={shot}", page.as_uri(),
             profile=tmp / f"profile-{page.stem}-{width}")
    return decode_png(shot.read_bytes())


def pdf_fills(pdf: bytes) -> list[tuple[float, float, float]]:
    """The RGB fill colours the PDF's content streams set (``r g b rg``)."""
    fills = []
    for m in re.finditer(rb"stream\r?\n(.*?)\r?\nendstream", pdf, re.S):
        try:
            body = zlib.decompress(m.group(1))
        except zlib.error:
            body = m.group(1)
        for f in re.finditer(rb"([\d.]+) ([\d.]+) ([\d.]+) rg", body):
            fills.append((float(f.group(1)), float(f.group(2)), float(f.group(3))))
    return fills


def has_fill(fills: list[tuple[float, float, float]], color: tuple[int, int, int]) -> bool:
    want = tuple(c / 255 for c in color)
    return any(all(abs(a - b) < 0.01 for a, b in zip(f, want, strict=True)) for f in fills)


def _html(name: str, tmp: Path, backfilled: Any) -> Path:
    page = tmp / f"{name}.html"
    incident = yaml.safe_load((FIXTURES / name / "incident.yaml").read_text())
    history = (incident.get("prometheus") or {}).get("history")
    if history:
        from tests.cli.test_prometheus import AT

        with replay_with_prometheus(name, tmp, backfilled(history)) as (_s, kubeconfig, _u):
            run = run_cli("scan", "--kubeconfig", str(kubeconfig), *incident["scan_args"],
                          "-o", "html", "--output-file", str(page), env=AT)
    else:
        run = run_cli("analyze", str(FIXTURES / name), "-o", "html", "--output-file", str(page))
    assert run.code in (0, 1), run.stderr
    return page


@pytest.mark.parametrize("name", ["cuda-oom", "probe-kill-vs-crash-while-loading",
                                  "queueing-last-15m"])
def test_timeline_and_budget_are_drawn(name: str, tmp_path: Path, backfilled: Any) -> None:
    page = _html(name, tmp_path, backfilled)
    doc = parse(page.read_text(encoding="utf-8"))
    classes = [attrs.get("class") for tag, attrs in doc.tags if tag == "svg"]
    assert "timeline" in classes and "budget" in classes, classes
    # Rows of the timeline: several bands across most of the page width. The queueing
    # incident is one row (requests waiting in the last 15 minutes): the start three days
    # before it is the note above the axis, not the axis's start.
    band_area = 0.5 * 22 * 3  # of the page width: three rows across half of it
    if name == "queueing-last-15m":
        assert classes.count("chart") == 4
        assert 'class="history">Earlier: ' in page.read_text(encoding="utf-8")
        band_area = 0.4 * 22  # one row, beside its label
    for width in (DESKTOP, PRINT):
        w, _h, rows = screenshot(page, width, tmp_path)
        assert w == width
        bands = count(rows, BAND)
        assert bands > band_area * width, (width, bands)
        weights, kv = count(rows, WEIGHTS), count(rows, KV)
        assert weights > 0.1 * width * 20, (width, weights)  # the weights segment, in area
        if name != "probe-kill-vs-crash-while-loading":
            assert kv > 0.02 * width * 20, (width, kv)  # the KV cache segment
        else:
            assert count(rows, UNKNOWN) > 0.2 * width * 20  # the start was cut short
    pdf = tmp_path / f"{name}.pdf"
    chromium("--no-pdf-header-footer", f"--print-to-pdf={pdf}", page.as_uri(),
             profile=tmp_path / "profile-pdf")
    data = pdf.read_bytes()
    assert data[:5] == b"%PDF-"
    fills = pdf_fills(data)
    assert has_fill(fills, WEIGHTS) and has_fill(fills, BAND), sorted(set(fills))[:20]


def test_hostile_report_renders(tmp_path: Path) -> None:
    """A report whose log lines try to break out of the page still renders, and draws."""
    from tests.cli.test_reports import fixture_report

    page = tmp_path / "hostile.html"
    page.write_text(html_writer.render(Report.from_document(hostile(fixture_report())), False),
                    encoding="utf-8")
    _w, _h, rows = screenshot(page, DESKTOP, tmp_path)
    assert count(rows, WEIGHTS) > 0.1 * DESKTOP * 20


FIX_GREEN = (0xEC, 0xFD, 0xF3)  # a card's fix box
CRITICAL_RED = (0xB4, 0x23, 0x18)  # a critical card's left border


@pytest.mark.parametrize("name", ["cuda-oom", "kv-cache-too-small-v1",
                                  "probe-kill-vs-crash-while-loading", "busy-namespace"])
def test_first_900_px_show_the_failure_and_its_fix(name: str, tmp_path: Path) -> None:
    """In Chromium, the top 900 px of the page hold a critical card and its fix box; in the
    markup, the card (failure, proof, fix with its number) comes before the pods."""
    page = tmp_path / f"{name}.html"
    run = run_cli("analyze", str(FIXTURES / name), "-o", "html", "--output-file", str(page))
    assert run.code == 1, run.stderr
    shot = tmp_path / f"{name}-first.png"
    chromium(f"--window-size={DESKTOP},900", f"--screenshot={shot}", page.as_uri(),
             profile=tmp_path / "profile-first")
    width, height, rows = decode_png(shot.read_bytes())
    assert (width, height) == (DESKTOP, 900)
    assert count(rows, FIX_GREEN) > 0.3 * width * 40  # a fix box, in area
    assert count(rows, CRITICAL_RED) > 5 * 60  # a critical card's border
    text = page.read_text(encoding="utf-8")
    cards, pods = text.index('class="cards"'), text.index("<h2>Pods</h2>")
    first = {"cuda-oom": "--gpu-memory-utilization=0.9",
             "kv-cache-too-small-v1": "--max-model-len=94176",
             "probe-kill-vs-crash-while-loading": "failureThreshold: 48",
             "busy-namespace": "16Gi"}[name]
    assert cards < text.index(first) < pods
