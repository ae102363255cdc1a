r"""The claims of Clark et al. (2019, "What Does BERT Look At?"), registered as tests (METHODS 2 and 5.1).

Each reads the tables an analysis' finish step wrote:

- ``previous_token_heads`` / ``next_token_heads`` (``surface_tests``, hypotheses on ``prev`` / ``next``): some
  head attends mostly to the previous (next) token. An existence claim over the per-head tests: its p is the
  smallest corrected p-value of those heads (under Holm or Bonferroni, ``m min p``: a valid test of "no head
  does"); the estimate is the best head's mean minus the threshold, with its one-sided bound.
- ``broad_first_layer`` (``entropy_ratio``): the heads of the first layer attend broadly more often than the
  others: Fisher's exact test of the share of heads passing the broad-attention hypothesis, layer 0 against the
  other layers.
- ``sep_middle_layers`` (``sep``): the heads that attend mostly to [SEP] sit in the middle layers: Fisher's exact
  test of the share of heads passing, middle third of the layers against the first and last thirds.
- ``layer_heads_cluster`` (``clustering_tests``): heads of one layer attend alike: the permutation test of the
  layer labels of the JS divergences (:func:`headstats.stats.grouping.group_permutation_test`), floor
  ``1 / (B + 1)``.
- ``head_beats_offset`` (``dependency_table``): for some relation a single head predicts the head word better
  than the best fixed offset: the smallest corrected p over relations.
- ``coreference_head_beats_baselines`` (``coreference_tests``): some head selects antecedents better than every
  baseline; per head the largest corrected p over the baselines (it must beat each), then the smallest over
  heads. A baseline whose accuracy is 0 or 1 by construction (e.g. the same-head-word baseline on GAP) is left
  out and named: beating it means nothing.
- ``probes_beat_baselines`` (``probes``): an attention probe beats both baselines (right-branching, distance and
  words); per probe the largest corrected p over the two baselines, then the smallest over the attention probes.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from headstats.stats.claims import ClaimSettings, Evidence, register_claim
from headstats.stats.exact import share_test

CLARK = "Clark et al. 2019"


def _passed(part: pd.DataFrame) -> np.ndarray:
    return part["reject"].fillna(False).astype(bool).to_numpy()


def _surface(tables: Mapping[str, pd.DataFrame], measure: str):
    """(model, dataset, the rows of the hypotheses on ``measure``) per (model, dataset) of ``surface_tests``."""
    tests = tables["surface_tests"]
    for (model, dataset), part in tests.groupby(["model", "dataset"], sort=False):
        yield str(model), str(dataset), part[part["measure"].astype(str) == measure]


def _some_head(tables: Mapping[str, pd.DataFrame], measure: str, what: str) -> list[Evidence]:
    out = []
    for model, dataset, part in _surface(tables, measure):
        if part.empty:
            out.append(Evidence(model, dataset, reason=f"hypothesis not tested: no surface hypothesis on {measure}"))
            continue
        thr = float(part["threshold"].iloc[0])
        finite = part[np.isfinite(part["p_corr"].astype(float))]
        if finite.empty:
            out.append(Evidence(model, dataset, reason="no head took part in the test"))
            continue
        best = finite.loc[finite["p_corr"].astype(float).idxmin()]
        top = part.loc[part["mean"].astype(float).idxmax()]
        n_pass = int(_passed(part).sum())
        mde = pd.to_numeric(part.get("mde"), errors="coerce")
        detect = (f"per-head test at the corrected level: smallest detectable standardised effect {np.nanmedian(mde):.3g}"
                  f" (median over heads)" if mde is not None and np.isfinite(mde).any() else "")
        out.append(Evidence(
            model, dataset, estimate=float(best["mean"]) - thr, ci_low=float(best["ci_low"]) - thr,
            ci_high=float(best["ci_high"]) - thr, p_for=float(best["p_corr"]), detectable=detect,
            hypothesis=f"H0: every head's mean {measure} <= {thr:g}; H1: some head's mean {measure} > {thr:g}",
            detail=f"{n_pass} of {len(part)} heads pass (mean {measure} > {thr:g} after {best['correction']}); "
                   f"head {int(best['layer'])}-{int(best['head'])} has the smallest p, head {int(top['layer'])}-"
                   f"{int(top['head'])} the largest mean {float(top['mean']):.3f} (attends mostly to the {what} "
                   "token when above 0.5)"))
    return out


_EXISTENCE = dict(unit="heads", test="one-sided per-head tests of the surface hypothesis (surface_tests.csv), "
                                     "corrected over the heads; claim p = the smallest corrected p",
                  measure="best head's mean attention minus the threshold", tables=("surface_tests",))


@register_claim("previous_token_heads", sentence="some heads attend mostly to the previous token", source=CLARK,
                hypothesis="H0: every head's mean attention to the previous token <= 0.5; H1: some head's > 0.5",
                **_EXISTENCE)
def previous_token_heads(tables: Mapping[str, pd.DataFrame], settings: ClaimSettings) -> list[Evidence]:
    return _some_head(tables, "prev", "previous")


@register_claim("next_token_heads", sentence="some heads attend mostly to the next token", source=CLARK,
                hypothesis="H0: every head's mean attention to the next token <= 0.5; H1: some head's > 0.5",
                **_EXISTENCE)
def next_token_heads(tables: Mapping[str, pd.DataFrame], settings: ClaimSettings) -> list[Evidence]:
    return _some_head(tables, "next", "next")


def _share_where(tables: Mapping[str, pd.DataFrame], settings: ClaimSettings, measure: str, inside, where: str,
                 elsewhere: str) -> list[Evidence]:
    out = []
    for model, dataset, part in _surface(tables, measure):
        if part.empty:
            out.append(Evidence(model, dataset, reason=f"hypothesis not tested: no surface hypothesis on {measure}"))
            continue
        n_layers = int(part["layer"].max()) + 1
        mask = inside(part["layer"].to_numpy(int), n_layers)
        held = _passed(part)
        res = share_test(int(held[mask].sum()), int(mask.sum()), int(held[~mask].sum()), int((~mask).sum()),
                         confidence=settings.confidence, level=settings.alpha / 2)
        reason = "" if held.any() else f"too few heads: no head passes the {measure} hypothesis"
        detect = (f"with {int(held.sum())} passing heads, at least {res.detect_greater} of the {res.n_a} heads "
                  f"{where} would reach p <= alpha / 2" if res.detect_greater is not None else
                  f"with {int(held.sum())} passing heads no split reaches p <= alpha / 2")
        out.append(Evidence(
            model, dataset, estimate=res.odds_ratio, ci_low=res.ci_low, ci_high=res.ci_high, p_for=res.p_greater,
            p_against=res.p_less, floor=res.floor_greater, detectable=detect, reason=reason,
            detail=f"{res.k_a} of {res.n_a} heads {where} pass ({res.share_a:.0%}), {res.k_b} of {res.n_b} "
                   f"{elsewhere} ({res.share_b:.0%})"))
    return out


@register_claim(
    "broad_first_layer", sentence="heads of the first layer attend broadly", source=CLARK,
    hypothesis="H0: the share of heads passing the broad-attention hypothesis (mean entropy / ln n > threshold) "
               "is the same in layer 0 as in the other layers; H1: it is larger in layer 0 (odds ratio > 1)",
    unit="heads", test="Fisher's exact test on the 2x2 table of heads (layer 0 or not x passes or not)",
    measure="conditional odds ratio of passing, layer 0 against the other layers", tables=("surface_tests",))
def broad_first_layer(tables: Mapping[str, pd.DataFrame], settings: ClaimSettings) -> list[Evidence]:
    return _share_where(tables, settings, "entropy_ratio", lambda layers, n: layers == 0, "of layer 0",
                        "in the other layers")


def _middle_third(layers: np.ndarray, n_layers: int) -> np.ndarray:
    return (layers >= n_layers / 3) & (layers < 2 * n_layers / 3)


@register_claim(
    "sep_middle_layers", sentence="heads in the middle layers attend mostly to [SEP]", source=CLARK,
    hypothesis="H0: the share of heads passing the [SEP] hypothesis (mean attention to [SEP] > threshold) is the "
               "same in the middle third of the layers (L/3 <= layer < 2L/3) as elsewhere; H1: it is larger there",
    unit="heads", test="Fisher's exact test on the 2x2 table of heads (middle third or not x passes or not)",
    measure="conditional odds ratio of passing, middle third against the other layers", tables=("surface_tests",))
def sep_middle_layers(tables: Mapping[str, pd.DataFrame], settings: ClaimSettings) -> list[Evidence]:
    return _share_where(tables, settings, "sep", _middle_third, "in the middle third of the layers",
                        "in the first and last thirds")


@register_claim(
    "layer_heads_cluster", sentence="heads of one layer attend alike (they cluster)", source=CLARK,
    hypothesis="H0: the layer labels are exchangeable over the heads' JS divergences; H1: heads of one layer are "
               "closer (mean between-layer JS - mean within-layer JS > 0)",
    unit="heads", test="permutation test of the layer labels (clustering_tests.csv), seeded",
    measure="mean JS divergence between layers minus within layers", tables=("clustering_tests",))
def layer_heads_cluster(tables: Mapping[str, pd.DataFrame], settings: ClaimSettings) -> list[Evidence]:
    out = []
    for r in tables["clustering_tests"].itertuples():
        floor = 1.0 / (int(r.n_permutations) + 1)
        out.append(Evidence(
            str(r.model), str(r.dataset), estimate=float(r.statistic), p_for=float(r.p_value), floor=floor,
            detectable=f"{int(r.n_permutations)} permutations: smallest p {floor:.2g}",
            detail=f"{int(r.n_items)} heads in {int(r.n_groups)} layers: mean JS within layers {r.within_mean:.4g}, "
                   f"between {r.between_mean:.4g} (ratio {r.ratio:.3g}); seed {int(r.seed)}"))
    return out


@register_claim(
    "head_beats_offset", sentence="for some relations a single head beats the best fixed-offset baseline",
    source=CLARK,
    hypothesis="H0: for every relation the chosen head is no more accurate than the best offset; H1: for some "
               "relation it is (accuracy_head > accuracy_offset on the test words)",
    unit="sentences (per relation)", test="the dependency table's paired test of head against offset per relation "
                                          "(dependency_table.csv: sign-flip over sentences by default), corrected over "
                                          "the relations; claim p = the smallest",
    measure="accuracy of the head minus the offset's, for the relation with the smallest p",
    tables=("dependency_table",))
def head_beats_offset(tables: Mapping[str, pd.DataFrame], settings: ClaimSettings) -> list[Evidence]:
    out = []
    table = tables["dependency_table"]
    for (model, dataset), part in table.groupby(["model", "dataset"], sort=False):
        rel = part[~part["relation"].astype(str).str.startswith("all")]
        rel = rel[np.isfinite(rel["p_corr"].astype(float))]
        if rel.empty:
            out.append(Evidence(str(model), str(dataset), reason="no relation had enough words to test"))
            continue
        best = rel.loc[rel["p_corr"].astype(float).idxmin()]
        passed = rel[rel["reject"].fillna(False).astype(bool)]
        out.append(Evidence(
            str(model), str(dataset),
            estimate=float(best["tested_accuracy"]) - float(best["tested_offset_accuracy"]),
            p_for=float(best["p_corr"]),
            detail=f"{len(passed)} of {len(rel)} relations: the head beats the offset after {best['correction']} "
                   f"({', '.join(map(str, passed['relation'])) or 'none'}); smallest p for {best['relation']}"))
    return out


def degenerate_baselines(table: pd.DataFrame, accuracy: str = "baseline_accuracy") -> list[str]:
    """The baselines whose accuracy is 0 or 1 on every row: constant by construction, never "beaten"."""
    out = []
    for name, part in table.groupby("baseline", sort=False):
        acc = part[accuracy].astype(float)
        if len(acc) and (np.allclose(acc, 0) or np.allclose(acc, 1)):
            out.append(str(name))
    return out


@register_claim(
    "coreference_head_beats_baselines", sentence="a head finds coreferent antecedents better than the baselines",
    source=CLARK,
    hypothesis="H0: no head is more accurate than every (non-degenerate) baseline; H1: some head is "
               "(accuracy_head > accuracy_baseline for every baseline)",
    unit="mentions", test="per head and baseline the paired exact test (coreference_tests.csv) corrected over the "
                          "heads; per head the largest p over the baselines, claim p = the smallest over heads",
    measure="best head's accuracy minus the best baseline's", tables=("coreference_tests",))
def coreference_head_beats_baselines(tables: Mapping[str, pd.DataFrame], settings: ClaimSettings) -> list[Evidence]:
    out = []
    tests = tables["coreference_tests"]
    for (model, dataset), part in tests.groupby(["model", "dataset"], sort=False):
        flat = degenerate_baselines(part)
        note = (f"; left out (0 or 1 by construction, never beaten): {', '.join(flat)}" if flat else "")
        live = part[~part["baseline"].astype(str).isin(flat)]
        if live.empty:
            out.append(Evidence(str(model), str(dataset), reason="every baseline is 0 or 1 by construction" + note))
            continue
        keys = [c for c in ("mention_type", "layer", "head") if c in live.columns]
        per_head = live.groupby(keys, sort=False).agg(p=("p_corr", "max"), acc=("accuracy", "first"),
                                                      base=("baseline_accuracy", "max")).reset_index()
        per_head = per_head[np.isfinite(per_head["p"].astype(float))]
        if per_head.empty:
            out.append(Evidence(str(model), str(dataset), reason="no mention took part" + note))
            continue
        best = per_head.loc[per_head["p"].astype(float).idxmin()]
        out.append(Evidence(
            str(model), str(dataset), estimate=float(best["acc"]) - float(best["base"]), p_for=float(best["p"]),
            detail=f"head {int(best['layer'])}-{int(best['head'])} ({best.get('mention_type', 'all')} mentions): "
                   f"accuracy {float(best['acc']):.3f} against the best baseline's {float(best['base']):.3f}" + note))
    return out


@register_claim(
    "probes_beat_baselines", sentence="attention probes find syntax better than the baselines", source=CLARK,
    hypothesis="H0: no attention probe is more accurate (UAS) than both baselines; H1: some probe is",
    unit="words (held out)", test="per probe and baseline the paired exact test (probes.csv) corrected over the "
                                  "probes; per probe the larger p of the two baselines, claim p = the smallest",
    measure="best attention probe's UAS minus the better baseline's", tables=("probes",))
def probes_beat_baselines(tables: Mapping[str, pd.DataFrame], settings: ClaimSettings) -> list[Evidence]:
    out = []
    probes = tables["probes"]
    bases = [c.removeprefix("p_corr_vs_") for c in probes.columns if c.startswith("p_corr_vs_")]
    for (model, dataset), part in probes.groupby(["model", "dataset"], sort=False):
        attention = part[part["probe"].astype(str).str.startswith("attention")]
        if attention.empty or not bases:
            out.append(Evidence(str(model), str(dataset), reason="no attention probe was trained"))
            continue
        p = attention[[f"p_corr_vs_{b}" for b in bases]].astype(float).max(axis=1)
        if not np.isfinite(p).any():
            out.append(Evidence(str(model), str(dataset), reason="no held-out word took part"))
            continue
        best = attention.loc[p.idxmin()]
        base_uas = part[part["probe"].astype(str).isin(bases)]["uas"].astype(float).max()
        out.append(Evidence(
            str(model), str(dataset), estimate=float(best["uas"]) - base_uas, p_for=float(p.min()),
            detail=f"probe {best['probe']}: UAS {float(best['uas']):.3f} against the better baseline's "
                   f"{base_uas:.3f} on {int(best['n_words'])} held-out words"))
    return out


__all__ = ["CLARK", "degenerate_baselines"]
