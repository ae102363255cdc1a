"""One-sided one-sample tests of functional roles, vectorised over heads (METHODS.md section 1.4).

For every hypothesis (model, dataset, role, layer, head) with the sieve bias scores ``s_1..s_N`` of the N
inputs that took part:

    H0: location <= tau        H1: location > tau        (one-sided, upper tail)

where the location is the mean (``t``, ``skew_t``, ``bootstrap``, ``permutation``), the pseudo-median (``wilcoxon``) or
the median (``sign``). The p-values are then corrected within each declared *family* with
:func:`headstats.stats.corrections.correct_within_families`, and a head is assigned the role when
``p_corr <= alpha``.

The scores come as a list of :class:`~headstats.measures.MeasureArray` or as the long scores table
(:mod:`headstats.stats.matrix` packs either into one hypotheses x inputs matrix). The scores of all
hypotheses that have the same number N of participating inputs form one ``(k, N)`` array, and every test is
a function of that array computed along ``axis=1``. A test is a :class:`OneSampleTestSpec` in
:data:`ONE_SAMPLE_TESTS` that carries its function, whether it resamples, the location it tests and the
effect size it reports; users add one with :func:`register_test`.

The package, along its seams: :mod:`~headstats.stats.onesample.spec` (what a test is, the registry, the
columns), :mod:`~headstats.stats.onesample.builtin` (the built-in tests), :mod:`~headstats.stats.onesample.resampling`
(how many resamples a family needs), :mod:`~headstats.stats.onesample.pieces` (p-values alone, the full test,
the correction, the adjusted bounds) and :mod:`~headstats.stats.onesample.entry` (:func:`test_roles`). Every public
name is importable from ``headstats.stats.onesample``.
"""

from __future__ import annotations

from headstats.stats.corrections import family_labels, next_discovery_alpha
from headstats.stats.matrix import HYPOTHESIS_KEYS, SCORE_COLUMNS, ScoreMatrix, score_matrix
from headstats.stats.onesample.spec import (
    ALTERNATIVE,
    ONE_SAMPLE_TESTS,
    PARAMETERS,
    TEST_COLUMNS,
    OneSampleResult,
    OneSampleTest,
    OneSampleTestSpec,
    PValues,
    check_test,
    describe_tests,
    get_test,
    list_tests,
    register_test,
    unregister_test,
)
from headstats.stats.onesample.builtin import (
    bootstrap_test,
    permutation_test,
    sign_pvalues,
    sign_test,
    skew_t_pvalues,
    skew_t_test,
    t_ddof0_p_from_moments,
    t_p_from_moments,
    t_pvalues,
    t_test,
    wilcoxon_pvalues,
    wilcoxon_test,
)
from headstats.stats.onesample.resampling import (
    AUTO_RESAMPLES_MARGIN,
    MIN_AUTO_RESAMPLES,
    auto_resamples,
    family_sizes,
    resamples_needed,
    resolve_n_resamples,
)
from headstats.stats.onesample.pieces import (
    add_adjusted_bounds,
    adjusted_confidence,
    apply_correction,
    run_pvalues,
    run_test,
)
from headstats.stats.onesample.entry import test_roles

__all__ = [
    "ALTERNATIVE", "AUTO_RESAMPLES_MARGIN", "HYPOTHESIS_KEYS", "MIN_AUTO_RESAMPLES", "ONE_SAMPLE_TESTS",
    "PARAMETERS", "SCORE_COLUMNS", "TEST_COLUMNS", "OneSampleResult", "OneSampleTest", "OneSampleTestSpec",
    "PValues", "ScoreMatrix", "add_adjusted_bounds", "adjusted_confidence", "apply_correction", "auto_resamples",
    "bootstrap_test", "check_test", "describe_tests", "family_labels", "family_sizes", "get_test", "list_tests",
    "next_discovery_alpha", "permutation_test", "register_test", "resamples_needed", "resolve_n_resamples",
    "run_pvalues", "run_test", "score_matrix", "sign_pvalues", "sign_test", "skew_t_pvalues", "skew_t_test",
    "t_ddof0_p_from_moments", "t_p_from_moments", "t_pvalues", "t_test", "test_roles", "unregister_test",
    "wilcoxon_pvalues", "wilcoxon_test",
]
