"""Hostile text never breaks a report (issue 37): input texts, sentence ids and data set names holding ``<!--``,
``<script>``, ``</script>``, a ``javascript:`` link and spreadsheet formulas go through a whole run; every section
heading and the interactive view survive in the HTML (the DOM of headless Chromium where installed, else
Python's html.parser), ``report.md`` carries them escaped, the CSV's text cells cannot run as formulas, and a
stale staging folder of a killed ``report`` is cleared and said."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest

from test_bad_input import Sandbox, bad_model_dir, runner, sandbox  # noqa: F401 - fixtures

from headstats.cli.main import app
from headstats.folders import STAGING_MARKER
from headstats.report.blocks import Report, markdown_text, render_html, render_markdown
from headstats.tables.schemas import from_spreadsheet_safe, spreadsheet_safe

HOSTILE = ["<!-- swallow", "<script>alert(1)</script>", "</script><b>x", "[click](javascript:alert(1))",
           "=HYPERLINK(\"http://x\")", "+1+2", "-3-4", "@SUM(A1)", "'quoted", "a & b > c"]


class Structure(HTMLParser):
    """Headings (h1-h3 text), scripts and the interactive view's root, as a browser's parser sees them."""

    def __init__(self):
        super().__init__()
        self.headings: list[str] = []
        self.views = 0
        self.scripts: list[str] = []
        self._in: str | None = None

    def handle_starttag(self, tag, attrs):
        if tag in ("h1", "h2", "h3"):
            self._in = tag
            self.headings.append("")
        if tag == "div" and (dict(attrs).get("class") or "") in ("hs-viewer", "hs-attention-view"):
            self.views += 1
        if tag == "script":
            self._in = "script"
            self.scripts.append("")

    def handle_endtag(self, tag):
        if tag == self._in:
            self._in = None

    def handle_data(self, data):
        if self._in in ("h1", "h2", "h3"):
            self.headings[-1] += data
        elif self._in == "script":
            self.scripts[-1] += data


def dom_of(page: Path) -> tuple[str, str]:
    """The page as the browser's DOM (headless Chromium), else the file itself; and which of the two."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium:
        done = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom",
                               page.resolve().as_uri()], capture_output=True, text=True, timeout=120)
        if done.returncode == 0 and "<h1" in done.stdout:
            return done.stdout, "chromium"
    return page.read_text(encoding="utf-8"), "html.parser"


def expected_headings(markdown: str) -> list[str]:
    return [line.lstrip("#").strip() for line in markdown.splitlines() if re.match(r"#{1,3} ", line)]


def test_every_writer_escapes_hostile_text(tmp_path):
    report = Report("title " + HOSTILE[0])
    for k, text in enumerate(HOSTILE):
        report.heading(f"section {k} {text}")
        report.text(f"text {text} and a [run file](tests.csv) and `code {text}`")
        report.table(pd.DataFrame({"id": [text], "value": [-1.5]}), caption=f"caption {text}")
    page = tmp_path / "report.html"
    page.write_text(render_html(report, tmp_path), encoding="utf-8")
    markdown = render_markdown(report)
    structure = Structure()
    structure.feed(page.read_text(encoding="utf-8"))
    assert len(structure.headings) == 1 + len(HOSTILE) and structure.scripts == []
    assert "javascript:" not in page.read_text() or "href='javascript" not in page.read_text()
    outside_code = re.sub(r"`[^`]*`", "", markdown)  # a code span shows its text as it is, never as HTML
    assert "<script" not in outside_code and "<!--" not in outside_code and "](javascript:" not in outside_code
    assert "[run file](tests.csv)" in markdown and "`code <script>alert(1)</script>`" in markdown  # code as is
    assert markdown_text("see [x](https://example.org/a?b=1&c=2) [y](#anchor) [z](../../etc/passwd) "
                         "[w](//evil.example)") == ("see [x](https://example.org/a?b=1&c=2) [y](#anchor) z w")


def test_csv_text_cells_cannot_run_as_formulas_and_read_back_as_written():
    frame = pd.DataFrame({"id": HOSTILE, "n": range(len(HOSTILE)), "x": [-1.0] * len(HOSTILE)})
    safe = spreadsheet_safe(frame)
    assert not any(v.startswith(("=", "+", "-", "@")) for v in safe["id"])
    assert safe["id"].tolist()[4:9] == ["'=HYPERLINK(\"http://x\")", "'+1+2", "'-3-4", "'@SUM(A1)", "''quoted"]
    assert (safe["x"] == -1.0).all() and safe["n"].tolist() == frame["n"].tolist()  # numbers never touched
    assert from_spreadsheet_safe(safe.copy()).equals(frame)


@pytest.fixture
def hostile_run(sandbox) -> Path:  # noqa: F811
    lines = [{"id": f"{text} {k}", "text_a": f"the cat {text} sat on the mat number {k}"} for k, text in
             enumerate(HOSTILE * 2)]
    data = sandbox.write("hostile.jsonl", "\n".join(json.dumps(x) for x in lines) + "\n")
    protocol = sandbox.protocol(datasets=[{"name": "web_<script>-crawl", "path": str(data)}],
                                analyses=["pictures"])
    out = sandbox.work / "run"
    result = runner.invoke(app, ["run", str(protocol), "--out", str(out), "--no-cache", "--quiet"])
    assert result.exit_code == 0, result.output
    return out


