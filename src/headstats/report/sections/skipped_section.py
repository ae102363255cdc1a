"""Analyses that did not run, said once at the top of the report: where, why, and the fix.
"""

from __future__ import annotations

import pandas as pd

from headstats.report.blocks import Report


def skipped_analyses(analyses: dict[str, dict[str, pd.DataFrame]]) -> list[str]:
    """One line per analysis and reason it was skipped for (``<analysis>_skipped`` tables: model, data set,
    reason), naming where and the fix (the analysis' spec's ``fix``); said once, at the top of the report."""
    from headstats.analyses import ANALYSES

    lines = []
    for name, tables in analyses.items():
        for key, table in tables.items():
            if not key.endswith("_skipped") or table is None or table.empty or "reason" not in table:
                continue
            for reason, part in table.groupby("reason", sort=False):
                where = ", ".join(f"{m} on {d}" for m, d in part[["model", "dataset"]].drop_duplicates()
                                  .itertuples(index=False))
                fix = (ANALYSES.get(name).fix if name in ANALYSES else "") or \
                    f"give it a model it can run on, or leave `{name}` out of `analyses`"
                lines.append(f"- **{name}** did not run ({where}): {str(reason).rstrip('.')}. Fix: {fix}.")
    return lines


def skipped_section(report: Report, analyses: dict[str, dict[str, pd.DataFrame]]) -> None:
    """The lines of :func:`skipped_analyses` under **Not run**, when any analysis was skipped."""
    skipped = skipped_analyses(analyses)
    if skipped:
        report.text("**Not run**, said once here:\n\n" + "\n".join(skipped))
