"""The registry of one-sample tests: entries carry what each test means; new tests register and are used."""

from __future__ import annotations


import numpy as np
import pytest

from headstats.errors import HeadstatsError
from headstats.stats import onesample as os_
from headstats.stats.onesample import ONE_SAMPLE_TESTS, OneSampleResult, list_tests, register_test, test_roles

from onesample_cases import X, long_table


def test_registry_lists_five_tests_and_rejects_unknown():
    assert list_tests()[:5] == ["t", "wilcoxon", "sign", "bootstrap", "permutation"]
    with pytest.raises(HeadstatsError, match="t, wilcoxon, sign, bootstrap, permutation"):
        test_roles(long_table(X), test="student")



def test_register_a_new_test():
    def always_half(x, *, tau, confidence, seed, n_resamples):
        k = x.shape[0]
        return OneSampleResult(np.zeros(k), np.full(k, np.nan), np.full(k, 0.5), np.zeros(k), "none",
                               np.full(k, -np.inf))

    register_test("half", always_half)
    try:
        out = test_roles(long_table(X), test="half", correction="none")
        assert (out["p_unc"] == 0.5).all() and (out["test"] == "half").all()
        with pytest.raises(HeadstatsError, match="already registered"):
            register_test("half", always_half)
        with pytest.raises(HeadstatsError, match="identifier"):
            register_test("not a name", always_half)
    finally:
        ONE_SAMPLE_TESTS.unregister("half")



def test_registry_entries_carry_what_each_test_means():
    table = os_.describe_tests().set_index("test")
    assert table.loc[["t", "wilcoxon", "sign", "bootstrap", "permutation"], "parameter"].tolist() == [
        "mean", "pseudo-median", "median", "mean", "mean"]
    assert table.loc[["t", "wilcoxon", "sign"], "effect_size"].tolist() == ["cohen_d", "rank_biserial", "cohen_g"]
    builtins = ["t", "wilcoxon", "sign", "bootstrap", "permutation"]
    assert table.loc[builtins, "resampling"].tolist() == [False, False, False, True, True]
    # the effect size an entry declares is the one its results report
    out = {t: test_roles(long_table(X), test=t, n_resamples=99) for t in ("t", "wilcoxon", "sign", "bootstrap")}
    for name, frame in out.items():
        assert (frame["effect_size_type"] == os_.get_test(name).effect_size).all()



def test_unknown_test_raises_unknown_name_error_with_nearest():
    from headstats.errors import UnknownNameError

    with pytest.raises(UnknownNameError, match="did you mean 'wilcoxon'.*t, wilcoxon, sign, bootstrap, permutation"):
        test_roles(long_table(X), test="wilcox")
    with pytest.raises(UnknownNameError):
        os_.check_test("student")
    with pytest.raises(HeadstatsError, match="parameter must be one of mean, median, pseudo-median"):
        register_test("trimmed", os_.t_test, parameter="trimmed mean")

