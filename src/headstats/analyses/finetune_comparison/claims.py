"""The fine-tuning claims of Pande et al. (2021, section 6), tested over fine-tuning seeds (METHODS 5.1): later
layers change most, attention to [SEP] falls and spreads to the other tokens, delimiter heads are lost, syntactic
heads are gained. The comparison's finish step writes their evidence per replicate group and data set to
``compare_seed_claims`` (:func:`.finish.replicates.replicate_comparison`, :mod:`.finish.seed_evidence`); each claim
here reads it back. The seed claims of one comparison form their own family (:data:`SEED_FAMILY`).
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from headstats.analyses.finetune_comparison.tables import SEED_CLAIMS as SEED_CLAIMS_TABLE
from headstats.stats.claims import ClaimSettings, Evidence, evidence_from_table, register_claim
from headstats.stats.exact import signflip_hypothesis
from headstats.stats.paper_claims import PANDE

#: The family of the seed claims: one per comparison (``model`` is the replicate group); the evidence names it too.
SEED_FAMILY = "seed claims of {model}"


#: The fine-tuning claims tested over seeds: key -> (sentence, per-seed quantity, claimed direction, test,
#: measure); a claim whose parts must all hold gives a tuple of quantities and one of directions. The hypothesis
#: text is :func:`headstats.stats.exact.signflip_hypothesis` of the quantity and the direction, the same that the
#: evidence (:mod:`.seed_evidence`) writes from the direction it tested.
SEED_CLAIMS: dict[str, tuple[str, str | tuple[str, ...], str | tuple[str, ...], str, str]] = {
    "later_layers_change_most": (
        "later layers change most",
        "slope of the change over layer index", "greater",
        "per seed the OLS slope of the per-layer change on layer index; exact one-sided sign-flip test over seeds",
        "mean over seeds of the slope (change per layer)"),
    "sep_attention_falls": (
        "attention to [SEP] falls and spreads to the other tokens",
        ("change of the mean attention mass on [SEP]", "change of the mean attention mass on the other tokens"),
        ("less", "greater"),
        "per seed the mean over layers and heads of the mass on [SEP] (and on the other tokens) minus the base's; "
        "exact one-sided sign-flip tests over seeds, the larger p",
        "mean over seeds of the change of attention mass on [SEP]"),
    "delimiter_heads_lost": (
        "delimiter heads are lost",
        "net change of heads holding a delimiter role", "less",
        "per seed, heads holding any delimiter role after minus before; exact one-sided sign-flip test over seeds",
        "mean over seeds of the net change of delimiter heads"),
    "syntactic_heads_gained": (
        "syntactic heads are gained",
        "net change of heads holding a syntactic role", "greater",
        "per seed, heads holding any syntactic role after minus before; exact one-sided sign-flip test over seeds",
        "mean over seeds of the net change of syntactic heads"),
}


def seed_hypothesis(key: str, alternative=None) -> str:
    """The hypothesis of seed claim ``key`` as tested in ``alternative`` (default: its claimed direction)."""
    _, quantity, claimed, _, _ = SEED_CLAIMS[key]
    return signflip_hypothesis(quantity, claimed if alternative is None else alternative)


def _register_seed_claim(key: str) -> None:
    sentence, _, _, test, measure = SEED_CLAIMS[key]

    @register_claim(key, sentence=sentence, source=PANDE + " (fine-tuning)", hypothesis=seed_hypothesis(key),
                    unit="seeds", test=test, measure=measure, tables=(SEED_CLAIMS_TABLE,),
                    family=SEED_FAMILY)
    def evaluate(tables: Mapping[str, pd.DataFrame], settings: ClaimSettings) -> list[Evidence]:
        return evidence_from_table(tables[SEED_CLAIMS_TABLE], key)


for _key in SEED_CLAIMS:
    _register_seed_claim(_key)
