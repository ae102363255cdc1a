"""The fine-tuning claims over seeds: registered with their hypotheses, family and source, and evaluated from the
evidence the finish step wrote (``compare_seed_claims``)."""

from __future__ import annotations

import pandas as pd

from headstats.analyses.finetune_comparison.claims import SEED_CLAIMS, SEED_FAMILY, seed_hypothesis
from headstats.analyses.finetune_comparison.tables import SEED_CLAIMS as SEED_CLAIMS_TABLE
from headstats.stats.claims import CLAIMS, ClaimSettings, evaluate_claims


def test_every_seed_claim_is_registered_over_seeds_in_its_own_family():
    for key in SEED_CLAIMS:
        claim = CLAIMS.get(key)
        assert (claim.unit, claim.family, claim.tables) == ("seeds", SEED_FAMILY, (SEED_CLAIMS_TABLE.name,))
        assert claim.source == "Pande et al. 2021 (fine-tuning)"


def test_a_seed_claim_reads_its_verdict_inputs_from_the_evidence_table():
    """Two replicate groups' evidence rows: each comes back in its own family, with the estimate and p_for as
    written."""
    evidence = pd.DataFrame({"claim": ["delimiter_heads_lost"] * 2, "model": ["ft", "gt"], "dataset": ["d", "d"],
                             "estimate": [-2.0, 1.0], "p_for": [0.0625, 0.5], "p_against": [1.0, 0.5],
                             "floor": [0.0625, 0.0625], "family": ["seed claims of ft", "seed claims of gt"]})
    out = evaluate_claims({SEED_CLAIMS_TABLE.name: evidence}, ClaimSettings(alpha=0.1),
                          claims=["delimiter_heads_lost"]).set_index("model")
    assert out.loc["ft", "estimate"] == -2.0 and out.loc["ft", "p_for"] == 0.0625
    assert out.loc["ft", "family"].startswith("seed claims of ft") and out.loc["gt", "family"].startswith("seed claims of gt")
    assert out.loc["ft", "hypothesis"] == seed_hypothesis("delimiter_heads_lost")


def test_a_claim_of_two_parts_states_both_directions():
    text = CLAIMS.get("sep_attention_falls").hypothesis
    assert text == seed_hypothesis("sep_attention_falls")
    assert text.startswith("H0: one of the parts is null (intersection-union, p the larger of the parts'): (1) H0: "
                           "the per-seed change of the mean attention mass on [SEP]")
    assert "(one-sided, less): it is shifted below 0" in text and "(one-sided, greater): it is shifted above 0" in text
    assert "H1 (one-sided, greater): it is shifted above 0" in CLAIMS.get("syntactic_heads_gained").hypothesis
