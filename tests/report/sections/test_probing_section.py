"""The probing section: the probes' UAS beside the paper's, and the attention-only claim tested against
right-branching on the same held-out words."""

from __future__ import annotations

from types import SimpleNamespace

import pandas as pd
from scipy.stats import binomtest

from headstats.report.blocks import Report, render_markdown
from headstats.report.sections.probing_section import PAPER_UAS, probing_section
from headstats.stats.accuracy import finish_probes


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
    table = finish_probes({"probes": probes(45)}, statistics())["probes"]
    report = Report("t")
    probing_section(report, tmp_path, {"probes": table})
    shown = [b for b in report.blocks if b.kind == "table"][0].content
    assert shown.set_index("probe")["paper_uas"].to_dict() == PAPER_UAS
    md = render_markdown(report, tmp_path)
    # 45 against 5 discordant words: exact one-sided binomial p far below 0.05, also after Holm over 3 probes
    assert binomtest(45, 50, 0.5, alternative="greater").pvalue * 3 < 0.05
    assert "On m / d it holds: UAS 0.700 against 0.300" in md


def test_probing_claim_does_not_hold_when_the_discordant_words_tie(tmp_path):
    table = finish_probes({"probes": probes(5)}, statistics())["probes"]
    report = Report("t")
    probing_section(report, tmp_path, {"probes": table})
    assert "On m / d it does not hold: UAS 0.700 against 0.300" in render_markdown(report, tmp_path)
