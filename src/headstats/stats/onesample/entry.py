"""The public entry point: :func:`test_roles`, every (model, dataset, role, layer, head) tested at once."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from headstats.stats.corrections import check_correction, family_labels
from headstats.stats.matrix import ScoresLike, score_matrix, tau_rows
from headstats.stats.power import add_power
from headstats.stats.onesample.spec import TEST_COLUMNS, check_test, get_test
from headstats.stats.onesample.resampling import MIN_AUTO_RESAMPLES, resolve_n_resamples
from headstats.stats.onesample.sequential import sequential_pvalues
from headstats.stats.onesample.pieces import _note_resampling_floor, add_adjusted_bounds, apply_correction, run_test
from headstats.stats.options import TestOptions, check_seed

# ----------------------------------------------------------------------------------------------------------
# the public entry point
# ----------------------------------------------------------------------------------------------------------
def test_roles(
    scores: ScoresLike,
    *,
    options: TestOptions | None = None,
    tau: float | Mapping[str, float] | None = None,
    alpha: float | None = None,
    test: str | None = None,
    correction: str | None = None,
    family: Sequence[str] | None = None,
    confidence: float | None = None,
    seed: int = 0,
    min_n: int | None = None,
    n_resamples: int | str | None = None,
    sequential: bool | None = None,
    power_target: float | None = None,
    effect_of_interest: float | None = None,
) -> pd.DataFrame:
    r"""Test every (model, dataset, role, layer, head) for ``H0: location <= tau`` vs ``H1: > tau``.

    The options are one :class:`~headstats.stats.options.TestOptions` (``options``, a protocol's
    ``statistics`` included), each of them replaceable by its keyword; a keyword left out keeps the option's
    value, and the defaults and checks are the options object's (those below).

    Parameters
    ----------
    scores : list of MeasureArray, pandas.DataFrame or ScoreMatrix
        One :class:`~headstats.measures.MeasureArray` per model and data set (``(inputs, layers, heads,
        roles)``), or the long table with columns ``model, dataset, sentence_id, layer, head, role, score``,
        or a :class:`~headstats.stats.matrix.ScoreMatrix` of either; a NaN score means that input did not
        take part for that role and is counted in ``n_missing``. All forms give the same table.
    options : TestOptions, optional
        Every option at once; the keywords below replace its fields.
    tau : float or mapping
        The threshold of the sieve bias score (3 in Pande et al. 2021), or one per role
        (``{"default": 3.0, "block": 1.5}``); recorded per row in the ``tau`` column.
    alpha : float
        Level for ``reject = p_corr <= alpha``; 0 < alpha < 1.
    test : str
        One of :func:`list_tests`: ``t`` (default), ``wilcoxon``, ``sign``, ``bootstrap``, ``permutation``,
        or a registered test.
    correction : str
        ``holm`` (default), ``bonferroni``, ``fdr_bh``, ``fdr_by``, ``none`` (the paper's code), or a
        registered correction (:func:`headstats.stats.corrections.register_correction`).
    family : tuple of str
        Columns whose values define one family of the correction: ``("model", "dataset")`` (default, all
        heads x roles of one model on one data set), ``("model", "dataset", "role")``, ``("model",)``, or
        ``()`` for one family of everything.
    confidence : float
        Level of the one-sided lower bound ``ci_low`` (``ci_high`` is +inf), marginal; ``ci_low_adj`` is the
        same bound adjusted to the correction.
    seed : int
        For ``bootstrap`` and ``permutation``; recorded in the column ``seed``.
    n_resamples : int or "auto"
        Resamples of ``bootstrap`` and ``permutation`` (recorded in the column ``n_resamples``). ``auto``
        (default) takes :func:`auto_resamples` of the largest family, so that the smallest attainable
        corrected p-value is alpha / 10; a number too small for any head to be assigned is kept, and every
        row of such a family says so in ``note`` (``headstats run`` refuses it before loading a model).
    sequential : bool
        With ``n_resamples="auto"``, ``bootstrap`` and ``permutation`` stop drawing for a head once its
        corrected decision is settled (default; :mod:`headstats.stats.onesample.sequential`): the auto B is
        then the most a head draws, the column ``n_resamples`` what it drew, and ``note`` the box of a head
        that stopped early. False, or a number of resamples given: every head draws them all.
    min_n : int
        Hypotheses with fewer participating inputs get NaN statistic and p and a note; they stay in the table.
    power_target : float
        The power of ``mde`` and ``n_for_power``.
    effect_of_interest : float
        The standardised effect (location - tau) / sd at which ``power`` and ``n_for_power`` are computed.

    Returns
    -------
    pandas.DataFrame
        One row per hypothesis with the columns of :data:`TEST_COLUMNS`, sorted by the keys.
        ``reject = p_corr <= alpha`` (as statsmodels). ``ci_low`` is the marginal bound at ``confidence``,
        ``ci_low_adj`` the bound at the level adjusted to the correction (:func:`adjusted_confidence`).
        The power columns are design power (:mod:`headstats.stats.power`): ``mde`` the standardised effect
        detected with ``power_target`` at the head's n and the level ``power_alpha``
        (:func:`next_discovery_alpha`), ``power`` and ``n_for_power`` at ``effect_of_interest``; never the
        power at the observed effect. ``bf10_two_sided`` is the two-sided JZS Bayes factor (r = 0.707) of
        the t statistic (Rouder et al. 2009) -- not a one-sided quantity.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> scores = pd.DataFrame({"model": "m", "dataset": "d", "sentence_id": [f"s{i}" for i in range(8)],
    ...                        "layer": 0, "head": 0, "role": "local", "score": np.linspace(2.0, 6.0, 8)})
    >>> t = test_roles(scores, tau=3.0)
    >>> list(t.columns[:5])
    ['model', 'dataset', 'role', 'layer', 'head']
    """
    opts = TestOptions.of(options, tau=tau, alpha=alpha, test=test, correction=correction, family=family,
                          confidence=confidence, min_n=min_n, n_resamples=n_resamples, sequential=sequential,
                          power_target=power_target,
                          effect_of_interest=effect_of_interest)
    check_seed(seed)
    test, correction, fam, alpha = check_test(opts.test), check_correction(opts.correction), tuple(opts.family), opts.alpha
    tau, confidence, min_n, n_resamples = opts.tau, opts.confidence, opts.min_n, opts.n_resamples
    mat = score_matrix(scores)
    if get_test(test).resampling:
        n_resamples = resolve_n_resamples(n_resamples, mat, family=fam, alpha=alpha, correction=correction,
                                          min_n=min_n)
    else:
        n_resamples = MIN_AUTO_RESAMPLES if n_resamples == "auto" else n_resamples
    spec = get_test(test)
    run = None
    if spec.stream is not None:  # one pass of draws, each head stopping once settled (unless told not to)
        run = sequential_pvalues(mat, test=test, taus=tau_rows(mat.keys, tau), alphas=[alpha],
                                 correction=correction, labels=family_labels(mat.keys, fam).to_numpy(),
                                 seed=seed, n_resamples=n_resamples, min_n=min_n, confidence=confidence,
                                 sequential=opts.sequential and opts.n_resamples == "auto")
    frame = run_test(mat, test=test, tau=tau, confidence=confidence, seed=seed, n_resamples=n_resamples,
                     min_n=min_n, results=run.results if run is not None else None)
    frame = apply_correction(frame, correction=correction, family=fam, alpha=alpha)
    if spec.resampling:
        _note_resampling_floor(frame, correction=correction, alpha=alpha, n_resamples=n_resamples)
    bound_of = None
    if run is not None and spec.stream_bound is not None:
        bound_of = lambda cells, level: run.lower_bound(cells, level, spec.stream_bound)  # noqa: E731
    frame = add_adjusted_bounds(frame, mat, test=test, tau=tau, correction=correction, confidence=confidence,
                                seed=seed, n_resamples=n_resamples, min_n=min_n, bound_of=bound_of)
    frame = add_power(frame, power_target=opts.power_target, effect_of_interest=opts.effect_of_interest)
    return frame.loc[:, list(TEST_COLUMNS)].reset_index(drop=True)



# pytest would collect ``test_roles`` from modules that import it by name; say it is not a test.
test_roles.__test__ = False  # type: ignore[attr-defined]
