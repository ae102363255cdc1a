"""Report section of the ``coreference`` analysis (Clark et al. 2019, section 4.3): antecedent selection by the best
head per mention type against the baselines, the heads that pass and the claim's verdict.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from headstats.analyses.coreference.tables import COREFERENCE, COREFERENCE_TESTS
from headstats.report.blocks import figure_tag
from headstats.report.sections import claim_lines, detail_text, head_label, test_name
from headstats.tables import RunTables


def coreference_section(report: Any, root: Path, tables: RunTables) -> None:
    """Antecedent selection: best head per mention type against the baselines, and the heads that pass."""
    table = tables[COREFERENCE]
    tests = tables.get(COREFERENCE_TESTS, pd.DataFrame())
    report.heading("Coreference: antecedent selection (Clark et al. 2019)")
    report.text(
        "For each mention with an antecedent in the same input, a head selects the candidate mention its head "
        "word attends to most (word-level attention); it is right when that candidate is coreferent. "
        "Baselines: the nearest candidate, and the nearest candidate with the same head word. Heads are "
        "`layer-head`, 0-based (the paper's best head, 5-4 in its 1-based count, is a head of BERT-base; it names "
        "no head of this model). Every head with Wilson intervals: "
        "`coreference.csv`; every head tested against each baseline (the sign-flip test over inputs, whose mentions "
        "share their text; column `test`; p from the binomial or the exact sign-flip law, Monte Carlo draws of it "
        "past a support of 1,000,000, the normal approximation only where an input differs by more than 64 "
        "mentions: column `method` of `coreference_tests.csv`; one-sided, "
        "corrected over the heads): `coreference_tests.csv`."
    )
    for (model, dataset), part in table.groupby(["model", "dataset"], sort=False):
        rows = []
        for kind, cell in part.groupby("mention_type", sort=False):
            heads = cell[cell["predictor"] == "head"]
            if heads.empty or int(heads["n"].iat[0]) == 0:
                continue
            best = heads.loc[heads["accuracy"].idxmax()]
            base = cell[cell["predictor"] != "head"].set_index("predictor")["accuracy"]
            beat = {b: "none" for b in base.index}
            if len(tests):
                passing = tests[(tests["model"] == model) & (tests["dataset"] == dataset)
                                & (tests["mention_type"] == kind) & tests["reject"]]
                beat = {b: ", ".join(head_label(r.layer, r.head) for r in passing[passing["baseline"] == b].itertuples())
                        or "none" for b in base.index}
                if "baseline_degenerate" in tests:  # 0 or 1 by construction: named, never beaten
                    flat = tests[(tests["model"] == model) & (tests["dataset"] == dataset)
                                 & (tests["mention_type"] == kind) & tests["baseline_degenerate"].astype(bool)]
                    beat |= {b: f"not tested: baseline {base[b]:g} by construction" for b in set(flat["baseline"])}
            rows.append({"mention_type": kind, "n": int(best["n"]), "best_head": head_label(best["layer"], best["head"]),
                         "accuracy": best["accuracy"], "ci_low": best["ci_low"], "ci_high": best["ci_high"],
                         **{f"{b}_accuracy": v for b, v in base.items()},
                         **{f"heads_beating_{b}": v for b, v in beat.items()}})
        if not rows:
            report.text(f"{model} / {dataset}: no query (no coreference annotation in this data set).")
            continue
        shown = pd.DataFrame(rows)
        report.table(shown, f"{model} on {dataset}: per mention type, the most accurate head (chosen on the same "
                     "queries: its accuracy is optimistic) against the baselines, and every head that beats each "
                     "baseline in the corrected test (accuracies as fractions).", csv="coreference.csv",
                     latex=_coreference_latex(shown, tests, f"coreference_{figure_tag(model, dataset)}.tex",
                                              model, dataset))
        overall = shown[shown["mention_type"] == "all"]
        if len(overall):
            r = overall.iloc[0]
            if verdicts := claim_lines(tables, ("coreference_head_beats_baselines",), model=model, dataset=dataset):
                report.text("\n".join(verdicts))
            test = test_name(tests["test"].iat[0]) if "test" in tests and len(tests) else "a paired test"
            report.text(detail_text("against one baseline", (
                f"on {model} / {dataset} the best head {r['best_head']} selects {r['accuracy']:.3f} of antecedents "
                f"against the nearest mention's {r['nearest_mention_accuracy']:.3f}; heads beating the nearest "
                f"mention ({test}, one-sided, corrected over heads): {r['heads_beating_nearest_mention']}.")))


def _coreference_latex(shown, tests, file: str, model: str, dataset: str):
    """The antecedent table with its test's sentence."""
    from headstats.report.latex import LatexTable, header_text

    test = test_name(tests["test"].iat[0]) if "test" in tests and len(tests) else "a paired test"
    words = {"mention_type": "Mention", "n": "$n$", "best_head": "Best head", "accuracy": "Acc.",
             "ci_low": "CI low", "ci_high": "CI high"}
    columns = {c: words.get(c) or header_text(c.replace("heads_beating_", "beating_").replace("_accuracy", ""))
               for c in shown.columns}
    return LatexTable(file, f"Every head against each baseline ({test}, one-sided, corrected over heads): on "
                      f"{model} / {dataset}, per mention type the most accurate head (chosen on the same queries, "
                      "so optimistic) with its interval, each baseline's accuracy and the heads that beat it.",
                      columns=columns)
