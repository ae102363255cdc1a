"""The claims across attention measures (METHODS 6.1): "<role> heads remain under norm weighting", on constructed
``measure_agreement`` tables, against scipy's and statsmodels' exact binomial test and Clopper-Pearson interval."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps
from statsmodels.stats.proportion import binom_test, proportion_confint

from headstats.stats.claims import ClaimSettings, evaluate_claims
from headstats.analyses.pande_roles.claims.measures import survives_evidence


def agreement(n_weights: int, n_kept: int, n_norm_only: int, n_heads: int = 72, role: str = "delimiter",
              model: str = "m", dataset: str = "d") -> pd.DataFrame:
    """72 heads: the first ``n_weights`` hold ``role`` under weights, ``n_kept`` of them under norm too, and
    ``n_norm_only`` more hold it under norm only."""
    i = np.arange(n_heads)
    weights = i < n_weights
    norm = (i < n_kept) | ((i >= n_weights) & (i < n_weights + n_norm_only))
    layer, head = np.divmod(i, 12)
    return pd.DataFrame({"model": model, "dataset": dataset, "role": role, "layer": layer, "head": head,
                         "weights": weights, "norm": norm, "robust_across_measures": weights & norm})


def test_survives_is_the_exact_binomial_test_of_the_heads_kept_against_one_half():
    # Kobayashi et al.'s pattern: 5 of the 64 delimiter heads under weights keep the role under norm
    [ev] = survives_evidence(agreement(64, 5, 2), "delimiter", ClaimSettings())
    assert ev.estimate == pytest.approx(5 / 64)
    assert ev.p_for == pytest.approx(sps.binomtest(5, 64, 0.5, alternative="greater").pvalue, rel=1e-12)
    assert ev.p_against == pytest.approx(binom_test(5, 64, 0.5, alternative="smaller"), rel=1e-9)
    low, high = proportion_confint(5, 64, alpha=0.05, method="beta")
    assert (ev.ci_low, ev.ci_high) == (pytest.approx(low, rel=1e-9), pytest.approx(high, rel=1e-9))
    assert ev.floor == ev.floor_against == pytest.approx(0.5 ** 64)
    assert ev.detail.startswith("5 of the 64 heads holding delimiter under weights hold it under norm (7 of 72")
    claims = evaluate_claims({"measure_agreement": agreement(64, 5, 2)}, ClaimSettings(),
                             claims=["survives_norm:delimiter"])
    row = claims.iloc[0]
    assert row["verdict"] == "contradicted"  # most delimiter heads do not remain: significant the other way
    assert row["p_unc"] == pytest.approx(2 * binom_test(5, 64, 0.5, alternative="smaller"), rel=1e-9)


def test_most_heads_kept_supports_it_and_a_few_heads_cannot_tell():
    settings = ClaimSettings()
    claims = evaluate_claims({"measure_agreement": agreement(20, 19, 0, role="local")}, settings,
                             claims=["survives_norm:local"])
    assert claims["verdict"].tolist() == ["supported"]
    assert claims["p_unc"].iloc[0] == pytest.approx(2 * sps.binomtest(19, 20, 0.5, alternative="greater").pvalue)
    # 3 heads: the smallest two-sided p is 2 / 2^3 = 0.25 > alpha, whatever they do
    few = evaluate_claims({"measure_agreement": agreement(3, 3, 0, role="local")}, settings,
                          claims=["survives_norm:local"])
    assert few["verdict"].tolist() == ["cannot tell"] and "0.25" in few["reason"].iloc[0]
    [none] = survives_evidence(agreement(0, 0, 4, role="local"), "local", settings)
    assert none.reason == "too few heads: no head holds local under weights"


def test_a_run_of_one_measure_gives_no_evidence():
    one = agreement(10, 5, 0).drop(columns="norm")
    assert survives_evidence(one, "delimiter", ClaimSettings()) == []
    assert evaluate_claims({"measure_agreement": one}, ClaimSettings(), claims=["survives_norm:delimiter"]).empty
