r"""The claims that tie head importance (Michel et al. 2019) to the roles and to fine-tuning.

Claims (:mod:`headstats.stats.claims`), on the per-head ``importance`` column (mean loss change with a task
head, cosine distance without one) and the run's ``roles`` table:

- ``importance_role_<role>``: heads holding the role matter more than random head sets drawn within the same
  layers (issue 33): a layer-stratified permutation test of the role labels
  (:func:`headstats.stats.exact.label_permutation_test` with ``strata`` = layer). Each labeling keeps the number
  :math:`k_l` of role heads of every layer l (of its :math:`n_l` heads), so that a role concentrated in the
  layers that matter most (or least) is not credited with their importance. Statistic and estimate: the
  weighted mean over layers of (mean importance of the layer's role heads - that of its other heads), weights
  :math:`k_l (n_l - k_l) / n_l` (an increasing function of the role heads' importance sum given the layers'
  totals, shifted by exactly :math:`\delta` when every role head's importance is); layers where all or none of
  the heads hold the role are fixed and drop out. All :math:`\prod_l \binom{n_l}{k_l}` labelings are enumerated
  when there are at most ``analysis_options.importance.n_permutations`` of them (floor one over their number),
  else that many labelings are drawn with the run's seed (floor ``1 / (n_permutations + 1)``). The interval
  inverts the same test. ``cannot tell`` when no layer holds both role heads and others;
- ``delimiter_heads_least_important``: delimiter heads matter less than the other heads of their layers (Clark
  et al. 2019's no-op reading of attention to [SEP]), the same test in the other direction;
- ``importance_tracks_change``: a fine-tuned model's important heads are those fine-tuning changed most
  (Spearman correlation over heads of importance and the mean |change| of the role scores, from
  ``compare_paired_tests``; exact-permutation-free t approximation of scipy).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
from scipy import stats as sps

from headstats.analyses.importance.tables import IMPORTANCE
from headstats.stats.claims import ClaimSettings, Evidence, register_claim
from headstats.stats.exact import label_permutation_test
from headstats.analyses.finetune_comparison.tables import PAIRED_TESTS
from headstats.tables import RunTables
from headstats.tables.study_tables import ROLES


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


def _joined(tables: RunTables) -> pd.DataFrame:
    keep = ["model", "dataset", "layer", "head", "importance", "importance_measure", "n_permutations",
            "permutation_seed"]
    heads = tables[IMPORTANCE][[c for c in keep if c in tables[IMPORTANCE].columns]]
    return heads.merge(tables[ROLES], on=["model", "dataset", "layer", "head"], how="inner")


def _layer_counts(layers: np.ndarray, held: np.ndarray) -> str:
    """``"layer 0: 2 of 12, layer 3: 1 of 12"``: the role's heads per layer (the layers that hold any)."""
    return ", ".join(f"layer {layer}: {int(held[layers == layer].sum())} of {int((layers == layer).sum())}"
                     for layer in np.unique(layers) if held[layers == layer].any())


def _role_evidence(tables: RunTables, settings: ClaimSettings, role: str, *,
                   direction: str) -> list[Evidence]:
    joined = _joined(tables)
    out = []
    if role not in joined.columns:
        return out
    for (model, dataset), part in joined.groupby(["model", "dataset"], sort=False):
        value = part["importance"].to_numpy(float)
        ok = np.isfinite(value)
        held = part[role].fillna(False).astype(bool).to_numpy()[ok]
        layers, value = part["layer"].to_numpy(int)[ok], value[ok]
        measure = (f"mean importance ({part['importance_measure'].iat[0]}) of {role} heads minus that of the "
                   "other heads of the same layers (layers weighted k(n - k)/n)")
        mixed = [layer for layer in np.unique(layers) if 0 < held[layers == layer].sum() < (layers == layer).sum()]
        if held.sum() < 2 or (~held).sum() < 2 or not mixed:
            why = (f"too few heads: {int(held.sum())} {role} heads, {int((~held).sum())} others" if mixed else
                   f"no layer holds both {role} heads and other heads ({_layer_counts(layers, held) or 'none'}): "
                   "no head set of the same layers to compare with")
            out.append(Evidence(str(model), str(dataset), measure=measure, reason=why))
            continue
        n_perm, seed = _permutation_settings(part)
        res = label_permutation_test(value, held, strata=layers, n_resamples=n_perm, seed=seed,
                                     confidence=settings.confidence)
        p_for, p_against = (res.p_greater, res.p_less) if direction == "greater" else (res.p_less, res.p_greater)
        how = (f"exact: all {res.n_arrangements:.0f} labelings that keep the {role} heads per layer"
               if res.exact else f"{n_perm} seeded random labelings (seed {seed}) that keep the {role} heads per "
                                 "layer")
        out.append(Evidence(str(model), str(dataset), estimate=res.estimate, ci_low=res.ci_low, ci_high=res.ci_high,
                            p_for=p_for, p_against=p_against, floor=res.floor, measure=measure,
                            detectable=f"{how}: smallest one-sided p {res.floor:.2g}",
                            detail=f"{int(held.sum())} {role} heads ({_layer_counts(layers, held)}): mean "
                                   f"{value[held].mean():.4g}; {int((~held).sum())} others: mean "
                                   f"{value[~held].mean():.4g}; {res.n_strata} layers hold both"))
    return out


_ROLE_TEST = ("layer-stratified permutation test of the role labels over heads: each labeling keeps the number of "
              "role heads of every layer (exact over all prod_l C(n_l, k_l) labelings when there are at most "
              "n_permutations of them, else n_permutations seeded ones: analysis_options.importance); the interval "
              "inverts the same test")


def _register_role_claim(role: str) -> None:
    @register_claim(
        f"importance_role_{role}", sentence=f"{role} heads matter more to the model than other heads of their layers",
        source="headstats (issue 25)",
        hypothesis=f"H0: within each layer, the {role} labels are exchangeable over the heads' importance; H1: "
                   f"{role} heads' importance (loss change under ablation; cosine distance without a task head) is "
                   "larger than that of other heads of the same layers",
        unit="heads", test=_ROLE_TEST,
        measure=f"mean importance of {role} heads minus the other heads of the same layers",
        tables=(IMPORTANCE, ROLES), overwrite=True)
    def evaluate(tables: RunTables, settings: ClaimSettings) -> list[Evidence]:
        return _role_evidence(tables, settings, role, direction="greater")


for _role in CLAIM_ROLES:
    _register_role_claim(_role)


@register_claim(
    "delimiter_heads_least_important", sentence="heads that attend to [CLS]/[SEP] matter less than other heads of "
    "their layers (attention to delimiters is a no-op)", source="Clark et al. 2019",
    hypothesis="H0: within each layer, the delimiter labels are exchangeable over the heads' importance; H1: "
               "delimiter heads' importance is smaller than that of other heads of the same layers",
    unit="heads", test=_ROLE_TEST,
    measure="mean importance of delimiter heads minus the other heads of the same layers",
    tables=(IMPORTANCE, ROLES), overwrite=True)
def delimiter_heads_least_important(tables: RunTables, settings: ClaimSettings) -> list[Evidence]:
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
    measure="Spearman's rho", tables=(IMPORTANCE, PAIRED_TESTS), overwrite=True)
def importance_tracks_change(tables: RunTables, settings: ClaimSettings) -> list[Evidence]:
    heads = tables[IMPORTANCE]
    heads = heads[heads["importance_measure"] == "delta_loss"]
    paired = tables[PAIRED_TESTS]
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
