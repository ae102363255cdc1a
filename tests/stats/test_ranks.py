"""Tests of headstats.stats.ranks: the signed-rank null and the Walsh order statistics against brute force.

The brute-force references below are the implementations headstats used before the O(n log n) selection
(all n(n+1)/2 Walsh averages built and partitioned); the new code must give the same number on every case.
"""

from __future__ import annotations


import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from headstats.stats import ranks
from headstats.stats.onesample import test_roles
from headstats.stats.paired import paired_tests


# ---------------------------------------------------------------------------------------------------------
# brute-force references (the code before the selection algorithm)
# ---------------------------------------------------------------------------------------------------------
def brute_signrank_cdf(n: int) -> np.ndarray:
    """P(T+ <= t) by enumerating all 2^n sign patterns of the ranks 1..n."""
    patterns = (np.arange(2**n)[:, None] >> np.arange(n)) & 1
    t_plus = patterns @ np.arange(1, n + 1)
    return np.array([(t_plus <= t).mean() for t in range(n * (n + 1) // 2 + 1)])


def old_onesample_critical_rank(n: int, confidence: float) -> int:
    a = 1 - confidence
    if n <= 50:
        counts = np.zeros(n * (n + 1) // 2 + 1)
        counts[0] = 1.0
        for i in range(1, n + 1):
            counts[i:] = counts[i:] + counts[:-i].copy()
        cdf = np.cumsum(counts) / 2.0**n
        ok = np.nonzero(cdf <= a + 1e-12)[0]
        return int(ok[-1]) + 1 if ok.size else 0
    # above 50 (since issue 8): the normal approximation WITHOUT continuity correction, as scipy's p-value,
    # by brute force over every c: C - 1 = the largest c with P(T+ >= M - c) <= a
    m = n * (n + 1) // 2
    c = np.arange(m + 1)
    ok = np.nonzero(ranks.signrank_normal_sf(m - c, n, 0.0) <= a)[0]
    return int(ok[-1]) + 1 if ok.size else 0


def old_walsh_lower_bound(x: np.ndarray, confidence: float) -> np.ndarray:
    k, n = x.shape
    r = old_onesample_critical_rank(n, confidence)
    if r < 1:
        return np.full(k, -np.inf)
    iu = np.triu_indices(n)
    walsh = (x[:, iu[0]] + x[:, iu[1]]) / 2.0
    return np.partition(walsh, r - 1, axis=1)[:, r - 1]


def old_paired_rank_bound(n: int, tail: float) -> int:
    m = n * (n + 1) // 2
    if n <= 50:
        counts = np.zeros(m + 1)
        counts[0] = 1.0
        for k in range(1, n + 1):
            counts[k:] = counts[k:] + counts[: m + 1 - k].copy()
        c = int(np.searchsorted(np.cumsum(counts) / 2.0**n, tail, side="right"))
    else:
        c = old_onesample_critical_rank(n, 1.0 - tail)
    return min(c, (m + 1) // 2)  # 0: no interval at that level (formerly clamped to 1, a mislabelled range)


def old_hodges_lehmann(d: np.ndarray, confidence: float, alternative: str) -> tuple[float, float, float]:
    n = d.size
    if n == 0:
        return (np.nan, np.nan, np.nan)
    i, j = np.triu_indices(n)
    walsh = (d[i] + d[j]) / 2.0
    m = walsh.size
    tail = (1.0 - confidence) / 2.0 if alternative == "two-sided" else 1.0 - confidence
    c = old_paired_rank_bound(n, tail)
    mid = [(m - 1) // 2, m // 2]
    if c < 1:
        part = np.partition(walsh, mid)
        low, high = -np.inf, np.inf
    else:
        lo_k, hi_k = c - 1, m - c
        part = np.partition(walsh, sorted({lo_k, hi_k, *mid}))
        low, high = float(part[lo_k]), float(part[hi_k])
    estimate = float((part[mid[0]] + part[mid[1]]) / 2.0)
    if alternative == "greater":
        high = np.inf
    elif alternative == "less":
        low = -np.inf
    return (estimate, low, high)


def brute_walsh_sorted(x: np.ndarray) -> np.ndarray:
    n = x.size
    return np.sort([(x[i] + x[j]) / 2.0 for i in range(n) for j in range(i, n)])


def random_sample(rng: np.random.Generator, n, kind: int) -> np.ndarray:
    """Continuous, heavily tied, rounded, or awkward-for-rounding samples."""
    if kind == 0:
        return rng.standard_normal(n)
    if kind == 1:
        return rng.integers(0, 4, n).astype(float)
    if kind == 2:
        return np.round(rng.gamma(2.0, 1.0, n), 1)
    return rng.choice(np.array([0.1, 0.2, 0.3, -0.1, 1e-17, 1e16, 3.0]), n)


# ---------------------------------------------------------------------------------------------------------
# the signed-rank null
# ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("n", [1, 2, 5, 9, 12])
def test_null_cdf_equals_enumeration(n):
    assert np.array_equal(ranks.signrank_null_cdf(n), brute_signrank_cdf(n))


def test_critical_count_is_the_largest_c_by_enumeration():
    for n in (1, 3, 6, 12):
        cdf = brute_signrank_cdf(n)
        for tail in (0.005, 0.025, 0.05, 0.1, 0.25):
            c = ranks.signrank_critical_count(n, tail)
            assert (cdf[:c] <= tail).all() and (c == cdf.size or cdf[c] > tail)


def test_critical_count_exact_branch_equals_both_former_formulas():
    # up to n = 50 (exact null) the rank is what both former implementations computed
    for n in range(1, 51):
        for conf in (0.8, 0.9, 0.95, 0.975, 0.99):
            r = ranks.signrank_critical_count(n, 1 - conf)
            assert r == old_onesample_critical_rank(n, conf)
            m = n * (n + 1) // 2
            if r >= 1:  # the former paired code clamped 0 to 1 (a mislabelled interval); now 0 = infinite end
                assert min(r, (m + 1) // 2) == old_paired_rank_bound(n, 1 - conf)


def test_critical_count_normal_branch_has_no_continuity_correction():
    # above n = 50: C - 1 is the largest c with P(T+ >= M - c) <= tail under the normal approximation without
    # continuity correction (scipy's default p-value), evaluated with the very function that makes the p-value
    for n in (51, 60, 117, 500, 3000, 12544):
        m = n * (n + 1) // 2
        for tail in (0.005, 0.025, 0.05, 0.2):
            c = ranks.signrank_critical_count(n, tail)
            assert ranks.signrank_normal_sf(m - (c - 1), n, 0.0) <= tail < ranks.signrank_normal_sf(m - c, n, 0.0)
            sigma = np.sqrt(n * (n + 1) * (2 * n + 1) / 24)
            assert abs(c - (np.floor(m / 2 - sps.norm.ppf(1 - tail) * sigma) + 1)) <= 1


@pytest.mark.parametrize("n", [60, 150])
def test_walsh_bound_above_tau_exactly_when_wilcoxon_rejects(n):
    # the bound and the p-value invert each other: for every tau between Walsh averages near the bound,
    # ci_low > tau  <=>  scipy.stats.wilcoxon(s - tau, alternative="greater").pvalue <= 1 - confidence
    # (the former bound used a continuity correction the p-value does not: they disagreed near the boundary)
    rng = np.random.default_rng(n)
    x = rng.gamma(2.0, 1.0, size=n)
    bound = ranks.walsh_lower_bound(x[None, :], 0.95)[0]
    walsh = np.sort([(x[i] + x[j]) / 2 for i in range(n) for j in range(i, n)])
    at = int(np.searchsorted(walsh, bound))
    for w in walsh[max(0, at - 6):at + 6]:
        tau = np.nextafter(w, np.inf)  # just above a Walsh average: no score or sum equals tau
        p = sps.wilcoxon(x - tau, alternative="greater").pvalue
        assert (bound > tau) == (p <= 0.05), (tau, bound, p)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_walsh_interval_infinite_when_n_cannot_reach_the_level(n):
    # 2 * 2^-n > 0.05 for n <= 5: no two-sided 95 % Walsh interval exists; the former paired code returned the
    # range of the Walsh averages, whose coverage is 75.5 % (n = 3), 87.7 % (n = 4), 93.9 % (n = 5)
    x = np.arange(1.0, n + 1.0)[None, :]
    low, high = ranks.walsh_interval(x, confidence=0.95, alternative="two-sided")
    assert low[0] == -np.inf and high[0] == np.inf
    one_low, one_high = ranks.walsh_interval(x, confidence=0.95, alternative="greater")
    assert one_high[0] == np.inf and (one_low[0] == -np.inf) == (n <= 4)
    est, lo, hi = ranks.hodges_lehmann(x[0], confidence=0.95)
    assert np.isfinite(est) and lo == -np.inf and hi == np.inf


def test_walsh_interval_coverage_at_least_nominal_small_n():
    # n = 6: the exact interval [W_(C), W_(M+1-C)] covers a symmetric centre with probability >= 95 %
    rng = np.random.default_rng(5)
    x = rng.standard_normal((20000, 6))
    low, high = ranks.walsh_interval(x, confidence=0.95, alternative="two-sided")
    assert ((low <= 0) & (0 <= high)).mean() >= 0.95 - 3 * np.sqrt(0.05 * 0.95 / 20000)


def test_signed_rank_sums_match_scipy_statistic():
    rng = np.random.default_rng(3)
    d = np.round(rng.standard_normal((40, 25)), 1)  # ties and zeros
    t_plus, nz = ranks.signed_rank_sums(d)
    for row, tp, k in zip(d, t_plus, nz, strict=True):
        assert tp == sps.wilcoxon(row, alternative="greater").statistic  # T+ of scipy.stats.wilcoxon
        assert k == (row != 0).sum()
    one = ranks.signed_rank_sums(np.array([1.0, -2.0, 3.0, 4.0, 0.0]))
    assert one == (8.0, 4)  # ranks 1, 2, 3, 4 of |d| without the zero: T+ = 1 + 3 + 4


def test_normal_approximation_is_scipys_number():
    import warnings

    rng = np.random.default_rng(4)
    for kind in range(3):
        d = [rng.standard_normal((6, 80)), np.round(rng.standard_normal((6, 120)), 1),
             rng.integers(-3, 4, (6, 300)).astype(float)][kind]  # continuous; ties; ties and many zeros
        t_plus, n_nonzero, ties, tied = ranks.signed_rank_parts(d)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = sps.wilcoxon(d, alternative="greater", axis=1)  # scipy.stats.wilcoxon, asymptotic above n = 50
        assert np.array_equal(t_plus, ref.statistic)
        assert np.array_equal(ranks.signrank_normal_sf(t_plus, n_nonzero, ties), ref.pvalue)  # bit for bit
        assert tied.tolist() == [kind > 0] * 6
    # ties by hand: |d| = 1, 1, 2 -> one group of 2: 2^3 - 2 = 6
    assert ranks.signed_rank_parts(np.array([[1.0, -1.0, 2.0, 0.0]]))[2].tolist() == [6.0]


# ---------------------------------------------------------------------------------------------------------
# Walsh order statistics: equal to brute force on every small case
# ---------------------------------------------------------------------------------------------------------
def test_selection_equals_brute_force_on_random_small_samples():
    rng = np.random.default_rng(2026)
    for trial in range(600):
        n = int(rng.integers(1, 61))
        x = random_sample(rng, n, trial % 4)
        walsh = brute_walsh_sorted(x)
        rank = int(rng.integers(1, walsh.size + 1))
        # tiny bands and samples drive the selection through many rounds, ties and single pivots
        got = ranks._select_walsh_sum(np.sort(x), rank - 1, cap=int(rng.integers(1, 6)),
                                      sample=int(rng.integers(2, 30))) / 2.0
        assert got == walsh[rank - 1], (x.tolist(), rank)


@pytest.mark.parametrize("materialise_max", [0, ranks.MATERIALISE_MAX])
def test_order_statistics_equal_brute_force_for_every_rank(materialise_max):
    rng = np.random.default_rng(7)
    for n in range(1, 61):
        x = random_sample(rng, (3, n), n % 4)
        m = n * (n + 1) // 2
        want = np.unique(np.r_[1, m, (m + 1) // 2, rng.integers(1, m + 1, 4)])
        got = ranks.walsh_order_statistics(x, want, materialise_max=materialise_max)
        for row, g in zip(x, got, strict=True):
            assert np.array_equal(g, brute_walsh_sorted(row)[want - 1])


def test_order_statistics_large_n_equal_full_sort():
    rng = np.random.default_rng(11)
    x = np.round(rng.gamma(2.0, 1.0, 1500), 2)  # M = 1.1 million, many ties
    m = x.size * (x.size + 1) // 2
    want = [1, 17, ranks.signrank_critical_count(x.size, 0.05), (m + 1) // 2, m - 3, m]
    iu = np.triu_indices(x.size)
    walsh = np.sort((x[iu[0]] + x[iu[1]]) / 2.0)
    assert np.array_equal(ranks.walsh_order_statistics(x, want), walsh[np.asarray(want) - 1])


def test_bad_ranks_raise():
    with pytest.raises(ValueError, match="1..6"):
        ranks.walsh_order_statistics(np.arange(3.0), [7])


@pytest.mark.parametrize("confidence", [0.8, 0.95, 0.99])
def test_lower_bound_equals_former_code(confidence):
    rng = np.random.default_rng(int(confidence * 100))
    for n in range(1, 61):
        x = random_sample(rng, (4, n), n % 3)
        got = ranks.walsh_lower_bound(x, confidence)
        assert np.array_equal(got, old_walsh_lower_bound(x, confidence))
    # n too small to reach the level: -inf, as before
    assert ranks.walsh_lower_bound(np.ones((2, 3)), 0.95).tolist() == [-np.inf, -np.inf]


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_hodges_lehmann_equals_former_code(alternative):
    rng = np.random.default_rng(5)
    for trial in range(300):
        n = int(rng.integers(0, 61))
        d = random_sample(rng, n, trial % 4)
        conf = (0.8, 0.9, 0.95, 0.99)[trial % 4]
        got = ranks.hodges_lehmann(d, confidence=conf, alternative=alternative)
        assert np.array_equal(got, old_hodges_lehmann(d, conf, alternative), equal_nan=True), (d.tolist(), conf)


def test_hodges_lehmann_estimate_is_median_of_walsh_averages():
    for d in (np.array([4.0]), np.array([1.0, 2.0]), np.array([3.0, -1.0, 2.0, 8.0, 8.0])):
        est, _, _ = ranks.hodges_lehmann(d)
        assert est == np.median(brute_walsh_sorted(d))


# ---------------------------------------------------------------------------------------------------------
# through the tests that use them, with NaNs (inputs that do not take part)
# ---------------------------------------------------------------------------------------------------------
def test_wilcoxon_bound_of_test_roles_with_nans_equals_former_code():
    rng = np.random.default_rng(9)
    rows = []
    expected = {}
    for head in range(40):
        n = int(rng.integers(16, 61))  # above 13: scipy's slow permutation branch for ties is not needed here
        x = random_sample(rng, n, head % 3) + 3.0
        x[rng.random(n) < 0.2] = np.nan
        finite = x[np.isfinite(x)]
        used = finite[finite != 3.0]  # scores equal to tau are dropped by the test and so by its bound
        expected[head] = (old_walsh_lower_bound(used[None, :], 0.95)[0] if used.size else np.nan) \
            if finite.size >= 2 else np.nan
        rows += [("m", "d", f"s{i:03d}", 0, head, "local", v) for i, v in enumerate(x)]
    scores = pd.DataFrame(rows, columns=["model", "dataset", "sentence_id", "layer", "head", "role", "score"])
    out = test_roles(scores, test="wilcoxon").set_index("head")
    for head, value in expected.items():
        assert out.loc[head, "ci_low"] == value or (np.isnan(value) and np.isnan(out.loc[head, "ci_low"]))


def test_paired_interval_with_nans_equals_former_code():
    rng = np.random.default_rng(10)
    frames = {"before": [], "after": []}
    expected = {}
    for head in range(20):
        n = int(rng.integers(16, 61))  # small n are covered by test_hodges_lehmann_equals_former_code
        b = random_sample(rng, n, head % 4)
        a = b + np.round(rng.standard_normal(n), 1)
        a[rng.random(n) < 0.15] = np.nan
        ok = np.isfinite(a)
        d = (a - b)[ok]
        expected[head] = old_hodges_lehmann(d[d != 0], 0.9, "two-sided") if (d != 0).any() else None
        for which, values in (("before", b), ("after", a)):
            frames[which].append(pd.DataFrame({
                "model": which, "dataset": "d", "sentence_id": [str(i) for i in range(n)], "layer": 0,
                "head": head, "role": "local", "score": values}))
    out = paired_tests(pd.concat(frames["before"]), pd.concat(frames["after"]), confidence=0.9).set_index("head")
    for head, ref in expected.items():
        if ref is None:
            continue
        assert (out.loc[head, "estimate"], out.loc[head, "ci_low"], out.loc[head, "ci_high"]) == ref


def test_signed_rank_parts_in_blocks_equal_scipy_row_by_row(monkeypatch):
    """Rows ranked in blocks (to bound memory) give each row's own T+ (scipy), tie term and zero count."""
    from scipy import stats as sps

    from headstats.stats import ranks

    rng = np.random.default_rng(7)
    d = np.round(rng.normal(0.2, 1.0, size=(11, 40)), 1)  # rounding makes ties and zeros
    monkeypatch.setattr(ranks, "RANK_BLOCK_ELEMENTS", 3 * 40)  # blocks of 3 rows: 4 blocks, the last short
    t_plus, n_nonzero, ties, tied = ranks.signed_rank_parts(d)
    for i, row in enumerate(d):
        nz = row[row != 0]
        assert t_plus[i] == pytest.approx(sps.wilcoxon(nz, alternative="greater", method="approx").statistic)
        assert n_nonzero[i] == nz.size
        _, counts = np.unique(np.abs(nz), return_counts=True)
        assert ties[i] == pytest.approx(float((counts**3 - counts).sum()))
        assert tied[i] == ((counts > 1).any() or nz.size < row.size)
