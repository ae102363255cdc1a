r"""The claims that tie head importance (Michel et al. 2019) to the roles and to fine-tuning.

Claims (:mod:`headstats.stats.claims`), on the per-head ``importance`` column (mean loss change with a task
head, cosine distance without one) and the run's ``roles`` table:

- ``importance_role_<role>``: heads holding the role matter more than heads without it (difference of means,
  permutation test of the role labels over heads, ``scipy.stats.permutation_test``; bootstrap interval);
- ``delimiter_heads_least_important``: delimiter heads matter less than the others (Clark et al. 2019's no-op
  reading of attention to [SEP]);
- ``importance_tracks_change``: a fine-tuned model's important heads are those fine-tuning changed most
  (Spearman correlation over heads of importance and the mean |change| of the role scores, from
  ``compare_paired_tests``; exact-permutation-free t approximation of scipy).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping

import numpy as np
import pandas as pd
from scipy import stats as sps

from headstats.stats.claims import ClaimSettings, Evidence, register_claim
from headstats.stats.exact import label_permutation_test


#: Roles whose claim ``importance_role_<role>`` is registered (Pande et al.'s roles).
CLAIM_ROLES = ("local", "delimiter", "delimiter_cls", "delimiter_sep", "block", "syntactic")


#: The permutations of the role claims when the importance table does not say (``n_permutations`` of
#: ImportanceOptions, written beside each head by :func:`finish_importance`).
_PERMUTATIONS = 9999


def _permutation_settings(part: pd.DataFrame) -> tuple[int, int]:
    """``(n_permutations, seed)`` of the role claims' tests, from the importance table (the analysis' options)."""
    n = int(part["n_permutations"].iat[0]) if "n_permutations" in part else _PERMUTATIONS
    seed = int(part["permutation_seed"].iat[0]) if "permutation_seed" in part else 0
    return n, seed


def _joined(tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    keep = ["model", "dataset", "layer", "head", "importance", "importance_measure", "n_permutations",
            "permutation_seed"]
    heads = tables["importance"][[c for c in keep if c in tables["importance"].columns]]
    return heads.merge(tables["roles"], on=["model", "dataset", "layer", "head"], how="inner")


def _role_evidence(tables: Mapping[str, pd.DataFrame], settings: ClaimSettings, role: str, *,
                   direction: str) -> list[Evidence]:
    joined = _joined(tables)
    out = []
    if role not in joined.columns:
        return out
    for (model, dataset), part in joined.groupby(["model", "dataset"], sort=False):
        held = part[role].fillna(False).astype(bool).to_numpy()
        value = part["importance"].to_numpy(float)
        ok = np.isfinite(value)
        inside, outside = value[held & ok], value[~held & ok]
        measure = (f"mean importance ({part['importance_measure'].iat[0]}) of {role} heads minus that of the "
                   "other heads")
        if inside.size < 2 or outside.size < 2:
            out.append(Evidence(str(model), str(dataset), measure=measure,
                                reason=f"too few heads: {inside.size} {role} heads, {outside.size} others"))
            continue
        n_perm, seed = _permutation_settings(part)
        res = label_permutation_test(inside, outside, n_resamples=n_perm, seed=seed, confidence=settings.confidence)
        p_for, p_against = (res.p_greater, res.p_less) if direction == "greater" else (res.p_less, res.p_greater)
        how = (f"exact: all C({inside.size + outside.size}, {inside.size}) = {res.n_arrangements:.0f} labelings"
               if res.exact else f"{n_perm} seeded random labelings (seed {seed}) of {inside.size + outside.size} "
                                 "heads")
        out.append(Evidence(str(model), str(dataset), estimate=res.estimate, ci_low=res.ci_low, ci_high=res.ci_high,
                            p_for=p_for, p_against=p_against, floor=res.floor, measure=measure,
                            detectable=f"{how}: smallest one-sided p {res.floor:.2g}",
                            detail=f"{inside.size} {role} heads: mean {inside.mean():.4g}; {outside.size} others: "
                                   f"mean {outside.mean():.4g}"))
    return out


_ROLE_TEST = ("permutation test of the role labels over heads (exact over all C(n, k) labelings when there are at "
              "most n_permutations of them, else n_permutations seeded ones: analysis_options.importance); the "
              "interval inverts the same test")


def _register_role_claim(role: str) -> None:
    @register_claim(
        f"importance_role_{role}", sentence=f"{role} heads matter more to the model than heads without that role",
        source="headstats (issue 25)",
        hypothesis=f"H0: the {role} labels are exchangeable over the heads' importance; H1: {role} heads' mean "
                   "importance (loss change under ablation; cosine distance without a task head) is larger",
        unit="heads", test=_ROLE_TEST, measure=f"mean importance of {role} heads minus the others",
        tables=("importance", "roles"), overwrite=True)
    def evaluate(tables: Mapping[str, pd.DataFrame], settings: ClaimSettings) -> list[Evidence]:
        return _role_evidence(tables, settings, role, direction="greater")


for _role in CLAIM_ROLES:
    _register_role_claim(_role)


@register_claim(
    "delimiter_heads_least_important", sentence="heads that attend to [CLS]/[SEP] matter least (attention to "
    "delimiters is a no-op)", source="Clark et al. 2019",
    hypothesis="H0: the delimiter labels are exchangeable over the heads' importance; H1: delimiter heads' mean "
               "importance is smaller than the other heads'",
    unit="heads", test=_ROLE_TEST, measure="mean importance of delimiter heads minus the others",
    tables=("importance", "roles"), overwrite=True)
def delimiter_heads_least_important(tables: Mapping[str, pd.DataFrame], settings: ClaimSettings) -> list[Evidence]:
    return _role_evidence(tables, settings, "delimiter", direction="less")


def spearman_interval(rho: float, n: int, confidence: float = 0.95) -> tuple[float, float]:
    r"""Confidence interval of Spearman's rho over n pairs: Fisher's z with Bonett and Wright's (2000) variance
    :math:`(1 + \rho^2 / 2) / (n - 3)` (the Pearson variance ``1 / (n - 3)`` covers Spearman's rho too rarely:
    0.941 at a stated 0.95 on the importance claim's design)."""
    z, half = np.arctanh(np.clip(rho, -0.999999, 0.999999)), sps.norm.ppf(0.5 + confidence / 2)
    se = math.sqrt((1 + rho * rho / 2) / max(n - 3, 1))
    return float(np.tanh(z - half * se)), float(np.tanh(z + half * se))


@register_claim(
    "importance_tracks_change", sentence="the heads that matter most in a fine-tuned model are the heads "
    "fine-tuning changed most", source="headstats (issue 25)",
    hypothesis="H0: Spearman's rho over heads between importance and mean |change of the role scores| is 0; "
               "H1: rho > 0",
    unit="heads", test="Spearman's rank correlation over heads (scipy.stats.spearmanr), Fisher-z interval with "
                       "Bonett and Wright's (2000) variance (1 + rho^2 / 2) / (n - 3)",
    measure="Spearman's rho", tables=("importance", "compare_paired_tests"), overwrite=True)
def importance_tracks_change(tables: Mapping[str, pd.DataFrame], settings: ClaimSettings) -> list[Evidence]:
    heads = tables["importance"]
    heads = heads[heads["importance_measure"] == "delta_loss"]
    paired = tables["compare_paired_tests"]
    change = (paired.assign(abs_change=paired["mean_diff"].abs())
              .groupby(["model_after", "dataset", "layer", "head"], as_index=False)["abs_change"].mean()
              .rename(columns={"model_after": "model"}))
    joined = heads.merge(change, on=["model", "dataset", "layer", "head"], how="inner")
    out = []
    for (model, dataset), part in joined.groupby(["model", "dataset"], sort=False):
        x, y = part["importance"].to_numpy(float), part["abs_change"].to_numpy(float)
        ok = np.isfinite(x) & np.isfinite(y)
        n = int(ok.sum())
        if n < 4:
            out.append(Evidence(str(model), str(dataset), reason=f"too few heads with both numbers ({n})"))
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rho = float(sps.spearmanr(x[ok], y[ok]).statistic)
            greater = float(sps.spearmanr(x[ok], y[ok], alternative="greater").pvalue)
            less = float(sps.spearmanr(x[ok], y[ok], alternative="less").pvalue)
        low, high = spearman_interval(rho, n, settings.confidence)
        out.append(Evidence(str(model), str(dataset), estimate=rho, ci_low=low, ci_high=high, p_for=greater,
                            p_against=less,
                            detectable=f"{n} heads: |rho| about {2.8 / math.sqrt(n):.2f} detectable at 80 % power",
                            detail=f"{n} heads; change = mean over roles of |mean change of the role score|"))
    return out
