r"""The surface claims of Clark et al. (2019, "What Does BERT Look At?", section 3), registered as tests
(METHODS 2 and 5.1).

Each reads ``surface_tests``, the per-head tests of the surface analysis' declared hypotheses:

- ``previous_token_heads`` / ``next_token_heads`` (``surface_tests``, hypotheses on ``prev`` / ``next``): some
  head attends mostly to the previous (next) token. An existence claim over the per-head tests: Holm over the
  heads' *uncorrected* p-values, the claim's p the smallest adjusted one (``min(1, m min p)``,
  :func:`headstats.stats.existence.some_unit_p`): a valid test of "no head does" whatever the protocol's per-head
  correction (the smallest BH-corrected p is not); the estimate is the best head's mean minus the threshold, with its one-sided bound.
- ``broad_first_layer`` (``entropy_ratio``): the heads of the first layer attend broadly more often than the
  others: Fisher's exact test of the share of heads passing the broad-attention hypothesis, layer 0 against the
  other layers.
- ``sep_middle_layers`` (``sep``): the heads that attend mostly to [SEP] sit in the middle layers: Fisher's exact
  test of the share of heads passing, middle third of the layers against the first and last thirds.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from headstats.analyses.surface.tables import SURFACE_TESTS
from headstats.stats.claims import ClaimSettings, Evidence, register_claim
from headstats.stats.existence import some_unit_p
from headstats.stats.exact import share_test
from headstats.tables import RunTables

CLARK = "Clark et al. 2019"


def _passed(part: pd.DataFrame) -> np.ndarray:
    return part["reject"].fillna(False).astype(bool).to_numpy()


def _surface(tables: RunTables, measure: str):
    """(model, dataset, the rows of the hypotheses on ``measure``) per (model, dataset) of ``surface_tests``."""
    tests = tables[SURFACE_TESTS]
    for (model, dataset), part in tests.groupby(["model", "dataset"], sort=False):
        yield str(model), str(dataset), part[part["measure"].astype(str) == measure]


def _some_head(tables: RunTables, measure: str, what: str) -> list[Evidence]:
    out = []
    for model, dataset, part in _surface(tables, measure):
        if part.empty:
            out.append(Evidence(model, dataset, reason=f"hypothesis not tested: no surface hypothesis on {measure}"))
            continue
        thr = float(part["threshold"].iloc[0])
        p_unc = part["p_unc"].astype(float).to_numpy()
        if not np.isfinite(p_unc).any():
            out.append(Evidence(model, dataset, reason="no head took part in the test"))
            continue
        p_some, at = some_unit_p(p_unc)
        best = part.iloc[at]
        m = int(np.isfinite(p_unc).sum())
        top = part.loc[part["mean"].astype(float).idxmax()]
        n_pass = int(_passed(part).sum())
        mde = pd.to_numeric(part.get("mde"), errors="coerce")
        detect = (f"per-head test at the corrected level: smallest detectable standardised effect {np.nanmedian(mde):.3g}"
                  f" (median over heads)" if mde is not None and np.isfinite(mde).any() else "")
        out.append(Evidence(
            model, dataset, estimate=float(best["mean"]) - thr, ci_low=float(best["ci_low"]) - thr,
            ci_high=float(best["ci_high"]) - thr, p_for=p_some, detectable=detect,
            hypothesis=f"H0: every head's mean {measure} <= {thr:g}; H1: some head's mean {measure} > {thr:g}",
            detail=f"{n_pass} of {len(part)} heads pass (mean {measure} > {thr:g} after {best['correction']}); "
                   f"head {int(best['layer'])}-{int(best['head'])} has the smallest p, head {int(top['layer'])}-"
                   f"{int(top['head'])} the largest mean {float(top['mean']):.3f} (attends mostly to the {what} "
                   "token when above 0.5)"))
    return out


_EXISTENCE = dict(unit="heads", test="one-sided per-head tests of the surface hypothesis (surface_tests.csv, "
                                     "uncorrected p), Holm over the heads tested; claim p = the smallest adjusted "
                                     "p, min(1, m min p)",
                  measure="best head's mean attention minus the threshold", tables=(SURFACE_TESTS,))


@register_claim("previous_token_heads", sentence="some heads attend mostly to the previous token", source=CLARK,
                hypothesis="H0: every head's mean attention to the previous token <= 0.5; H1: some head's > 0.5",
                **_EXISTENCE)
def previous_token_heads(tables: RunTables, settings: ClaimSettings) -> list[Evidence]:
    return _some_head(tables, "prev", "previous")


@register_claim("next_token_heads", sentence="some heads attend mostly to the next token", source=CLARK,
                hypothesis="H0: every head's mean attention to the next token <= 0.5; H1: some head's > 0.5",
                **_EXISTENCE)
def next_token_heads(tables: RunTables, settings: ClaimSettings) -> list[Evidence]:
    return _some_head(tables, "next", "next")


def _share_where(tables: RunTables, settings: ClaimSettings, measure: str, inside, where: str,
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
            p_against=res.p_less, floor=res.floor_greater, floor_against=res.floor_less, detectable=detect,
            reason=reason,
            detail=f"{res.k_a} of {res.n_a} heads {where} pass ({res.share_a:.0%}), {res.k_b} of {res.n_b} "
                   f"{elsewhere} ({res.share_b:.0%})"))
    return out


@register_claim(
    "broad_first_layer", sentence="heads of the first layer attend broadly", source=CLARK,
    hypothesis="H0: the share of heads passing the broad-attention hypothesis (mean entropy / ln n > threshold) "
               "is the same in layer 0 as in the other layers; H1: it is larger in layer 0 (odds ratio > 1)",
    unit="heads", test="Fisher's exact test on the 2x2 table of heads (layer 0 or not x passes or not)",
    measure="conditional odds ratio of passing, layer 0 against the other layers", tables=(SURFACE_TESTS,))
def broad_first_layer(tables: RunTables, settings: ClaimSettings) -> list[Evidence]:
    return _share_where(tables, settings, "entropy_ratio", lambda layers, n: layers == 0, "of layer 0",
                        "in the other layers")


def _middle_third(layers: np.ndarray, n_layers: int) -> np.ndarray:
    return (layers >= n_layers / 3) & (layers < 2 * n_layers / 3)


@register_claim(
    "sep_middle_layers", sentence="heads in the middle layers attend mostly to [SEP]", source=CLARK,
    hypothesis="H0: the share of heads passing the [SEP] hypothesis (mean attention to [SEP] > threshold) is the "
               "same in the middle third of the layers (L/3 <= layer < 2L/3) as elsewhere; H1: it is larger there",
    unit="heads", test="Fisher's exact test on the 2x2 table of heads (middle third or not x passes or not)",
    measure="conditional odds ratio of passing, middle third against the other layers", tables=(SURFACE_TESTS,))
def sep_middle_layers(tables: RunTables, settings: ClaimSettings) -> list[Evidence]:
    return _share_where(tables, settings, "sep", _middle_third, "in the middle third of the layers",
                        "in the first and last thirds")
