"""Report sections registered in the report layer take precedence over an analysis' own hook."""

from __future__ import annotations

import pandas as pd

from headstats.report.blocks import Report
from headstats.report.builder import analysis_sections
from headstats.report.sections import REPORT_SECTIONS, register_section, report_section


def test_builtin_sections_are_discovered():
    for name in ("surface", "clustering", "pictures"):
        assert callable(report_section(name))
    assert report_section("entropy") is None  # entropy keeps its own hook


def test_registered_section_is_used(tmp_path):
    seen = []
    register_section("entropy", lambda report, root, tables: seen.append(sorted(tables)))
    try:
        report = Report("t")
        analysis_sections(report, tmp_path, {"entropy": {"entropy": pd.DataFrame({"a": [1]})}})
        assert seen == [["entropy"]]
    finally:
        REPORT_SECTIONS.unregister("entropy")
