"""Paired change tests against scipy (wilcoxon, ttest_rel), pingouin (rank-biserial) and hand-computed HL bounds."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from headstats.errors import HeadstatsError
from headstats.stats.corrections import correct_pvalues
from headstats.stats.paired import PAIRED_COLUMNS, hodges_lehmann, paired_tests, walsh_rank_bound


def scores_table(model: str, values: dict[tuple, np.ndarray], ids=None) -> pd.DataFrame:
    frames = []
    for (dataset, role, layer, head), x in values.items():
        sid = ids if ids is not None else [str(i) for i in range(len(x))]
        frames.append(pd.DataFrame({"model": model, "dataset": dataset, "sentence_id": sid[: len(x)],
                                    "layer": layer, "head": head, "role": role, "score": x}))
    return pd.concat(frames, ignore_index=True)


@pytest.fixture
def planted():
    """Two data sets, two roles, 2x2 heads; n=20 (exact branch) and n=120 (normal branch); one real shift."""
    rng = np.random.default_rng(1)
    before, after = {}, {}
    for dataset, n in (("small", 20), ("large", 120)):
        for role in ("local", "delimiter"):
            for layer in range(2):
                for head in range(2):
                    x = rng.gamma(2.0, 1.0, n)
                    shift = 0.8 if (layer, head, role) == (1, 0, "delimiter") else 0.0
                    before[(dataset, role, layer, head)] = x
                    after[(dataset, role, layer, head)] = x + shift + rng.normal(0, 0.5, n)
    return scores_table("base", before), scores_table("ft", after), before, after


def test_columns_fixed_and_models(planted):
    b, a, _, _ = planted
    out = paired_tests(b, a)
    assert tuple(out.columns) == PAIRED_COLUMNS
    assert len(out) == 16
    assert (out["model_before"] == "base").all() and (out["model_after"] == "ft").all()
    assert set(out["family"]) == {"dataset=small", "dataset=large"}
    assert tuple(paired_tests(b, a, test="t").columns) == PAIRED_COLUMNS


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_wilcoxon_matches_scipy(planted, alternative):
    b, a, before, after = planted
    out = paired_tests(b, a, alternative=alternative, correction="none").set_index(["dataset", "role", "layer", "head"])
    for key in before:
        ref = sps.wilcoxon(after[key], before[key], alternative=alternative)  # matches scipy.stats.wilcoxon
        row = out.loc[key]
        assert row["statistic"] == pytest.approx(ref.statistic, rel=1e-12)
        assert row["p_unc"] == pytest.approx(ref.pvalue, rel=1e-10)
        d = after[key] - before[key]
        assert row["median_diff"] == pytest.approx(np.median(d))
        assert row["mean_diff"] == pytest.approx(np.mean(d))
        assert row["median_before"] == pytest.approx(np.median(before[key]))
        assert row["n"] == len(d)
    assert (out.xs("small")["ci_method"] == "walsh_exact").all()
    assert (out.xs("large")["ci_method"] == "walsh_normal").all()
    shifted = out.loc[("large", "delimiter", 1, 0)]
    if alternative != "less":
        assert shifted["p_unc"] < 1e-6


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_t_matches_scipy_ttest_rel(planted, alternative):
    b, a, before, after = planted
    out = paired_tests(b, a, test="t", alternative=alternative, confidence=0.9).set_index(
        ["dataset", "role", "layer", "head"])
    for key in before:
        ref = sps.ttest_rel(after[key], before[key], alternative=alternative)  # matches scipy.stats.ttest_rel
        ci = ref.confidence_interval(0.9)
        row = out.loc[key]
        assert row["statistic"] == pytest.approx(ref.statistic, rel=1e-10)
        assert row["p_unc"] == pytest.approx(ref.pvalue, rel=1e-10)
        assert row["dof"] == ref.df
        assert row["ci_low"] == pytest.approx(ci.low) and row["ci_high"] == pytest.approx(ci.high)
        d = after[key] - before[key]
        assert row["effect_size"] == pytest.approx(d.mean() / d.std(ddof=1))
        assert row["estimate"] == pytest.approx(d.mean())


def test_rank_biserial_matches_pingouin(planted):
    pg = pytest.importorskip("pingouin")
    b, a, before, after = planted
    out = paired_tests(b, a).set_index(["dataset", "role", "layer", "head"])
    for key in list(before)[:6]:
        ref = pg.wilcoxon(after[key], before[key])  # pingouin's RBC, d = x - y
        assert out.loc[key, "effect_size"] == pytest.approx(float(ref["RBC"].iloc[0]))


def test_correction_within_family(planted):
    b, a, _, _ = planted
    for family, n_families in ((("dataset",), 2), (("dataset", "role"), 4), ((), 1), (("model",), 1)):
        out = paired_tests(b, a, correction="holm", family=family)
        assert out["family"].nunique() == n_families
        for _, part in out.groupby("family"):
            assert np.allclose(part["p_corr"], correct_pvalues(part["p_unc"].to_numpy(), "holm"))
        assert (out["reject"] == (out["p_corr"] < 0.05)).all()


def test_hodges_lehmann_exact_bounds_by_hand():
    d = np.array([-1.0, 0.5, 2.0, 3.0, 4.5, 6.0, 7.5, 9.0])
    n = d.size
    walsh = np.sort([(d[i] + d[j]) / 2 for i in range(n) for j in range(i, n)])
    # the exact null distribution of T+ for n=8 by enumeration of all 2^8 sign patterns
    sums = np.array([sum(k + 1 for k in range(n) if mask >> k & 1) for mask in range(2**n)])
    tail = 0.025
    c = max(c for c in range(1, len(walsh)) if np.mean(sums <= c - 1) <= tail)
    assert walsh_rank_bound(n, tail) == c
    est, low, high = hodges_lehmann(d, confidence=0.95)
    assert est == pytest.approx(np.median(walsh))
    assert low == walsh[c - 1] and high == walsh[len(walsh) - c]
    # coverage of the exact interval is at least the confidence
    assert 1 - 2 * np.mean(sums <= c - 1) >= 0.95
    est1, low1, high1 = hodges_lehmann(d, confidence=0.95, alternative="greater")
    assert high1 == np.inf and low1 >= low


def test_hodges_lehmann_normal_bound_close_to_exact():
    # at n = 50 both branches are computable: the normal rank bound is within one rank of the exact one
    from headstats.stats import paired as mod

    exact = walsh_rank_bound(50, 0.025)
    sigma = np.sqrt(50 * 51 * 101 / 24)
    normal = int(np.floor(50 * 51 / 4 - sps.norm.ppf(0.975) * sigma + 0.5))
    assert abs(exact - normal) <= 1
    assert mod.EXACT_CI_MAX_N == 50


def test_pairing_by_sentence_id_unpaired_and_nan():
    x = np.arange(1.0, 11.0)
    before = scores_table("base", {("d", "local", 0, 0): x}, ids=[f"s{i}" for i in range(10)])
    # after: shuffled order, one input missing, one extra input, one NaN
    ids = [f"s{i}" for i in range(10)][::-1]
    y = (x + 1.0)[::-1].copy()
    after = scores_table("ft", {("d", "local", 0, 0): y[:9]}, ids=ids[:9])  # s0 missing
    after = pd.concat([after, after.iloc[[0]].assign(sentence_id="extra")], ignore_index=True)
    after.loc[after["sentence_id"] == "s5", "score"] = np.nan
    out = paired_tests(before, after).iloc[0]
    assert out["n_unpaired"] == 2 and out["n_missing"] == 1 and out["n"] == 8
    assert out["median_diff"] == 1.0 and out["n_zero"] == 0
    ref = sps.wilcoxon(np.full(8, 1.0) + 0.0, np.zeros(8))
    assert out["p_unc"] == pytest.approx(ref.pvalue)


def test_all_nan_and_too_few_pairs_stay_in_table():
    before = scores_table("base", {("d", "r", 0, 0): np.array([np.nan, np.nan]), ("d", "r", 0, 1): np.array([1.0, 2.0, 3.0])})
    after = scores_table("ft", {("d", "r", 0, 0): np.array([1.0, 2.0]), ("d", "r", 0, 1): np.array([2.0, 2.5, 4.0])})
    out = paired_tests(before, after).set_index("head")
    assert out.loc[0, "n"] == 0 and np.isnan(out.loc[0, "p_unc"]) and not out.loc[0, "reject"]
    assert out.loc[1, "n"] == 3 and np.isfinite(out.loc[1, "p_unc"])
    assert np.isnan(out.loc[0, "p_corr"]) and out.loc[1, "p_corr"] == out.loc[1, "p_unc"]  # NaN left out of family


def test_identical_scores_give_no_test():
    x = np.linspace(1, 2, 12)
    out = paired_tests(scores_table("a", {("d", "r", 0, 0): x}), scores_table("b", {("d", "r", 0, 0): x})).iloc[0]
    assert out["n_zero"] == 12 and np.isnan(out["p_unc"]) and out["median_diff"] == 0


def test_bad_arguments():
    t = scores_table("a", {("d", "r", 0, 0): np.ones(3)})
    with pytest.raises(HeadstatsError, match="unknown paired test"):
        paired_tests(t, t.assign(model="b"), test="sign")
    with pytest.raises(HeadstatsError, match="alternative"):
        paired_tests(t, t.assign(model="b"), alternative="up")
    with pytest.raises(HeadstatsError, match="unknown correction"):
        paired_tests(t, t.assign(model="b"), correction="sidak")
    with pytest.raises(HeadstatsError, match="family"):
        paired_tests(t, t.assign(model="b"), family=("head",))
    with pytest.raises(HeadstatsError, match="exactly one model"):
        paired_tests(pd.concat([t, t.assign(model="c")]), t.assign(model="b"))
    with pytest.raises(HeadstatsError, match="repeated"):
        paired_tests(pd.concat([t, t]), t.assign(model="b"))


def test_paired_registry_entries_and_unknown_names():
    from headstats.errors import UnknownNameError
    from headstats.stats.paired import get_paired_test, list_paired_tests

    assert list_paired_tests()[:2] == ["wilcoxon", "t"]
    assert get_paired_test("wilcoxon").parameter == "pseudo-median"
    assert (get_paired_test("t").parameter, get_paired_test("t").effect_size) == ("mean", "cohen_dz")
    t = scores_table("a", {("d", "r", 0, 0): np.ones(3)})
    with pytest.raises(UnknownNameError, match="unknown paired test 'wilcox'; did you mean 'wilcoxon'"):
        paired_tests(t, t.assign(model="b"), test="wilcox")


def test_a_registered_paired_test_is_used(planted):
    from headstats.stats.paired import PAIRED_TESTS, register_paired_test

    def sign(d, *, alternative, confidence):
        nz = d[d != 0]
        out = {"statistic": np.nan, "dof": np.nan, "p_unc": np.nan, "estimate": np.nan, "ci_low": np.nan,
               "ci_high": np.nan, "effect_size": np.nan, "ci_method": "none", "effect_size_type": "cohen_g"}
        if nz.size:
            k = int((nz > 0).sum())
            out.update(statistic=float(k), p_unc=sps.binomtest(k, nz.size, 0.5, alternative=alternative).pvalue,
                       estimate=float(np.median(d)), effect_size=k / nz.size - 0.5)
        return out

    register_paired_test("sign", sign, parameter="median", effect_size="cohen_g")
    try:
        b, a, before, after = planted
        out = paired_tests(b, a, test="sign", correction="none").set_index(["dataset", "role", "layer", "head"])
        for key in list(before)[:4]:
            d = after[key] - before[key]
            ref = sps.binomtest(int((d > 0).sum()), int((d != 0).sum()), 0.5).pvalue  # matches scipy.stats.binomtest
            assert out.loc[key, "p_unc"] == pytest.approx(ref) and out.loc[key, "test"] == "sign"
    finally:
        PAIRED_TESTS.unregister("sign")


def test_infinite_scores_refused_like_the_one_sample_tests():
    # formerly dropped silently as if the input had not taken part; the one-sample tests refuse them
    from headstats.stats.onesample import test_roles

    x = np.arange(1.0, 11.0)
    before = scores_table("base", {("d", "local", 0, 0): x})
    after = scores_table("ft", {("d", "local", 0, 0): np.where(x == 4.0, np.inf, x + 1)})
    with pytest.raises(HeadstatsError, match="infinite"):
        paired_tests(before, after)
    with pytest.raises(HeadstatsError, match="infinite"):
        test_roles(after)


@pytest.mark.parametrize("n", [3, 4, 5])
def test_small_n_hodges_lehmann_interval_is_not_a_mislabelled_range(n):
    # n <= 5 cannot reach a two-sided 95 % Walsh interval; the former code returned the range of the Walsh
    # averages (coverage 75.5 % at n = 3) labelled 95 %; now both ends are infinite, as the one-sample bound
    rng = np.random.default_rng(n)
    b = rng.normal(size=n)
    before = scores_table("base", {("d", "local", 0, 0): b})
    after = scores_table("ft", {("d", "local", 0, 0): b + 1.0 + rng.normal(size=n)})
    row = paired_tests(before, after, min_n=2).iloc[0]
    assert row["ci_low"] == -np.inf and row["ci_high"] == np.inf
    assert np.isfinite(row["estimate"])
