"""The strongest heads: ranked by mean - tau within each role, roles in the figures' order, with the adjusted
lower bound beside the marginal one."""

from __future__ import annotations

import pandas as pd

from headstats.tables.study_tables import strongest_heads
from headstats.tables.study_tables import Analysis
from headstats.config.protocol import Protocol
from headstats.report.blocks import Report
from headstats.analyses.pande_roles.section.strongest import strongest_section


def planted_tests() -> pd.DataFrame:
    rows = []
    for role, means in (("syntactic", [4.0, 3.5, 1.0]), ("local", [3.2, 5.0, 4.1])):
        for head, mean in enumerate(means):
            rows.append(dict(model="m", dataset="d", role=role, layer=0, head=head, test="t", n=20, mean=mean,
                             sd=1.0, tau=3.0, p_unc=0.001, p_corr=0.006, alpha=0.05, effect_size=mean - 3.0,
                             ci_low=mean - 0.5, ci_low_adj=mean - 0.8, reject=mean > 3.0))
    return pd.DataFrame(rows)


def test_strongest_heads_ranked_by_mean_minus_tau_with_the_adjusted_bound():
    tests = planted_tests()
    protocol = Protocol.model_validate({"name": "p", "models": ["m"], "datasets": [{"name": "d", "path": "x.txt"}],
                                        "report": {"top_k": 2}})
    strongest = strongest_heads(tests, k=2).drop(columns="ci_low_adj", errors="ignore")
    report = Report("t")
    strongest_section(report, Analysis(tests=tests, roles=pd.DataFrame(), tables={"strongest_heads": strongest}),
                      protocol)
    table = report.blocks[1]
    assert report.blocks[0].content == "Strongest heads per role" and table.csv == "strongest_heads.csv"
    shown = table.content
    # local before syntactic (the figures' order), largest mean - tau first: local 0-1 (2.0), 0-2 (1.1)
    assert list(zip(shown["role"], shown["head"])) == [("local", 1), ("local", 2), ("syntactic", 0), ("syntactic", 1)]
    columns = list(shown.columns)
    assert columns[columns.index("ci_low") + 1] == "ci_low_adj"
    assert shown["ci_low_adj"].tolist() == [4.2, 3.3, 3.2, 2.7]
    assert "The 2 heads with the largest effect in score units" in table.caption
    assert "`ci_low_adj`, adjusted to the Holm correction (Bonferroni-adjusted level" in table.caption
