r"""The claims of Pande et al. (2021, "The Heads Hypothesis"), registered as tests (METHODS 1.5 and 5.1).

On the role table (``roles``: a boolean or NA column per role, one row per head of each model and data set) and
the ceilings (``ceilings``: per role, the mean score of a perfect head and whether tau is below it):

- ``delimiter_largest``: more heads hold a delimiter role than any other kind. For each other kind X within
  reach, the exact binomial (McNemar) test on the heads holding exactly one of the two (``b``: delimiter only,
  ``c``: X only; H0 ``P(b) = P(c)``); the claim needs every X beaten, so ``p_for = max_X p_X`` (an
  intersection-union test), and ``p_against = min(1, m min_X p'_X)`` (some kind is larger; Bonferroni over the
  m kinds).
- ``cls_early`` / ``sep_middle_late``: the exact permutation test of the layer labels (:func:`position_test`):
  the mean layer of the heads holding ``delimiter_cls`` (``delimiter_sep``) against that of a random subset of
  as many tested heads; H1 lower (higher) than the mean layer of all tested heads.
- ``few_multi_role_late``: Fisher's exact test (:func:`share_test`) of the share of heads holding roles of two
  or more kinds in the last two layers against the other layers; H1 lower in the last two.
- ``local_syntactic``: the share of heads both local and syntactic (any relation) inside the paper's range
  42-88 % (:func:`range_test`, two one-sided exact binomial tests).

The claims of the role table of one model form one family (:data:`PANDE_FAMILY`, over the model's data sets): a
protocol with several models corrects each model's Pande claims within their own family, named in the ``family``
column of ``claims.csv``.

A role whose mean ceiling is at or below tau cannot be assigned to any head, so a claim that needs it reads
``cannot tell`` (role out of reach), never "does not hold". The fine-tuning claims of the paper, tested over seeds
by the comparison, are its package's (``analyses/finetune_comparison/claims.py``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd
from scipy import stats as sps

from headstats.analyses.roles import role_family
from headstats.stats.claims import ClaimSettings, Evidence, as_run_tables, register_claim
from headstats.stats.exact import position_test, range_test, share_test
from headstats.stats.paper_claims import PANDE
from headstats.tables.study_tables import ROLES

#: The paper's range for the share of heads that are both local and syntactic (Pande et al. 2021, by task).
PAPER_LOCAL_SYNTACTIC = (0.42, 0.88)
#: The family the Pande claims of the role table are corrected in: one per model (over its data sets), declared up
#: front, so that adding a model to a protocol does not change another model's verdicts.
PANDE_FAMILY = "Pande claims of {model}"
#: The smallest shift of the mean layer (in layers) that "sit in the early / late layers" means: one layer.
SMALLEST_LAYER_SHIFT = 1.0
_KEYS = ("model", "dataset", "layer", "head", "roles", "n_roles", "measure", "robust_across_measures")


class RoleGroup:
    """The heads of one (model, data set) of a role table, with which roles were tested and are within reach."""

    def __init__(self, model: str, dataset: str, group: pd.DataFrame, ceilings: pd.DataFrame | None) -> None:
        self.model, self.dataset = str(model), str(dataset)
        self.group = group.reset_index(drop=True)
        self.layers = self.group["layer"].to_numpy(int)
        self.n_layers = int(self.layers.max()) + 1
        columns = [c for c in group.columns if c not in _KEYS]
        self.tested = [c for c in columns if group[c].notna().any()]
        self.ceiling: dict[str, tuple[float, float, bool]] = {}
        if ceilings is not None and len(ceilings):
            part = ceilings[(ceilings["model"].astype(str) == self.model)
                            & (ceilings["dataset"].astype(str) == self.dataset)]
            for r in part.itertuples():
                self.ceiling[str(r.role)] = (float(r.mean_ceiling), float(r.tau), bool(r.tau_reachable))

    def held(self, role: str) -> np.ndarray:
        return self.group[role].fillna(False).to_numpy(dtype=bool)

    def reachable(self, role: str) -> bool:
        return self.ceiling.get(role, (math.nan, math.nan, True))[2]

    def kinds(self) -> dict[str, list[str]]:
        """Kind -> its tested roles."""
        out: dict[str, list[str]] = {}
        for role in self.tested:
            out.setdefault(role_family(role), []).append(role)
        return out

    def kind_held(self, kind: str) -> np.ndarray:
        roles = self.kinds().get(kind, [])
        return np.logical_or.reduce([self.held(r) for r in roles]) if roles else np.zeros(len(self.group), bool)

    def kind_reachable(self, kind: str) -> bool:
        return any(self.reachable(r) for r in self.kinds().get(kind, []))

    def out_of_reach(self, roles) -> str:
        """``"local out of reach (mean ceiling 2.71 <= tau 3)"`` for the given roles, ``""`` when all are in reach."""
        parts = [f"{r} out of reach (mean ceiling {self.ceiling[r][0]:.3g} <= tau {self.ceiling[r][1]:g})"
                 for r in roles if r in self.ceiling and not self.ceiling[r][2]]
        return "; ".join(parts)

    def kind_out_of_reach(self, kind: str) -> str:
        roles = self.kinds().get(kind, [])
        return "" if self.kind_reachable(kind) else self.out_of_reach(roles)


def role_groups(tables: Mapping[str, pd.DataFrame]) -> list[RoleGroup]:
    tables = as_run_tables(tables)
    roles, ceilings = tables[ROLES], tables.get("ceilings")
    return [RoleGroup(m, d, g, ceilings) for (m, d), g in roles.groupby(["model", "dataset"], sort=False)]


def _cannot(g: RoleGroup, reason: str, detail: str = "") -> Evidence:
    return Evidence(g.model, g.dataset, reason=reason, detail=detail)


# ================================================================================ delimiter heads the largest

@register_claim(
    "delimiter_largest", sentence="delimiter heads are the largest group", source=PANDE, family=PANDE_FAMILY,
    hypothesis="H0: for some other kind X within reach, no more heads hold a delimiter role than X "
               "(P(delimiter only) <= P(X only)); H1: for every X, P(delimiter only) > P(X only)",
    unit="heads", test="exact binomial (McNemar) test on the heads holding exactly one of delimiter and X, per "
                       "kind X; intersection-union over the kinds (p = max)",
    measure="share of heads holding a delimiter role minus the share holding the closest other kind",
    tables=(ROLES,))
def delimiter_largest(tables: Mapping[str, pd.DataFrame], settings: ClaimSettings) -> list[Evidence]:
    out = []
    for g in role_groups(tables):
        kinds = g.kinds()
        if "delimiter" not in kinds:
            out.append(_cannot(g, "role not tested: no delimiter role was tested"))
            continue
        if not g.kind_reachable("delimiter"):
            out.append(_cannot(g, "role out of reach: " + g.kind_out_of_reach("delimiter")))
            continue
        others = [k for k in kinds if k != "delimiter" and g.kind_reachable(k)]
        if not others:
            out.append(_cannot(g, "role not tested: no other kind of role within reach to compare with"))
            continue
        d = g.kind_held("delimiter")
        tests = {}
        for kind in others:
            x = g.kind_held(kind)
            b, c = int((d & ~x).sum()), int((x & ~d).sum())
            tests[kind] = (b, c, sps.binomtest(b, b + c, 0.5, alternative="greater").pvalue if b + c else 1.0,
                           sps.binomtest(b, b + c, 0.5, alternative="less").pvalue if b + c else 1.0)
        hardest = max(tests, key=lambda k: tests[k][2])
        b, c, p_for, _ = tests[hardest]
        p_against = min(1.0, len(tests) * min(t[3] for t in tests.values()))
        n = len(g.group)
        if b + c:
            ci = sps.binomtest(b, b + c).proportion_ci(settings.confidence, method="exact")
            low, high = (b + c) / n * (2 * ci.low - 1), (b + c) / n * (2 * ci.high - 1)
        else:
            low = high = 0.0
        floor = max(0.5 ** (t[0] + t[1]) for t in tests.values())
        floor_against = min(1.0, len(tests) * min(0.5 ** (t[0] + t[1]) for t in tests.values()))
        skipped = [k for k in kinds if k != "delimiter" and k not in others]
        out.append(Evidence(
            g.model, g.dataset, estimate=(b - c) / n, ci_low=low, ci_high=high, p_for=float(p_for),
            p_against=float(p_against), floor=floor, floor_against=floor_against,
            detectable=f"with {b + c} heads holding exactly one of delimiter and {hardest}, the smallest one-sided "
                       f"p is {0.5 ** (b + c):.3g}",
            detail=f"{int(d.sum())} of {n} heads hold a delimiter role; the closest other kind is {hardest} with "
                   f"{int(g.kind_held(hardest).sum())} ({b} delimiter only, {c} {hardest} only)"
                   + (f"; left out as out of reach: {', '.join(skipped)}" if skipped else "")))
    return out


# ====================================================================================== where heads sit

def _position(tables: Mapping[str, pd.DataFrame], settings: ClaimSettings, role: str, early: bool,
              what: str) -> list[Evidence]:
    out = []
    level = settings.alpha / 2
    for g in role_groups(tables):
        if role not in g.tested:
            out.append(_cannot(g, f"role not tested: {role}"))
            continue
        if not g.reachable(role):
            out.append(_cannot(g, "role out of reach: " + g.out_of_reach([role])))
            continue
        tested = g.group[role].notna().to_numpy()
        layers, held = g.layers[tested], g.held(role)[tested]
        res = position_test(layers, held, confidence=settings.confidence, level=level)
        if res.k == 0:
            out.append(_cannot(g, f"too few heads: no head holds {role}"))
            continue
        floor, floor_against = (res.floor_lower, res.floor_upper) if early else (res.floor_upper, res.floor_lower)
        per_layer = np.bincount(layers[held], minlength=g.n_layers)
        where = ", ".join(f"{layer}: {int(c)}" for layer, c in enumerate(per_layer) if c)
        detail = (f"{res.k} of {res.n} tested heads hold {role} (per layer {where}): mean layer {res.mean_held:.2f} "
                  f"against {res.mean_all:.2f} over all tested heads ({g.n_layers} layers, 0-based)")
        reach = res.detect_lower if early else res.detect_upper
        detectable = (f"with {res.k} {what} heads, a mean layer {'at most' if early else 'at least'} {reach:.2f} "
                      f"would reach p <= alpha / 2 = {level:g}" if np.isfinite(reach) else
                      f"with {res.k} {what} heads no layering reaches p <= alpha / 2 = {level:g}")
        reason = ""
        if min(1.0, 2 * min(floor, floor_against)) > settings.alpha:
            reason = (f"too few heads: {res.k} {what} head(s); the smallest p-value of the layer permutation in "
                      f"either direction is {min(1.0, 2 * min(floor, floor_against)):.3g} > alpha = "
                      f"{settings.alpha:g}")
        out.append(Evidence(
            g.model, g.dataset, estimate=res.mean_held - res.mean_all, ci_low=res.ci_low, ci_high=res.ci_high,
            p_for=res.p_lower if early else res.p_upper, p_against=res.p_upper if early else res.p_lower,
            floor=floor, floor_against=floor_against, detectable=detectable, reason=reason, detail=detail))
    return out


@register_claim(
    "cls_early", sentence="[CLS] heads sit in the early layers", source=PANDE, family=PANDE_FAMILY,
    hypothesis="H0: the heads holding delimiter_cls sit like a random subset of the tested heads; H1: their mean "
               "layer is lower (mean layer of delimiter_cls heads < mean layer of all tested heads)",
    unit="heads", test="exact permutation test of the layer labels (statistic: mean layer of the heads holding "
                       "the role; all C(n, k) subsets)",
    measure="mean layer of the delimiter_cls heads minus that of all tested heads", tables=(ROLES,),
    smallest_effect=SMALLEST_LAYER_SHIFT)
def cls_early(tables: Mapping[str, pd.DataFrame], settings: ClaimSettings) -> list[Evidence]:
    return _position(tables, settings, "delimiter_cls", early=True, what="[CLS]")


@register_claim(
    "sep_middle_late", sentence="[SEP] heads sit in the middle and late layers", source=PANDE, family=PANDE_FAMILY,
    hypothesis="H0: the heads holding delimiter_sep sit like a random subset of the tested heads; H1: their mean "
               "layer is higher (mean layer of delimiter_sep heads > mean layer of all tested heads)",
    unit="heads", test="exact permutation test of the layer labels (statistic: mean layer of the heads holding "
                       "the role; all C(n, k) subsets)",
    measure="mean layer of the delimiter_sep heads minus that of all tested heads", tables=(ROLES,),
    smallest_effect=SMALLEST_LAYER_SHIFT)
def sep_middle_late(tables: Mapping[str, pd.DataFrame], settings: ClaimSettings) -> list[Evidence]:
    return _position(tables, settings, "delimiter_sep", early=False, what="[SEP]")


# =========================================================================== multi-role heads, local-syntactic

def multi_role(g: RoleGroup) -> np.ndarray:
    """Per head: whether it holds roles of two or more kinds (within reach)."""
    kinds = [k for k in g.kinds() if g.kind_reachable(k)]
    if not kinds:
        return np.zeros(len(g.group), bool)
    return np.sum([g.kind_held(k) for k in kinds], axis=0) >= 2


@register_claim(
    "few_multi_role_late", sentence="few heads hold several roles in the last two layers", source=PANDE,
    family=PANDE_FAMILY,
    hypothesis="H0: the share of heads holding roles of two or more kinds is the same in the last two layers as "
               "in the others; H1: it is lower in the last two (odds ratio late / other < 1)",
    unit="heads", test="Fisher's exact test on the 2x2 table of heads (last two layers or not x several kinds "
                       "or not)",
    measure="conditional odds ratio of holding several kinds, last two layers against the others",
    tables=(ROLES,))
def few_multi_role_late(tables: Mapping[str, pd.DataFrame], settings: ClaimSettings) -> list[Evidence]:
    out = []
    for g in role_groups(tables):
        kinds = [k for k in g.kinds() if g.kind_reachable(k)]
        if g.n_layers < 3:
            out.append(_cannot(g, f"the model has only {g.n_layers} layers"))
            continue
        if len(kinds) < 2:
            far = "; ".join(g.kind_out_of_reach(k) for k in g.kinds() if not g.kind_reachable(k))
            out.append(_cannot(g, "role out of reach: fewer than two kinds of role can be held"
                               + (f" ({far})" if far else "")))
            continue
        multi = multi_role(g)
        late = g.layers >= g.n_layers - 2
        res = share_test(int(multi[late].sum()), int(late.sum()), int(multi[~late].sum()), int((~late).sum()),
                         confidence=settings.confidence, level=settings.alpha / 2)
        detectable = (f"with {res.k_a + res.k_b} multi-role heads, at most {res.detect_less} of the {res.n_a} heads "
                      f"of the last two layers would reach p <= alpha / 2" if res.detect_less is not None else
                      f"with {res.k_a + res.k_b} multi-role heads, no split reaches p <= alpha / 2")
        reason = "" if res.k_a + res.k_b else "too few heads: no head holds roles of two kinds"
        out.append(Evidence(
            g.model, g.dataset, estimate=res.odds_ratio, ci_low=res.ci_low, ci_high=res.ci_high, p_for=res.p_less,
            p_against=res.p_greater, floor=res.floor_less, floor_against=res.floor_greater, detectable=detectable, reason=reason,
            detail=f"{res.k_a} of {res.n_a} heads ({res.share_a:.0%}) in layers {g.n_layers - 2}-{g.n_layers - 1} "
                   f"hold roles of two or more kinds, against {res.k_b} of {res.n_b} ({res.share_b:.0%}) in "
                   f"layers 0-{g.n_layers - 3}"))
    return out


@register_claim(
    "local_syntactic", sentence="42-88 % of heads are both local and syntactic (by task)", source=PANDE,
    family=PANDE_FAMILY,
    hypothesis="H0: the share pi of heads both local and syntactic is <= 0.42 or >= 0.88; H1: 0.42 < pi < 0.88",
    unit="heads", test="two one-sided exact binomial tests (TOST) of the share of heads; against: share outside "
                       "the range",
    measure="share of heads both local and syntactic (any relation)", tables=(ROLES,))
def local_syntactic(tables: Mapping[str, pd.DataFrame], settings: ClaimSettings) -> list[Evidence]:
    out = []
    low, high = PAPER_LOCAL_SYNTACTIC
    for g in role_groups(tables):
        kinds = g.kinds()
        missing = [k for k in ("local", "syntactic") if k not in kinds]
        if missing:
            out.append(_cannot(g, f"role not tested: {' and '.join(missing)}"))
            continue
        far = [g.kind_out_of_reach(k) for k in ("local", "syntactic") if not g.kind_reachable(k)]
        both = g.kind_held("local") & g.kind_held("syntactic")
        n, k = len(g.group), int(both.sum())
        detail = f"{k} of {n} heads ({k / n:.0%}) are both local and syntactic (any relation)"
        if far:
            out.append(_cannot(g, "role out of reach: " + "; ".join(far), detail))
            continue
        res = range_test(k, n, low, high, confidence=settings.confidence, level=settings.alpha / 2)
        detectable = (f"with {n} heads, counts {res.detect[0]}-{res.detect[1]} ({res.detect[0] / n:.0%}-"
                      f"{res.detect[1] / n:.0%}) would reach p <= alpha / 2" if res.detect else
                      f"with {n} heads no count reaches p <= alpha / 2")
        out.append(Evidence(g.model, g.dataset, estimate=res.share, ci_low=res.ci_low, ci_high=res.ci_high,
                            p_for=res.p_for, p_against=res.p_against, floor=res.floor,
                            floor_against=res.floor_against, detectable=detectable,
                            detail=detail))
    return out
