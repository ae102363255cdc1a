r"""How role assignments move with tau, alpha, the test and the correction.

:func:`tau_sensitivity` counts the heads assigned each role over a grid of tau x alpha (Pande et al. 2021 fix
tau = 3 but their code tried 1 to 3.5). It packs the scores once. For a test whose p-value depends only on
the per-head mean, sd and N (its registry entry says so; the t-test,
:math:`p(\tau) = P\left(T_{N-1} \ge (\bar s - \tau)\sqrt N / s\right)`) the p-values of all taus come from
them at once; a resampling test reads one stream of draws for every tau (the bootstrap-t statistics do not
depend on tau), each head stopping once its decisions at every tau and alpha are settled
(:mod:`~headstats.stats.onesample.sequential`); other tests compute only their p-values at each tau. The corrected p-values do not depend on
alpha, so each tau is corrected once (all taus of a family in one vectorised call of the correction's row-wise
version) and compared with every alpha.

:func:`robustness` runs several tests and corrections on the same scores and says, per head and role,
whether its assignment is the same under all of them; each test computes only its p-values, once, and the
p-values of all tests are corrected together (one row per test), once per correction and family.

Both take the scores as :func:`~headstats.stats.onesample.test_roles` does: a list of
:class:`~headstats.measures.MeasureArray`, the long scores table, or a
:class:`~headstats.stats.matrix.ScoreMatrix` built once for all tables of a study.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from headstats.errors import HeadstatsError
from headstats.stats.corrections import (
    check_correction,
    correct_rows_within_families,
    reject,
)
from headstats.stats.matrix import HYPOTHESIS_KEYS, ScoresLike, score_matrix
from headstats.stats.corrections import family_labels
from headstats.stats.onesample import check_test, get_test, resolve_n_resamples, run_pvalues
from headstats.stats.onesample.sequential import MONOTONE_CORRECTIONS, sequential_pvalues
from headstats.stats.options import TestOptions, check_seed

#: Columns of :func:`tau_sensitivity`.
SENSITIVITY_COLUMNS: tuple[str, ...] = (
    "model", "dataset", "role", "tau", "alpha", "n_heads_assigned", "n_heads_tested",
)
DEFAULT_TAUS: np.ndarray = np.arange(1.0, 4.0 + 1e-9, 0.25)


def decides_near_level_by_importance(test: str, *, sequential: bool, n_resamples: int | str,
                                     correction: str = "holm") -> bool:
    """Whether :func:`tau_sensitivity` decides, for this test and these options, the cells still open after the
    plain looks by importance sampling (:mod:`~headstats.stats.onesample.tilted`) rather than by drawing
    every resample: a sequential run (``n_resamples: auto``, so at least 9,999 resamples, more than the 2,000
    plain draws before importance sampling) of a test whose stream has tilted draws, under a correction whose
    corrected p-values never fall when an uncorrected one grows (the others draw every resample)."""
    spec = get_test(check_test(test))
    if spec.stream is None or not (sequential and n_resamples == "auto") or correction not in MONOTONE_CORRECTIONS:
        return False
    probe = spec.stream(np.arange(3.0)[None, :], np.zeros((1, 1)), seed=0, n_resamples=10**6, confidence=None)
    return getattr(probe, "tilted_cells", None) is not None


def _check_grid(values: Sequence[float], name: str, *, open_unit: bool) -> np.ndarray:
    arr = np.atleast_1d(np.asarray(values, dtype=float))
    if arr.size == 0 or not np.isfinite(arr).all():
        raise HeadstatsError(f"{name} must be a non-empty list of finite numbers, got {values!r}")
    if open_unit and not ((arr > 0) & (arr < 1)).all():
        raise HeadstatsError(f"every value of {name} must lie strictly between 0 and 1, got {values!r}")
    return arr


def tau_sensitivity(
    scores: ScoresLike,
    *,
    taus: Sequence[float] = DEFAULT_TAUS,
    alphas: Sequence[float] = (0.01, 0.05, 0.1),
    options: TestOptions | None = None,
    test: str | None = None,
    correction: str | None = None,
    family: Sequence[str] | None = None,
    confidence: float | None = None,
    seed: int = 0,
    min_n: int | None = None,
    n_resamples: int | str | None = None,
    sequential: bool | None = None,
) -> pd.DataFrame:
    """Heads assigned per role for every tau and alpha.

    Parameters
    ----------
    scores : list of MeasureArray, pandas.DataFrame or ScoreMatrix
        The scores, in any form :func:`~headstats.stats.onesample.test_roles` takes.
    taus, alphas : sequence of float
        The grid (default tau = 1, 1.25, ..., 4 and alpha = 0.01, 0.05, 0.1).
    options, test, correction, family, confidence, seed, min_n, n_resamples, sequential
        As in :func:`~headstats.stats.onesample.test_roles` (one :class:`~headstats.stats.options.TestOptions`,
        each field replaceable by its keyword); the options' tau and alpha are replaced by the grid.

    Returns
    -------
    pandas.DataFrame
        Tidy, columns :data:`SENSITIVITY_COLUMNS`: one row per (model, dataset, role, tau, alpha);
        ``n_heads_tested`` counts the heads with a p-value (enough inputs), ``n_heads_assigned`` those with
        ``p_corr <= alpha``.
    """
    taus = _check_grid(taus, "taus", open_unit=False)
    alphas = _check_grid(alphas, "alphas", open_unit=True)
    opts = TestOptions.of(options, tau=float(taus[0]), alpha=float(alphas[0]), test=test, correction=correction,
                          family=family, confidence=confidence, min_n=min_n, n_resamples=n_resamples,
                          sequential=sequential)
    check_seed(seed)
    test, correction, fam = check_test(opts.test), check_correction(opts.correction), tuple(opts.family)
    confidence, min_n, n_resamples = opts.confidence, opts.min_n, opts.n_resamples
    mat = score_matrix(scores)
    g = len(mat.n)
    spec = get_test(test)
    n_resamples = resolve_n_resamples(n_resamples, mat, family=fam, alpha=float(alphas.min()),
                                      correction=correction, min_n=min_n)
    if spec.p_from_moments is not None:  # every tau from the per-head mean, sd and n at once
        mean, sd, _ = mat.moments()
        p_all = spec.p_from_moments(mean[None, :], sd[None, :], mat.n[None, :], taus[:, None])
        p_all[:, mat.n < max(min_n, 1)] = np.nan
    elif spec.stream is not None:  # one stream of draws for every tau, each head stopping once settled
        p_all = sequential_pvalues(mat, test=test, taus=np.broadcast_to(taus, (g, taus.size)), alphas=alphas,
                                   correction=correction, labels=family_labels(mat.keys, fam).to_numpy(),
                                   seed=seed, n_resamples=n_resamples, min_n=min_n, keep_fixed_b=False,
                                   sequential=opts.sequential and opts.n_resamples == "auto", importance=True).p
    else:
        p_all = np.empty((taus.size, g))
        for i, tau in enumerate(taus):
            p_all[i] = run_pvalues(mat, test=test, tau=float(tau), confidence=confidence, seed=seed,
                                   n_resamples=n_resamples, min_n=min_n)
    # correct every tau of a family at once (row-wise equal to correct_pvalues; see its tests)
    p_corr = correct_rows_within_families(p_all, family_labels(mat.keys, fam).to_numpy(), correction=correction)
    groups = mat.keys.loc[:, ["model", "dataset", "role"]].drop_duplicates().reset_index(drop=True)
    gcode = mat.keys.loc[:, ["model", "dataset", "role"]].merge(
        groups.reset_index(), on=["model", "dataset", "role"], how="left")["index"].to_numpy()
    n_groups = len(groups)
    tested = np.isfinite(p_all)
    parts = []
    for i, tau in enumerate(taus):
        n_tested = np.bincount(gcode, weights=tested[i], minlength=n_groups)
        for a in alphas:
            assigned = reject(p_corr[i], a)
            part = groups.copy()
            part["tau"] = float(tau)
            part["alpha"] = float(a)
            part["n_heads_assigned"] = np.bincount(gcode, weights=assigned, minlength=n_groups).astype(int)
            part["n_heads_tested"] = n_tested.astype(int)
            parts.append(part)
    if not parts or n_groups == 0:
        return pd.DataFrame(columns=list(SENSITIVITY_COLUMNS))
    out = pd.concat(parts, ignore_index=True)
    return out.sort_values(["model", "dataset", "role", "alpha", "tau"]).reset_index(drop=True)[
        list(SENSITIVITY_COLUMNS)
    ]


def robustness(
    scores: ScoresLike,
    *,
    tests: Sequence[str] = ("t", "wilcoxon", "sign"),
    corrections: Sequence[str] = ("holm", "bonferroni", "fdr_bh", "fdr_by"),
    options: TestOptions | None = None,
    tau: float | None = None,
    alpha: float | None = None,
    family: Sequence[str] | None = None,
    confidence: float | None = None,
    seed: int = 0,
    min_n: int | None = None,
    n_resamples: int | str | None = None,
    only_unstable: bool = False,
) -> pd.DataFrame:
    """Whether each head's assignment of each role is the same under several tests and corrections.

    Each test runs once; its p-values are then corrected with each correction. ``options`` and the keywords
    as in :func:`~headstats.stats.onesample.test_roles` (the options' test and correction are replaced by
    ``tests`` and ``corrections``).

    Returns
    -------
    pandas.DataFrame
        One row per (model, dataset, role, layer, head): the keys, one boolean column per combination named
        ``<test>_<correction>`` (e.g. ``t_holm``, ``wilcoxon_fdr_bh``; True = assigned), ``n_assigned`` (how
        many combinations assign it) and ``stable`` (all agree). With ``only_unstable=True`` only the rows
        with ``stable == False``.
    """
    tests = [check_test(t) for t in tests]
    corrections = [check_correction(c) for c in corrections]
    if not tests or not corrections:
        raise HeadstatsError("robustness needs at least one test and one correction")
    opts = TestOptions.of(options, tau=tau, alpha=alpha, family=family, confidence=confidence, min_n=min_n,
                          n_resamples=n_resamples)
    check_seed(seed)
    tau, alpha, fam, confidence = opts.tau, opts.alpha, tuple(opts.family), opts.confidence
    min_n, n_resamples = opts.min_n, opts.n_resamples
    mat = score_matrix(scores)
    n_resamples = max(resolve_n_resamples(n_resamples, mat, family=fam, alpha=alpha, correction=c, min_n=min_n)
                      for c in corrections)
    out = mat.keys.copy().loc[:, list(HYPOTHESIS_KEYS)]
    labels = family_labels(mat.keys, fam).to_numpy()
    # every test's p-values as one row each, corrected together: one call per correction and family
    p_all = np.vstack([run_pvalues(mat, test=t, tau=tau, confidence=confidence, seed=seed,
                                   n_resamples=n_resamples, min_n=min_n) for t in tests])
    assigned = {c: reject(correct_rows_within_families(p_all, labels, correction=c), alpha) for c in corrections}
    names = []
    for i, t in enumerate(tests):
        for c in corrections:
            out[f"{t}_{c}"] = assigned[c][i]
            names.append(f"{t}_{c}")
    block = out[names].to_numpy(bool)
    out["n_assigned"] = block.sum(axis=1)
    out["stable"] = block.all(axis=1) | ~block.any(axis=1)
    if only_unstable:
        out = out.loc[~out["stable"]]
    return out.reset_index(drop=True)