def test_a_run_on_hostile_text_keeps_every_heading_and_the_interactive_view(hostile_run):
    markdown = (hostile_run / "report.md").read_text(encoding="utf-8")
    dom, how = dom_of(hostile_run / "report.html")
    structure = Structure()
    structure.feed(dom)
    wanted = expected_headings(markdown)
    assert len(wanted) > 10
    assert len(structure.headings) == len(wanted), (how, len(structure.headings), len(wanted))
    assert structure.views >= 1, how
    print(f"page structure checked on the DOM of {how}")
    for script in structure.scripts:
        assert "<!--" not in script and "</script" not in script.lower()
    outside_code = re.sub(r"`[^`]*`", "", markdown)
    assert "<script>" not in outside_code and "<!--" not in outside_code and "](javascript:" not in outside_code
    for table in hostile_run.glob("*.csv"):
        for value in pd.read_csv(table, dtype=str, keep_default_na=False).stack():
            assert not (value.startswith(("=", "+", "@")) and not re.fullmatch(r"[+-]?[\d.eE+-]+", value)), \
                (table.name, value)
    # every .tex the run writes compiles, and the data set's name reads as written in the PDF
    from report.test_latex import compile_tables

    text = compile_tables(sorted(hostile_run.glob("*.tex")), hostile_run.parent)
    assert "<script>-crawl" in text  # LaTeX draws the escaped '_' as a rule, which pdftotext reads as a space


def test_a_stale_staging_folder_of_a_killed_report_is_cleared_and_said(hostile_run):
    import os

    stale = hostile_run.parent / ".run.partial-k1ll3d"
    stale.mkdir()
    (stale / STAGING_MARKER).write_text(json.dumps({"pid": 2**22 + 12345, "host": os.uname().nodename}))
    (stale / "report.html").write_text("half")
    not_ours = hostile_run.parent / ".run.partial-mine"
    not_ours.mkdir()
    result = runner.invoke(app, ["report", str(hostile_run), "--no-svg"])
    assert result.exit_code == 0, result.output
    said = [line for line in result.output.splitlines() if "cleared" in line]
    assert len(said) == 1 and said[0].startswith("warning: cleared '.run.partial-k1ll3d'"), result.output
    assert not stale.exists() and not_ours.is_dir()


def forge_table(run: Path, name: str, frame: pd.DataFrame) -> None:
    """Replace a table of a run and its size, sha256 and schema in the manifest (as someone forging a folder would)."""
    import hashlib

    from headstats.tables.schemas import table_schema

    path = run / name
    frame.to_csv(path, index=False)
    manifest = json.loads((run / "manifest.json").read_text())
    data = path.read_bytes()
    manifest["output_sha256"][name] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    if isinstance(manifest.get("table_schemas"), dict):
        manifest["table_schemas"][name] = table_schema(path)
    (run / "manifest.json").write_text(json.dumps(manifest))


@pytest.mark.parametrize("column, value, words", [("query", 999, "query 999"), ("key", -7, "key '-7'"),
                                                  ("weight", float("nan"), "weight 'nan'")])
def test_report_refuses_attention_maps_that_no_run_writes_in_one_line(hostile_run, column, value, words):
    maps = pd.read_csv(hostile_run / "attention_maps.csv")
    maps.loc[3, column] = value
    forge_table(hostile_run, "attention_maps.csv", maps)
    result = runner.invoke(app, ["report", str(hostile_run), "--no-svg"])
    lines = result.output.strip().splitlines()
    assert result.exit_code == 2 and lines[-1].startswith("error: attention_maps.csv holds the ") and words in lines[-1]
    assert "Traceback" not in result.output and not any(p.name.startswith(".run.partial") for p in
                                                        hostile_run.parent.iterdir())


def test_report_on_a_manifest_holding_hostile_strings_keeps_the_page(hostile_run):
    manifest = json.loads((hostile_run / "manifest.json").read_text())
    text = " ".join(HOSTILE)
    manifest["headstats_run"] = text
    for info in manifest["models"].values():
        info["architecture"] = text
    for info in manifest["datasets"].values():
        info["parses"] = text
    manifest["versions"] = {"headstats": text}
    (hostile_run / "manifest.json").write_text(json.dumps(manifest))
    result = runner.invoke(app, ["report", str(hostile_run), "--no-svg"])
    assert result.exit_code == 0, result.output
    markdown = (hostile_run / "report.md").read_text(encoding="utf-8")
    structure = Structure()
    structure.feed((hostile_run / "report.html").read_text(encoding="utf-8"))
    assert len(structure.headings) == len(expected_headings(markdown)) and structure.views >= 1
    outside_code = re.sub(r"`[^`]*`", "", markdown)
    assert "<script>" not in outside_code and "<!--" not in outside_code and "](javascript:" not in outside_code
