"""The files section: each file with its own description, the figure formats written, and how to rerun."""

from __future__ import annotations

from headstats.analyses import get_analysis
from headstats.report.blocks import Report
from headstats.report.sections.files_section import files_section


def test_each_file_has_its_own_line_and_the_formats_are_named():
    report = Report("t")
    files_section(report, {"distance": get_analysis("distance").describe("distance"), "mine": "a table of the mine analysis (what)"},
                  formats=["png", "pdf", "svg"])
    heading, text = report.blocks
    assert heading.content == "Files and reproduction"
    lines = text.content.splitlines()
    assert "- `distance.csv`: per head, the mean distance attended over (pieces), against the uniform reference" in lines
    assert "- `mine.csv`: a table of the mine analysis (what)" in lines
    assert "- `figures/`: every figure as PNG (shown here) and PDF, SVG (for papers)" in lines
    assert lines[-1].startswith("- `protocol.resolved.yaml`: rerun with `headstats run protocol.resolved.yaml`")
    png_only = Report("t")
    files_section(png_only, formats=["png"])
    assert "- `figures/`: every figure as PNG (shown here)\n" in png_only.blocks[1].content
