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


#: Roles whose claim ``importance_role_<role>`` is registered (Pande et al.'s roles).
CLAIM_ROLES = ("local", "delimiter", "delimiter_cls", "delimiter_sep", "block", "syntactic")


_PERMUTATIONS = 9999


def _difference_test(inside: np.ndarray, outside: np.ndarray, settings: ClaimSettings, *, seed: int = 0
                     ) -> tuple[float, float, float, float, float, float]:
    """``(estimate, ci_low, ci_high, p_greater, p_less, floor)`` of mean(inside) - mean(outside): permutation
    test of the labels over heads (scipy, seeded) and a percentile bootstrap interval (resampling within groups)."""
    def stat(a, b, axis=-1):
        return np.mean(a, axis=axis) - np.mean(b, axis=axis)

    estimate = float(stat(inside, outside))
    rng = np.random.default_rng(seed)
    kw = {"permutation_type": "independent", "n_resamples": _PERMUTATIONS, "vectorized": True}
    greater = sps.permutation_test((inside, outside), stat, alternative="greater", rng=rng, **kw).pvalue
    less = sps.permutation_test((inside, outside), stat, alternative="less", rng=np.random.default_rng(seed),
                                **kw).pvalue
    boot = sps.bootstrap((inside, outside), stat, n_resamples=1999, confidence_level=settings.confidence,
                         method="percentile", rng=np.random.default_rng(seed), vectorized=True)
    return (estimate, float(boot.confidence_interval.low), float(boot.confidence_interval.high), float(greater),
            float(less), 1.0 / (_PERMUTATIONS + 1))


def _joined(tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    heads = tables["importance"][["model", "dataset", "layer", "head", "importance", "importance_measure"]]
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
        est, low, high, greater, less, floor = _difference_test(inside, outside, settings)
        p_for, p_against = (greater, less) if direction == "greater" else (less, greater)
        out.append(Evidence(str(model), str(dataset), estimate=est, ci_low=low, ci_high=high, p_for=p_for,
                            p_against=p_against, floor=floor, measure=measure,
                            detectable=f"{_PERMUTATIONS} permutations of {inside.size + outside.size} heads",
                            detail=f"{inside.size} {role} heads: mean {inside.mean():.4g}; {outside.size} others: "
                                   f"mean {outside.mean():.4g}"))
    return out


def _register_role_claim(role: str) -> None:
    @register_claim(
        f"importance_role_{role}", sentence=f"{role} heads matter more to the model than heads without that role",
        source="headstats (issue 25)",
        hypothesis=f"H0: the {role} labels are exchangeable over the heads' importance; H1: {role} heads' mean "
                   "importance (loss change under ablation; cosine distance without a task head) is larger",
        unit="heads", test="permutation test of the role labels over heads (9,999 permutations, seeded); "
                           "bootstrap interval", measure=f"mean importance of {role} heads minus the others",
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
    unit="heads", test="permutation test of the role labels over heads (9,999 permutations, seeded); bootstrap "
                       "interval", measure="mean importance of delimiter heads minus the others",
    tables=("importance", "roles"), overwrite=True)
def delimiter_heads_least_important(tables: Mapping[str, pd.DataFrame], settings: ClaimSettings) -> list[Evidence]:
    return _role_evidence(tables, settings, "delimiter", direction="less")


@register_claim(
    "importance_tracks_change", sentence="the heads that matter most in a fine-tuned model are the heads "
    "fine-tuning changed most", source="headstats (issue 25)",
    hypothesis="H0: Spearman's rho over heads between importance and mean |change of the role scores| is 0; "
               "H1: rho > 0",
    unit="heads", test="Spearman's rank correlation over heads (scipy.stats.spearmanr), Fisher-z interval",
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
        z, half = np.arctanh(np.clip(rho, -0.999999, 0.999999)), sps.norm.ppf(0.5 + settings.confidence / 2)
        se = 1.0 / math.sqrt(max(n - 3, 1))
        out.append(Evidence(str(model), str(dataset), estimate=rho, ci_low=float(np.tanh(z - half * se)),
                            ci_high=float(np.tanh(z + half * se)), p_for=greater, p_against=less,
                            detectable=f"{n} heads: |rho| about {2.8 / math.sqrt(n):.2f} detectable at 80 % power",
                            detail=f"{n} heads; change = mean over roles of |mean change of the role score|"))
    return out
