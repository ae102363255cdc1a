r"""Exact tests over heads and seeds, for claims whose unit of replication is the head (METHODS 5.1).

- :func:`share_test`: two groups of heads, the share holding a property in each: Fisher's exact test on the 2x2
  table (``scipy.stats.fisher_exact``; the hypergeometric law of the top-left count given the margins), the
  conditional maximum-likelihood odds ratio with its exact interval (``scipy.stats.contingency.odds_ratio``),
  the smallest attainable p-value given the margins and the largest/smallest count that would reach a level.
- :func:`position_test`: where the heads holding a role sit: the exact permutation test of the layer labels.
  Under H0 the k heads holding the role are a random k-subset of the n heads tested; the statistic is the mean
  layer of the k heads, and its exact law (every one of the ``C(n, k)`` subsets equally likely) is counted by
  dynamic programming over layers: with ``c_l`` heads tested in layer l, the number of k-subsets with layer sum s
  is the coefficient of ``x^k y^s`` in ``prod_l (1 + x y^l)^{c_l}``.
- :func:`range_test`: a share of heads inside a stated range ``[low, high]``: two one-sided exact binomial tests
  (TOST, Schuirmann 1987) with ``scipy.stats.binomtest``; against it, a share outside the range.
- :func:`signflip_claim`: a claim over k seeds: the exact sign-flip test of the per-seed values (all ``2^k`` sign
  patterns, :func:`headstats.stats.seeds.signflip_over_seeds`), whose one-sided floor is ``1 / 2^k``.

Each returns the pieces of a :class:`headstats.stats.claims.Evidence`: estimate, interval, the one-sided p in
each direction, the floor and what the design can detect at a level.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps
from scipy.special import comb

from headstats.stats.seeds import seeds_needed, signflip_test, t_over_seeds

__all__ = ["LabelPermutationTest", "label_permutation_test", "signflip_bound", "PositionTest", "RangeTest", "ShareTest", "SeedTest", "layer_sum_counts", "position_test", "range_test",
           "share_test", "signflip_claim", "signflip_hypothesis"]


@dataclass(frozen=True)
class ShareTest:
    """Fisher's exact test of two shares of heads (group a: ``k_a`` of ``n_a``; group b: ``k_b`` of ``n_b``).

    ``p_less``: H1 share_a < share_b; ``p_greater``: H1 share_a > share_b (each one-sided, equal to
    ``scipy.stats.fisher_exact([[k_a, n_a - k_a], [k_b, n_b - k_b]], alternative=...)``). ``floor_less`` and
    ``floor_greater`` are the smallest p-values the margins allow; ``detect_less`` the largest ``k_a`` whose
    ``p_less`` is at most the level, ``detect_greater`` the smallest ``k_a`` whose ``p_greater`` is (None: none).
    """

    k_a: int
    n_a: int
    k_b: int
    n_b: int
    odds_ratio: float
    ci_low: float
    ci_high: float
    p_less: float
    p_greater: float
    floor_less: float
    floor_greater: float
    detect_less: int | None
    detect_greater: int | None

    @property
    def share_a(self) -> float:
        return self.k_a / self.n_a if self.n_a else math.nan

    @property
    def share_b(self) -> float:
        return self.k_b / self.n_b if self.n_b else math.nan


def share_test(k_a: int, n_a: int, k_b: int, n_b: int, *, confidence: float = 0.95,
               level: float = 0.025) -> ShareTest:
    """Fisher's exact test of ``k_a / n_a`` against ``k_b / n_b`` (see :class:`ShareTest`).

    ``level`` is the one-sided level at which ``detect_*`` is read (alpha / 2 for a claim tested both ways).
    """
    k_a, n_a, k_b, n_b = int(k_a), int(n_a), int(k_b), int(n_b)
    if min(k_a, k_b) < 0 or k_a > n_a or k_b > n_b:
        raise ValueError(f"counts must satisfy 0 <= k <= n, got {k_a}/{n_a} and {k_b}/{n_b}")
    total, held = n_a + n_b, k_a + k_b
    law = sps.hypergeom(total, held, n_a)  # the top-left count given the margins
    lo, hi = max(0, held - n_b), min(held, n_a)
    support = np.arange(lo, hi + 1)
    cdf, sf = law.cdf(support), law.sf(support - 1)
    p_less, p_greater = float(law.cdf(k_a)), float(law.sf(k_a - 1))
    below = support[cdf <= level]
    above = support[sf <= level]
    table = np.array([[k_a, n_a - k_a], [k_b, n_b - k_b]])
    if n_a and n_b and 0 < held < total:
        res = sps.contingency.odds_ratio(table, kind="conditional")
        ci = res.confidence_interval(confidence)
        odds, low, high = float(res.statistic), float(ci.low), float(ci.high)
    else:
        odds = low = high = math.nan
    return ShareTest(k_a, n_a, k_b, n_b, odds, low, high, min(p_less, 1.0), min(p_greater, 1.0),
                     float(cdf[0]), float(sf[-1]), int(below.max()) if len(below) else None,
                     int(above.min()) if len(above) else None)


def layer_sum_counts(layers: np.ndarray, k: int) -> np.ndarray:
    """``counts[s]``: the number of k-subsets of the heads (with layer indices ``layers``) whose layers sum to s.

    Counted as floats (``C(384, 192)`` is about 1e114, well inside float64) by a product over layers of
    ``sum_c C(c_l, c) x^c y^{c l}`` (see the module docstring).
    """
    layers = np.asarray(layers, dtype=int)
    values, counts = np.unique(layers, return_counts=True)
    top = int(layers.sum()) if len(layers) else 0
    table = np.zeros((k + 1, top + 1))
    table[0, 0] = 1.0
    for value, c in zip(values, counts):
        new = table.copy()
        for take in range(1, min(int(c), k) + 1):
            shift = take * int(value)
            ways = comb(int(c), take)
            new[take:, shift:] += ways * table[:k + 1 - take, :top + 1 - shift]
        table = new
    return table[k]


@dataclass(frozen=True)
class PositionTest:
    """The exact permutation test of the layer labels of k heads among n (see the module docstring).

    ``p_lower``: H1 the k heads sit lower (earlier) than a random k-subset (``P(sum <= observed)``);
    ``p_upper``: H1 they sit later. ``floor_lower`` / ``floor_upper``: the smallest attainable values.
    ``detect_lower``: the largest mean layer of k heads that would give ``p_lower <= level`` (NaN: none);
    ``detect_upper``: the smallest mean layer that would give ``p_upper <= level``.
    """

    k: int
    n: int
    mean_held: float
    mean_all: float
    ci_low: float
    ci_high: float
    p_lower: float
    p_upper: float
    floor_lower: float
    floor_upper: float
    detect_lower: float
    detect_upper: float


def position_test(layers: np.ndarray, held: np.ndarray, *, confidence: float = 0.95,
                  level: float = 0.025) -> PositionTest:
    """Exact permutation test of where the heads with ``held`` sit among all heads (``layers`` per head).

    The estimate is ``mean_held - mean_all`` (layers). Its interval inverts the permutation test: with
    ``q_lo`` and ``q_hi`` the ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` quantiles of the mean layer
    of a random k-subset (the exact null distribution), it is ``[mean_held - q_hi, mean_held - q_lo]``, the shifts
    of the held heads' layers the test at level ``(1 - confidence) / 2`` per side does not reject; it holds 0
    exactly when neither one-sided p is below that level (up to the ties of the discrete null). A t interval
    over the held heads would ignore that they are drawn without replacement from the n tested heads (with 65
    of 72 heads held, the null spread is a ninth of the t interval's).
    """
    layers = np.asarray(layers, dtype=int)
    held = np.asarray(held, dtype=bool)
    n, k = len(layers), int(held.sum())
    mean_all = float(layers.mean()) if n else math.nan
    if k == 0 or n == 0:
        return PositionTest(k, n, math.nan, mean_all, math.nan, math.nan, math.nan, math.nan, math.nan, math.nan,
                            math.nan, math.nan)
    counts = layer_sum_counts(layers, k)
    total = counts.sum()  # = C(n, k)
    probs = counts / total
    observed = int(layers[held].sum())
    cdf = np.cumsum(probs)
    sf = np.cumsum(probs[::-1])[::-1]
    possible = np.nonzero(counts > 0)[0]
    p_lower, p_upper = float(min(cdf[observed], 1.0)), float(min(sf[observed], 1.0))
    low_ok = possible[cdf[possible] <= level]
    high_ok = possible[sf[possible] <= level]
    x = layers[held].astype(float)
    tail = (1 - confidence) / 2
    q_lo = float(possible[np.searchsorted(cdf[possible], tail * (1 - 1e-12))]) / k
    q_hi = float(possible[::-1][np.searchsorted(sf[possible][::-1], tail * (1 - 1e-12))]) / k
    return PositionTest(k, n, float(x.mean()), mean_all, float(x.mean()) - q_hi, float(x.mean()) - q_lo,
                        p_lower, p_upper,
                        float(cdf[possible[0]]), float(sf[possible[-1]]),
                        float(low_ok.max()) / k if len(low_ok) else math.nan,
                        float(high_ok.min()) / k if len(high_ok) else math.nan)


@dataclass(frozen=True)
class RangeTest:
    """Two one-sided exact binomial tests of a share of heads inside ``[low, high]``.

    ``p_for``: H0 share <= low or share >= high, H1 low < share < high (TOST: the larger of
    ``binomtest(k, n, low, "greater")`` and ``binomtest(k, n, high, "less")``); ``p_against``: H0 low <= share <=
    high against H1 the share lies outside (``2 min`` of ``binomtest(k, n, low, "less")`` and
    ``binomtest(k, n, high, "greater")``). ``floor``: the smallest ``p_for`` any count of n heads attains;
    ``detect``: the counts whose ``p_for`` is at most the level, as ``(first, last)`` (None: none);
    ``floor_against``: the smallest ``p_against`` any count attains.
    """

    k: int
    n: int
    share: float
    ci_low: float
    ci_high: float
    p_for: float
    p_against: float
    floor: float
    detect: tuple[int, int] | None
    floor_against: float = math.nan


def _tost(k: int, n: int, low: float, high: float) -> float:
    return max(sps.binomtest(k, n, low, alternative="greater").pvalue,
               sps.binomtest(k, n, high, alternative="less").pvalue)


def range_test(k: int, n: int, low: float, high: float, *, confidence: float = 0.95,
               level: float = 0.025) -> RangeTest:
    """A share ``k / n`` of heads inside ``[low, high]`` (see :class:`RangeTest`)."""
    if not 0 <= low < high <= 1:
        raise ValueError(f"a range of shares needs 0 <= low < high <= 1, got [{low}, {high}]")
    k, n = int(k), int(n)
    res = sps.binomtest(k, n, 0.5)
    ci = res.proportion_ci(confidence, method="exact")
    p_for = _tost(k, n, low, high)
    p_against = min(1.0, 2 * min(sps.binomtest(k, n, low, alternative="less").pvalue,
                                 sps.binomtest(k, n, high, alternative="greater").pvalue))
    all_p = np.array([_tost(j, n, low, high) for j in range(n + 1)])
    ok = np.nonzero(all_p <= level)[0]
    j = np.arange(n + 1)
    outside = 2 * np.minimum(sps.binom.cdf(j, n, low), sps.binom.sf(j - 1, n, high))
    return RangeTest(k, n, k / n, float(ci.low), float(ci.high), float(p_for), float(p_against),
                     float(all_p.min()), (int(ok.min()), int(ok.max())) if len(ok) else None,
                     float(min(1.0, outside.min())))


@dataclass(frozen=True)
class SeedTest:
    """A claim over k seeds: the mean of the per-seed values with its t interval, and the exact sign-flip
    p-values each way (``p_for`` in the claimed direction). ``floor = 1 / 2^k``; ``seeds_needed``: the fewest
    seeds whose floor is below the level."""

    k: int
    mean: float
    ci_low: float
    ci_high: float
    p_for: float
    p_against: float
    floor: float
    seeds_needed: int


def signflip_claim(values, *, alternative: str, confidence: float = 0.95, level: float = 0.025) -> SeedTest:
    """The exact sign-flip test over seeds of H1: mean > 0 (``alternative="greater"``) or < 0 (``"less"``).

    Never p = 0: the observed sign pattern is one of the ``2^k``, so p >= ``1 / 2^k`` whatever the values (sd = 0
    included). ``seeds_needed`` is the fewest seeds with which one test at ``level`` can reject.
    """
    if alternative not in ("greater", "less"):
        raise ValueError(f"alternative must be 'greater' or 'less', not {alternative!r}")
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    k = len(v)
    if k == 0:
        return SeedTest(0, math.nan, math.nan, math.nan, math.nan, math.nan, math.nan,
                        seeds_needed(alpha=2 * level, m=1, correction="none", alternative="two-sided"))
    other = "less" if alternative == "greater" else "greater"
    t = t_over_seeds(v, alternative=alternative, confidence=confidence)
    claimed, opposite = signflip_test(v, alternative=alternative), signflip_test(v, alternative=other)
    return SeedTest(k, float(t["mean"][0]), float(t["ci_low"][0]), float(t["ci_high"][0]), float(claimed["p"][0]),
                    float(opposite["p"][0]), float(claimed["floor"][0]),
                    seeds_needed(alpha=2 * level, m=1, correction="none", alternative="two-sided"))


def signflip_hypothesis(quantities, alternatives) -> str:
    """H0 and H1 of the exact one-sided sign-flip test over seeds that :func:`signflip_claim` runs, in words, with
    the direction it tests (``"greater"``: H1 above 0, ``"less"``: below 0).

    ``quantities`` and ``alternatives`` are one name and one direction, or tuples of them for a claim whose parts
    must all hold (intersection-union: the claim's p is the largest of the parts'). The text is what the test
    decides: under H0 the per-seed value is symmetric about 0 (each of the ``2^k`` sign patterns of the k values
    equally likely); H1, one-sided in the claimed direction, is a shift of that law above (below) 0, detected by
    the mean over seeds in the upper (lower) tail of its sign-flip law. The other direction is not tested by
    the verdict.
    """
    if isinstance(alternatives, str):
        quantities, alternatives = (quantities,), (alternatives,)
    if len(quantities) != len(alternatives):
        raise ValueError("one direction per quantity")
    nulls, alts = [], []
    for quantity, alternative in zip(quantities, alternatives):
        if alternative not in ("greater", "less"):
            raise ValueError(f"alternative must be 'greater' or 'less', not {alternative!r}")
        side, sign, tail = ("above", ">", "upper") if alternative == "greater" else ("below", "<", "lower")
        nulls.append(f"the per-seed {quantity} is symmetric about 0 (every sign pattern equally likely)")
        alts.append(f"H1 (one-sided, {alternative}): it is shifted {side} 0 (mean over seeds {sign} 0; exact "
                    f"sign-flip test, {tail} tail)")
    if len(nulls) == 1:
        return f"H0: {nulls[0]}; {alts[0]}"
    return ("H0: one of the parts is null (intersection-union, p the larger of the parts'): " + "; ".join(
        f"({i + 1}) H0: {null}; {alt}" for i, (null, alt) in enumerate(zip(nulls, alts))))


def signflip_bound(values, *, alternative: str, confidence: float = 0.95) -> float:
    r"""The one-sided confidence bound of a location shift that inverts the exact sign-flip test of ``values``.

    ``alternative="greater"``: the lower bound :math:`\inf\{\mu: p_{greater}(v - \mu) > 1 - c\}` (the shifts the
    one-sided test at level ``1 - confidence`` does not reject), so that the bound is above 0 exactly when the
    test rejects "no shift" at that level; ``"less"``: the upper bound, by symmetry. Found by bisection on
    :math:`\mu` between the smallest and largest value (the p-value is monotone in the shift). NaN without
    values; the most extreme value when no shift is rejected.
    """
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return math.nan
    if alternative == "less":
        return -signflip_bound(-v, alternative="greater", confidence=confidence)
    tail = 1 - confidence
    p_at = lambda mu: float(signflip_test(v - mu, alternative="greater")["p"][0])  # noqa: E731
    lo, hi = float(v.min()) - 1.0, float(v.max())
    if p_at(lo) > tail:
        return lo  # not even the smallest shift is rejected: the bound is no tighter than the data
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if p_at(mid) <= tail else (lo, mid)
    return float(hi)


@dataclass(frozen=True)
class LabelPermutationTest:
    """The permutation test of labelled units against the others (within strata): both one-sided p-values, the
    floor, how they were computed and the interval that inverts the test (see :func:`label_permutation_test`).
    ``n_strata`` counts the strata that hold both labelled and other units (the others are fixed under the
    permutation and left out)."""

    estimate: float
    ci_low: float
    ci_high: float
    p_greater: float
    p_less: float
    floor: float
    n_arrangements: float
    exact: bool
    n_resamples: int
    seed: int
    n_strata: int = 1


def _stratum_draws(n: int, k: int, exact: bool, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """The labelled positions of every k-subset of ``range(n)`` (exact) or of ``n_resamples`` random ones."""
    if exact:
        return np.array(list(itertools.combinations(range(n), k)), dtype=np.int64).reshape(-1, k)
    return rng.random((int(n_resamples), n)).argsort(axis=1)[:, :k]


def label_permutation_test(values, held, *, strata=None, n_resamples: int = 9_999, seed: int = 0,
                           confidence: float = 0.95) -> LabelPermutationTest:
    r"""Permutation test of the labelled units (``held``) against the others, within strata, exact when it can be.

    Under H0 the labels are exchangeable within each stratum (e.g. the heads of one layer): a draw keeps the
    number :math:`k_l` of labelled units of every stratum l and labels a random :math:`k_l`-subset of its
    :math:`n_l` units. The statistic is the weighted mean of the within-stratum differences,

    .. math:: D = \sum_l w_l (ar x_{l, held} - ar x_{l, other}) / \sum_l w_l, \qquad w_l = k_l (n_l - k_l) / n_l,

    which, given the strata's totals, is an increasing function of the sum of the labelled values (so the test is
    the stratified permutation test of that sum), and is shifted by exactly :math:`\delta` when every labelled
    value is; strata with no labelled or no other unit are fixed and drop out. Without strata (one stratum) D is
    ``mean(held) - mean(others)``. Every one of the :math:`\prod_l inom{n_l}{k_l}` stratified labelings is
    enumerated when there are at most ``n_resamples`` of them (exact; ``p = #{at least as extreme} / total``,
    floor ``1 / total``; unstratified, equal to ``scipy.stats.permutation_test``'s exact p); otherwise
    ``n_resamples`` seeded random stratified labelings with ``p = (1 + #{at least as extreme}) / (1 + n_resamples)``
    (floor ``1 / (n_resamples + 1)``). The interval inverts the same test: the shifts :math:`\delta` of the
    labelled units for which neither one-sided test rejects at ``(1 - confidence) / 2``, on the same labelings for
    every shift (each labeling's statistic is linear in :math:`\delta`), so that it excludes 0 when, and only
    when, the test rejects at that level (up to the discreteness of the law); a side whose floor is above
    ``(1 - confidence) / 2`` rejects no shift and has no bound (infinite).

    Raises
    ------
    ValueError
        When no stratum holds both labelled and other units (nothing to compare).
    """
    x = np.asarray(values, dtype=float)
    h = np.asarray(held, dtype=bool)
    labels = np.zeros(x.size, dtype=np.int64) if strata is None else np.asarray(strata)
    if not (x.size == h.size == labels.size):
        raise ValueError("values, held and strata need one entry per unit")
    groups = []  # per stratum: its values (labelled first), k, n
    for label in dict.fromkeys(labels.tolist()):
        inside = labels == label
        k, n = int((inside & h).sum()), int(inside.sum())
        if 0 < k < n:
            groups.append((np.concatenate([x[inside & h], x[inside & ~h]]), k, n))
    if not groups:
        raise ValueError("no stratum holds both labelled and other units: nothing to compare")
    weights = np.array([k * (n - k) / n for _, k, n in groups])
    weights = weights / weights.sum()
    arrangements = float(np.prod([comb(n, k, exact=False) for _, k, n in groups]))
    exact = arrangements <= n_resamples
    rng = np.random.default_rng(seed)
    draws = [_stratum_draws(n, k, exact, n_resamples, rng) for _, k, n in groups]
    if exact:  # every combination of the strata's subsets: the index of each stratum's subset per labeling
        picks = np.unravel_index(np.arange(int(round(arrangements))), [len(d) for d in draws])
    else:
        picks = [np.arange(int(n_resamples))] * len(draws)
    null0 = np.zeros(len(picks[0]))
    slope = np.zeros(len(picks[0]))  # d null / d delta
    est = 0.0
    for (v, k, n), w, d, pick in zip(groups, weights, draws, picks):
        total = v.sum()
        sums, from_held = v[d].sum(axis=1)[pick], (d < k).sum(axis=1)[pick]
        null0 += w * (sums / k - (total - sums) / (n - k))
        slope += w * (-from_held / k - (from_held - k) / (n - k))
        est += w * (v[:k].mean() - v[k:].mean())
    est = float(est)

    def p_values(delta: float) -> tuple[float, float]:
        null = null0 + delta * slope
        observed = est - delta
        tol = 1e-12 * max(1.0, abs(observed))
        ge, le = int((null >= observed - tol).sum()), int((null <= observed + tol).sum())
        if exact:
            return ge / len(null), le / len(null)
        return (ge + 1) / (len(null) + 1), (le + 1) / (len(null) + 1)

    tail = (1 - confidence) / 2
    spread = float(np.ptp(x[np.isfinite(x)])) or 1.0

    def bound(side: int) -> float:
        # side 0 (lower bound): the smallest shift the "greater" test does not reject; side 1: the largest
        # shift the "less" test does not reject
        inner, outer = est, est - spread if side == 0 else est + spread
        while p_values(outer)[side] > tail and abs(outer - est) < 1e6 * spread:
            outer = est + 2 * (outer - est)
        if p_values(outer)[side] > tail:  # no shift is rejected (the floor is above the tail): no bound
            return -math.inf if side == 0 else math.inf
        for _ in range(60):
            mid = (inner + outer) / 2
            inner, outer = (inner, mid) if p_values(mid)[side] <= tail else (mid, outer)
        return float(inner)

    greater, less = p_values(0.0)
    floor = 1.0 / arrangements if exact else 1.0 / (n_resamples + 1)
    return LabelPermutationTest(est, bound(0), bound(1), greater, less, floor, arrangements, exact,
                                int(n_resamples), int(seed), len(groups))
