"""The probing section: the probes' UAS beside the paper's, the attention-only probe tested against
right-branching on the same held-out words, and the claim's verdict from the registry (claims.csv)."""

from __future__ import annotations

from types import SimpleNamespace

import pandas as pd
from scipy.stats import binomtest

from headstats.analyses.probing.finish import finish_probes
from headstats.analyses.probing.section import PAPER_UAS, probing_section
from headstats.report.blocks import Report, render_markdown
from headstats.stats.claim_catalog import evaluate_all_claims
from headstats.tables import RunTables


def probes(attention_only_wins: int) -> pd.DataFrame:
    rows = []
    for probe, correct in (("right_branching", 30), ("distance_and_words", 50), ("attention_only", 70),
                           ("attention_and_words", 80)):
        rows.append({"model": "m", "dataset": "d", "probe": probe, "vectors": "embeddings", "n_words": 100,
                     "correct": correct, "uas": correct / 100,
                     "only_vs_right_branching": attention_only_wins if probe == "attention_only" else 45,
                     "right_branching_only": 5, "only_vs_distance_and_words": 30, "distance_and_words_only": 10})
    return pd.DataFrame(rows)


def statistics():
    return SimpleNamespace(correction="holm", alpha=0.05, confidence=0.95)


def test_probing_section_states_the_claim_with_its_test(tmp_path):
    table = finish_probes(RunTables({"probes": probes(45)}), statistics())["probes"]
    report = Report("t")
    claims = evaluate_all_claims({"probes": table}, claims=["probes_beat_baselines"])
    probing_section(report, tmp_path, RunTables({"probes": table, "claims": claims}))
    block = [b for b in report.blocks if b.kind == "table"][0]
    shown = block.content
    # the paper's BERT-base UAS as a fraction beside this model's fractions, labelled as the paper's
    assert shown.set_index("probe")["paper_bert_base_uas"].to_dict() == {k: v / 100 for k, v in PAPER_UAS.items()}
    assert "BERT-base on the WSJ" in block.caption and block.extra["latex"][0].file == "probes.tex" and "paper_uas" not in shown.columns
    md = render_markdown(report, tmp_path)
    # 45 against 5 discordant words: exact one-sided binomial p far below 0.05, also after Holm over 3 probes
    assert binomtest(45, 50, 0.5, alternative="greater").pvalue * 3 < 0.05
    assert "*Detail against one baseline (the verdict is the claim's line):* on m / d the attention-only probe's UAS is 0.700 against right-branching's 0.300" in md
    # the verdict is the registry's: attention_and_words beats both baselines (larger p of the two, smallest over
    # the attention probes), the only claim of this run, so Holm leaves its p as it is
    assert claims["verdict"].tolist() == ["supported"]
    assert "- *attention probes find syntax better than the baselines* (m on d; " in md
    assert f"): **supported**, p = {claims['p'].iloc[0]:.2g} after holm over the run's claims" in md


def test_probing_claim_does_not_hold_when_the_discordant_words_tie(tmp_path):
    table = finish_probes(RunTables({"probes": probes(5)}), statistics())["probes"]
    report = Report("t")
    probing_section(report, tmp_path, RunTables({"probes": table}))
    md = render_markdown(report, tmp_path)
    assert "*Detail against one baseline (the verdict is the claim's line):* on m / d the attention-only probe's UAS is 0.700 against right-branching's 0.300" in md and "hold" not in md  # no verdict without the registry
