"""The files section: each file with its own description (its declared spec), the figure formats written, and how
to rerun."""

from __future__ import annotations

import pandas as pd

from headstats.analyses import list_analyses
from headstats.report.blocks import Report
from headstats.report.sections.files_section import files_section
from headstats.tables import RunTables
from headstats.tables.study_tables import TESTS


def test_each_file_has_its_own_line_and_the_formats_are_named():
    list_analyses()  # the analyses' tables declared
    frame = pd.DataFrame({"x": [1]})
    tables = RunTables({"tests": frame, "roles": frame, "heads_per_layer": frame, "compare_paired_tests": frame})
    tables.add("distance", {"distance": frame}).add("mine", {"mine": frame})
    report = Report("t")
    files_section(report, tables, formats=["png", "pdf", "svg"])
    heading, text = report.blocks
    assert heading.content == "Files and reproduction"
    lines = text.content.splitlines()
    assert lines[:4] == ["- `scores.parquet`: one row per input, layer, head and role (column `score`)",
                         f"- `tests.csv` / `tests.parquet`: {TESTS.description}",
                         "- `roles.csv`: one row per head, a boolean column per role",
                         "- `heads_per_layer.csv`: heads holding each role in each layer"]
    assert TESTS.description.startswith("one row per model, data set, role, layer and head")
    assert not [line for line in lines if "colocation" in line or "compare_" in line]  # not written; not listed
    assert ("- `distance.csv`: per head, the mean distance attended over (pieces), against the uniform reference"
            in lines)
    assert "- `mine.csv`: a table of mine" in lines
    assert "- `figures/`: every figure as PNG (shown here) and PDF, SVG (for papers)" in lines
    assert lines[-1].startswith("- `protocol.resolved.yaml`: rerun with `headstats run protocol.resolved.yaml`")
    png_only = Report("t")
    files_section(png_only, RunTables(), formats=["png"])
    assert "- `figures/`: every figure as PNG (shown here)\n" in png_only.blocks[1].content
