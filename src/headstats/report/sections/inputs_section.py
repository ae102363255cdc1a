"""The inputs of a study: read, scored and skipped per (model, data set) with the reasons, and the inputs taking part
in each role's test.
"""

from __future__ import annotations

import pandas as pd

from headstats.tables.study_tables import Analysis
from headstats.report.blocks import Report


def inputs_section(report: Report, manifest: dict, analysis: Analysis) -> None:
    """Inputs read, scored and skipped per (model, dataset), and inputs taking part per role."""
    report.heading("Inputs used and skipped")
    rows = []
    for key, counts in manifest["inputs"].items():
        model, dataset = counts.get("model"), counts.get("dataset")
        if model is None or dataset is None:  # manifests before model and dataset were recorded per entry
            model, dataset = key.rsplit("/", 1)
        skipped = ", ".join(f"{reason}: {n}" for reason, n in counts["skipped"].items() if n) or "none"
        notes = ", ".join(f"{reason}: {n}" for reason, n in counts["notes"].items() if n) or "none"
        dropped = "; ".join(f"{r} ({why})" for r, why in counts["roles_not_applicable"].items()) or "none"
        rows.append(dict(model=model, dataset=dataset, read=counts["n_records"], scored=counts["n_scored"],
                         skipped=skipped, notes=notes, roles_not_applicable=dropped))
    report.table(pd.DataFrame(rows), "Inputs read, scored and skipped, with the reasons; check that the skipped "
                 "ones are few.", fold=False)
    part = analysis.tables.get("participation")
    if part is not None:
        report.table(part, "Inputs taking part per role: an input without an arc of a relation takes no part in "
                     "its test, so N differs between roles.", max_rows=200, csv="participation.csv")
