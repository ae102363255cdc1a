"""Report section of the ``probing`` analysis (Clark et al. 2019, section 5): UAS of each probe with intervals, the
paper's numbers and the tests against the baselines.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from headstats.analyses.probing.tables import PROBES_TABLE
from headstats.report.sections import claim_lines, detail_text
from headstats.tables import RunTables

#: UAS of Clark et al. (2019), BERT-base on WSJ (their Table 3), for the report.
#: Clark et al. (2019) Table 3: UAS in percent of BERT-base on the WSJ (the paper's numbers, not this model's).
PAPER_UAS = {"right_branching": 26, "distance_and_words": 58, "attention_only": 61, "attention_and_words": 77}


def probing_section(report: Any, root: Path, tables: RunTables) -> None:
    """Probing classifiers: UAS of each probe with intervals and the tests against the baselines."""
    probes = tables[PROBES_TABLE]
    report.heading("Probing classifiers over all heads (Clark et al. 2019)")
    report.text(
        "Four ways of attaching every word to its head, scored by unlabeled attachment score (UAS, punctuation "
        "left out) on held-out inputs (every fifth input of the file); the probes are trained with Adam (lr "
        "0.002), in mini-batches of sentences over a few epochs (options `batch_size`, `epochs`), seeded. "
        "`attention_only` combines every head's attention in "
        "both directions with one weight each; `attention_and_words` makes those weights functions of the two "
        "words' vectors; `distance_and_words` (baseline) sees only the words and their distance; "
        "`right_branching` attaches each word to the next. Word vectors: the model's input embeddings unless a "
        "file was given (column `vectors`). p-values: McNemar's exact test, one-sided, on the same held-out "
        "words. All rows: `probes.csv`."
    )
    shown = probes.assign(paper_bert_base_uas=probes["probe"].map(PAPER_UAS).astype(float) / 100)  # float when empty
    cols = [c for c in ["model", "dataset", "probe", "vectors", "n_words", "uas", "ci_low", "ci_high",
                        "paper_bert_base_uas", "p_corr_vs_right_branching", "p_corr_vs_distance_and_words"]
            if c in shown.columns]
    report.table(shown[cols], "UAS of each probe with its Wilson interval (fractions of the held-out words), the "
                 "paper's UAS as a fraction (`paper_bert_base_uas`: Clark et al.'s number for BERT-base on the WSJ, "
                 "a different model and corpus, for orientation only), and the corrected p-value of each probe "
                 "against each baseline.", csv="probes.csv", latex=_probes_latex(shown))
    for (model, dataset), part in probes.groupby(["model", "dataset"], sort=False):
        att = part.set_index("probe")
        if "attention_only" not in att.index or "p_corr_vs_right_branching" not in att.columns:
            continue
        p = att.loc["attention_only", "p_corr_vs_right_branching"]
        if verdicts := claim_lines(tables, ("probes_beat_baselines",), model=model, dataset=dataset):
            report.text("\n".join(verdicts))
        report.text(detail_text("against one baseline", (
            f"on {model} / {dataset} the attention-only probe's UAS is {att.loc['attention_only', 'uas']:.3f} "
            f"against right-branching's {att.loc['right_branching', 'uas']:.3f} (McNemar's exact test on the "
            f"held-out words, one-sided, {att['correction'].iat[0]}-corrected: p = {p:.2g}).")))


#: The probes as a paper's table names them (the ids, with their escaped underscores, overfilled the page).
PROBE_WORDS = {"right_branching": "right-branching", "distance_and_words": "distance + words",
               "attention_only": "attention only", "attention_and_words": "attention + words"}


def _probes_latex(shown):
    """``probes.tex``: the paper's columns, the interval in one column, with the test's sentence."""
    from headstats.report.latex import LatexTable

    frame = shown.assign(interval=[f"[{a:.3f}, {b:.3f}]" for a, b in zip(shown["ci_low"], shown["ci_high"])],
                         probe=[PROBE_WORDS.get(str(p), str(p)) for p in shown["probe"]])
    names = {"dataset": "Data set", "probe": "Probe", "n_words": "Words", "uas": "UAS", "interval": "95\\% CI",
             "paper_bert_base_uas": "Paper", "p_corr_vs_right_branching": "$p$ vs. RB",
             "p_corr_vs_distance_and_words": "$p$ vs. D\\&W"}
    if frame["model"].nunique() > 1:
        names = {"model": "Model", **names}
    return LatexTable("probes.tex", "McNemar's exact test, one-sided, on the same held-out words, corrected over "
                      "the probes: does a probe's UAS (with its Wilson interval) beat the right-branching baseline "
                      "(RB) and the distance-and-words probe (D&W)? Paper: Clark et al.'s UAS for BERT-base on the "
                      "WSJ, for orientation only.", columns={k: v for k, v in names.items() if k in frame},
                      frame=frame)
