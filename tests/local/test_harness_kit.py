"""Helpers of the harness tests (test_harness_*.py): run `elves run` as a person would, read
what it wrote, look at the report in headless Chromium. No tests here."""

from __future__ import annotations

import json
import os
import re
import struct
import subprocess
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from prerequisites import require

from elves.study.suite import scale_document

REPO = Path(__file__).resolve().parents[2]
ELVES = REPO / ".venv" / "bin" / "elves"
CHROMIUM = Path("/usr/bin/chromium")
EXAMPLES = REPO / "loadtests" / "examples"
# A run's planned length plus preparation, drain and analysis stays well under this.
RUN_TIMEOUT_SECONDS = 600


@dataclass
class ElvesRun:
    exit_code: int
    output: str  # stdout and stderr together, as a person sees them
    report_dir: Path | None

    @property
    def summary(self) -> dict[str, Any]:
        assert self.report_dir is not None, self.output
        return json.loads((self.report_dir / "summary.json").read_text())

    @property
    def status(self) -> dict[str, Any]:
        return self.summary["status"]

    @property
    def series(self) -> dict[str, Any]:
        assert self.report_dir is not None, self.output
        return json.loads((self.report_dir / "series.json").read_text())

    def run_results(self, index: int = 0) -> dict[str, Any]:
        return self.status["runs"][index]["results"]

    def check(self, name: str) -> dict[str, Any]:
        checks = {c["name"]: c for c in self.status["verdict"]["checks"]}
        assert name in checks, f"no check {name!r} among {sorted(checks)}"
        return checks[name]

    def plot(self, chart: str, label: str, run: int = 0) -> list[tuple[float, float | None]]:
        lines = {line["label"]: line["points"] for line in self.series["runs"][run]["series"][chart]}
        assert label in lines, f"no {label!r} in the {chart} plot: {sorted(lines)}"
        return [(t, v) for t, v in lines[label]]


def loadtest(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "elves.dev/v1alpha1", "kind": "LoadTest", "metadata": {"name": name}, "spec": spec}


def example(name: str, duration: str, **spec: Any) -> dict[str, Any]:
    """The example file `name`, its load shortened to `duration` with the suite's own scaling
    (so a test and the published results run the same LoadTest), `spec` fields replaced."""
    document = scale_document(yaml.safe_load((EXAMPLES / name).read_text()), duration)
    document["spec"].update(spec)
    return document


def run_elves(tmp_path: Path, document: dict[str, Any] | Path, *others: dict[str, Any],
              env: dict[str, str] | None = None) -> ElvesRun:
    """`elves run FILE --reports DIR`, waited for (its own deadlines end it; this is a backstop).
    `others`: documents written into the file before the LoadTest (its SystemUnderTest); `env`:
    added to the environment (k6 hands it to the script as __ENV)."""
    if isinstance(document, Path):
        path = document
    else:
        path = tmp_path / f"{document['metadata']['name']}.yaml"
        path.write_text(yaml.safe_dump_all([*others, document], sort_keys=False))
    completed = subprocess.run([str(ELVES), "run", str(path), "--reports", str(tmp_path / "reports")],
                               cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               timeout=RUN_TIMEOUT_SECONDS, env={**os.environ, **(env or {})})
    match = re.search(r"^Report: (.+)$", completed.stdout, re.MULTILINE)
    report = Path(match.group(1)).parent if match else None
    return ElvesRun(completed.returncode, completed.stdout, report)


def require_chromium() -> None:
    require(CHROMIUM.exists(), f"{CHROMIUM} is missing for the report screenshot (tools/install-local-deps.sh)")


def screenshot(html: Path, png: Path, profile: Path, height: int = 3000) -> str:
    """Chromium's headless screenshot of a local page; returns what Chromium logged."""
    completed = subprocess.run([
        str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
        "--enable-logging=stderr", "--v=0", f"--window-size=1100,{height}", f"--screenshot={png}",
        html.resolve().as_uri()], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    assert completed.returncode == 0 and png.exists(), completed.stdout[-3000:]
    return completed.stdout


def png_pixels(path: Path) -> tuple[int, int, list[bytes]]:
    """(width, height, rows of RGB(A) bytes) of an 8-bit RGB or RGBA PNG, as Chromium writes them."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    offset, idat = 8, b""
    width = height = channels = 0
    while offset < len(data):
        length, kind = struct.unpack(">I4s", data[offset:offset + 8])
        body = data[offset + 8:offset + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and color in (2, 6), f"unexpected PNG format depth={depth} color={color}"
            channels = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
        offset += 12 + length
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, previous = [], bytearray(stride)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            left = line[x - channels] if x >= channels else 0
            up, up_left = previous[x], previous[x - channels] if x >= channels else 0
            if kind == 1:
                line[x] = (line[x] + left) & 0xFF
            elif kind == 2:
                line[x] = (line[x] + up) & 0xFF
            elif kind == 3:
                line[x] = (line[x] + (left + up) // 2) & 0xFF
            elif kind == 4:
                estimate = left + up - up_left
                pa, pb, pc = abs(estimate - left), abs(estimate - up), abs(estimate - up_left)
                line[x] = (line[x] + (left if pa <= pb and pa <= pc else up if pb <= pc else up_left)) & 0xFF
        rows.append(bytes(line))
        previous = line
    return width, height, rows


def color_counts(path: Path, colors: dict[str, tuple[int, int, int]], tolerance: int = 24) -> dict[str, int]:
    """How many pixels are close to each named colour, plus 'non-white'."""
    width, _, rows = png_pixels(path)
    channels = len(rows[0]) // width
    counts = {name: 0 for name in colors} | {"non-white": 0}
    for row in rows:
        for x in range(0, len(row), channels):
            r, g, b = row[x], row[x + 1], row[x + 2]
            if r < 240 or g < 240 or b < 240:
                counts["non-white"] += 1
            for name, (cr, cg, cb) in colors.items():
                if abs(r - cr) <= tolerance and abs(g - cg) <= tolerance and abs(b - cb) <= tolerance:
                    counts[name] += 1
    return counts
