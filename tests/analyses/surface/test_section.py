"""The surface section: the paper's claims stated with their test and verdict, passing heads listed, figures
written."""

from __future__ import annotations

import pandas as pd

from headstats.analyses.surface.section import surface_claims, surface_section
from headstats.report.blocks import Report, render_markdown
from headstats.tables import RunTables


def surface_tables():
    rows, tests = [], []
    for layer in range(2):
        for head in range(3):
            rows.append({"model": "m", "dataset": "d", "layer": layer, "head": head, "prev": 0.9 if (layer, head) == (1, 2) else 0.1,
                         "self": 0.1, "next": 0.1, "cls": 0.2, "sep": 0.3, "punct": 0.05, "sep_to_sep": 0.8,
                         "other_to_sep": 0.2, "entropy": 4.0 if layer == 0 else 2.0, "entropy_cls": 3.0,
                         "entropy_uniform": 4.5})
            for name, measure, thr in (("previous_token", "prev", 0.5), ("next_token", "next", 0.5),
                                       ("broad", "entropy_ratio", 0.75)):
                reject = (measure == "prev" and (layer, head) == (1, 2)) or (measure == "entropy_ratio" and layer == 0)
                tests.append({"model": "m", "dataset": "d", "role": name, "layer": layer, "head": head, "test": "t",
                              "correction": "holm", "family": "model=m|dataset=d", "alpha": 0.05,
                              "reject": reject, "measure": measure, "threshold": thr})
    return {"surface": pd.DataFrame(rows), "surface_tests": pd.DataFrame(tests)}


def test_surface_claims_and_section(tmp_path):
    tables = surface_tables()
    lines = surface_claims(tables["surface_tests"])
    assert "previous token" in lines[0] and "): 1 head(s) pass (1-2)" in lines[0]
    assert "next token" in lines[1] and "): 0 head(s) pass (none)" in lines[1]
    assert "broad attention" in lines[2] and "): 3 of 3 heads of layer 0 pass (100%), 0 of 3" in lines[2]
    assert not any("*" in line for line in lines)  # no claim sentence restated: each verdict is stated once
    assert not any("hold" in line for line in lines)  # counts only: the verdicts are the registry's
    claims = pd.DataFrame([{"claim": "broad_first_layer", "model": "m", "dataset": "d",
                            "sentence": "heads of the first layer attend broadly", "test": "Fisher's exact test",
                            "verdict": "not shown", "p": 0.1, "correction": "holm",
                            "reason": "not significant after correction", "detail": "3 of 3 against 0 of 3"}])
    report = Report("t")
    surface_section(report, tmp_path, RunTables({**tables, "claims": claims}))
    md = render_markdown(report, tmp_path)
    assert ("- *heads of the first layer attend broadly* (m on d; Fisher's exact test): **not shown**, p = 0.1 "
            "after holm over the run's claims; not significant after correction. 3 of 3 against 0 of 3.") in md
    assert "holm correction over model=m|dataset=d" in md
    assert md.count("first layer attend broadly") == 1  # the verdict once, then its counts as detail
    assert md.index("**not shown**") < md.index("Detail, per model and data set")
    for name in ("surface_position", "surface_kinds", "surface_sep", "surface_entropy"):
        assert list((tmp_path / "figures").glob(f"{name}_m__d.png"))
