r"""Planted scores whose right answer is known, and a simulation of the error rates that headstats controls.

:func:`plant` / :func:`planted_scores` write a long scores table (the contract of
:func:`headstats.stats.onesample.test_roles`) in which some heads sit *exactly at tau* (H0 true, on its
boundary, where a level-alpha test rejects with probability alpha) and the others *clearly above*
(``tau + effect * sd``). Other modules' tests use them as fixtures.

:func:`simulate_error_rates` replicates such a family many times (vectorised over heads and replications)
and estimates, per test and correction,

* FWER :math:`= P(V \ge 1)` (Holm, Bonferroni control it at alpha),
* FDR :math:`= E[V / \max(R, 1)]` (Benjamini-Hochberg under independence/PRDS, Benjamini-Yekutieli under
  any dependence control it at alpha),
* power :math:`= E[S / m_1]`, the average share of H1 heads assigned,

with V false and S true assignments among R, and Monte Carlo standard errors
:math:`\sqrt{\hat\theta(1 - \hat\theta)/B}` (FWER) or the sample sd over replications divided by
:math:`\sqrt B` (FDR, power).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from headstats.errors import HeadstatsError
from headstats.stats.corrections import check_correction, correct_pvalues_rows, get_correction, reject
from headstats.stats.onesample import check_test, get_test

DISTRIBUTIONS: tuple[str, ...] = ("normal", "gamma", "lognormal")
#: Columns of :func:`simulate_error_rates`.
SIMULATION_COLUMNS: tuple[str, ...] = (
    "test", "correction", "controls", "alpha", "error_rate", "error_rate_se", "fwer", "fwer_se", "fdr",
    "fdr_se", "power", "power_se", "n_replications", "m_null", "m_alt", "n_sentences", "effect", "sd",
    "distribution", "seed",
)
#: A correction's ``kind`` -> the ``controls`` column.
_CONTROLS = {"fwer": "FWER", "fdr": "FDR", "none": "none"}


def draw(
    rng: np.random.Generator, mean: np.ndarray, *, sd: float, size: tuple[int, ...], distribution: str
) -> np.ndarray:
    r"""Scores with the given means (broadcast over the last axis) and standard deviation ``sd``.

    ``normal``: :math:`\mu + \sigma Z`. ``gamma``: shape :math:`(\mu/\sigma)^2`, scale :math:`\sigma^2/\mu`
    (positive and right-skewed, like bias scores). ``lognormal``: :math:`\exp(m + vZ)` with
    :math:`v^2 = \log(1 + \sigma^2/\mu^2)`, :math:`m = \log\mu - v^2/2`. All have mean exactly :math:`\mu`.
    """
    mean = np.asarray(mean, dtype=float)
    if distribution == "normal":
        return mean[..., None] + sd * rng.standard_normal(size)
    if np.any(mean <= 0):
        raise HeadstatsError(f"the {distribution} distribution needs positive means, got min {mean.min()}")
    if distribution == "gamma":
        shape = (mean / sd) ** 2
        return rng.gamma(np.broadcast_to(shape[..., None], size), np.broadcast_to((sd**2 / mean)[..., None], size))
    if distribution == "lognormal":
        v2 = np.log1p(sd**2 / mean**2)
        m = np.log(mean) - v2 / 2
        return np.exp(m[..., None] + np.sqrt(v2)[..., None] * rng.standard_normal(size))
    raise HeadstatsError(f"unknown distribution {distribution!r}; choose one of {', '.join(DISTRIBUTIONS)}")


@dataclass(frozen=True)
class Planted:
    """A planted scores table and its truth.

    Attributes
    ----------
    scores : pandas.DataFrame
        ``model, dataset, sentence_id, layer, head, role, score`` (NaN where an input does not take part).
    truth : pandas.DataFrame
        One row per (model, dataset, role, layer, head): ``true_mean`` and ``is_alternative`` (H1 true).
    """

    scores: pd.DataFrame
    truth: pd.DataFrame


def plant(
    *,
    n_layers: int = 2,
    n_heads: int = 4,
    roles: Sequence[str] = ("local", "delimiter"),
    n_sentences: int = 40,
    tau: float = 3.0,
    effect: float = 1.5,
    sd: float = 1.0,
    frac_alternative: float = 0.25,
    alternative_heads: Iterable[tuple[str, int, int]] | None = None,
    distribution: str = "normal",
    missing: float = 0.0,
    seed: int = 0,
    model: str = "planted",
    dataset: str = "planted",
) -> Planted:
    r"""Plant per-sentence scores: H0 heads with mean exactly ``tau``, H1 heads with ``tau + effect * sd``.

    Parameters
    ----------
    n_layers, n_heads, roles, n_sentences
        Shape of the table: ``len(roles) * n_layers * n_heads`` hypotheses of ``n_sentences`` inputs.
    tau, effect, sd
        H1 heads have mean :math:`\tau + \text{effect}\cdot\text{sd}` (Cohen's d = ``effect``).
    frac_alternative : float
        Share of hypotheses that are H1, picked with the seed (ignored if ``alternative_heads`` is given).
    alternative_heads : iterable of (role, layer, head), optional
        Exactly these hypotheses are H1.
    distribution : {"normal", "gamma", "lognormal"}
        See :func:`draw`.
    missing : float
        Share of sentences that do not take part for each role (their score is NaN for every head of it).
    seed : int
        Seed of :func:`numpy.random.default_rng`.
    """
    if distribution not in DISTRIBUTIONS:
        raise HeadstatsError(f"unknown distribution {distribution!r}; choose one of {', '.join(DISTRIBUTIONS)}")
    if not 0 <= missing < 1:
        raise HeadstatsError(f"missing must be in [0, 1), got {missing!r}")
    rng = np.random.default_rng(seed)
    roles = list(roles)
    hyps = [(r, layer, head) for r in roles for layer in range(n_layers) for head in range(n_heads)]
    m = len(hyps)
    if alternative_heads is not None:
        alt_set = {(str(r), int(la), int(h)) for r, la, h in alternative_heads}
        is_alt = np.array([h in alt_set for h in hyps])
    else:
        is_alt = np.zeros(m, bool)
        is_alt[rng.permutation(m)[: int(round(frac_alternative * m))]] = True
    true_mean = np.where(is_alt, tau + effect * sd, tau)
    x = draw(rng, true_mean, sd=sd, size=(m, n_sentences), distribution=distribution)
    if missing > 0:
        for i in range(len(roles)):
            drop = rng.random(n_sentences) < missing
            rows = slice(i * n_layers * n_heads, (i + 1) * n_layers * n_heads)
            x[rows, drop] = np.nan
    role_col = np.repeat([h[0] for h in hyps], n_sentences)
    scores = pd.DataFrame({
        "model": model,
        "dataset": dataset,
        "sentence_id": np.tile(np.arange(n_sentences), m),
        "layer": np.repeat([h[1] for h in hyps], n_sentences),
        "head": np.repeat([h[2] for h in hyps], n_sentences),
        "role": role_col,
        "score": x.ravel(),
    })
    truth = pd.DataFrame({
        "model": model, "dataset": dataset,
        "role": [h[0] for h in hyps], "layer": [h[1] for h in hyps], "head": [h[2] for h in hyps],
        "true_mean": true_mean, "is_alternative": is_alt,
    }).sort_values(["model", "dataset", "role", "layer", "head"]).reset_index(drop=True)
    return Planted(scores=scores, truth=truth)


def planted_scores(**kwargs) -> pd.DataFrame:
    """The scores table of :func:`plant` (same keyword arguments), for tests that need only the scores."""
    return plant(**kwargs).scores


def _mean_se(x: np.ndarray) -> tuple[float, float]:
    """Mean over replications and its Monte Carlo standard error ``sd / sqrt(B)``."""
    se = float(x.std(ddof=1) / np.sqrt(x.size)) if x.size > 1 else float("nan")
    return float(x.mean()), se


def simulate_error_rates(
    *,
    tests: Sequence[str] = ("t", "wilcoxon", "sign"),
    corrections: Sequence[str] = ("holm", "bonferroni", "fdr_bh", "fdr_by", "none"),
    n_replications: int = 2000,
    m_null: int = 60,
    m_alt: int = 12,
    n_sentences: int = 30,
    effect: float = 0.8,
    sd: float = 1.0,
    tau: float = 3.0,
    alpha: float = 0.05,
    distribution: str = "normal",
    seed: int = 0,
    n_resamples: int = 999,
) -> pd.DataFrame:
    r"""Estimate FWER, FDR and power of each test x correction on planted families.

    Each replication is one family of ``m_null`` heads with mean exactly tau and ``m_alt`` heads with mean
    ``tau + effect * sd``, each with ``n_sentences`` independent scores from ``distribution``. The same
    registered test functions as :func:`~headstats.stats.onesample.test_roles` are used, and
    :func:`~headstats.stats.corrections.correct_pvalues_rows` (row-wise equal to ``correct_pvalues``, which
    calls statsmodels; its Holm runs ``gc.collect()`` on every call, too slow for thousands of families);
    a head is assigned when ``p_corr <= alpha``.
    Analytic tests run on all replications at once (a ``(B (m_0 + m_1), N)`` matrix); resampling tests run
    replication by replication with seed ``seed + b``.

    Returns
    -------
    pandas.DataFrame
        One row per (test, correction), columns :data:`SIMULATION_COLUMNS`. ``error_rate`` is the rate the
        correction controls (``fwer`` for holm/bonferroni and none, ``fdr`` for fdr_bh/fdr_by), with its
        Monte Carlo standard error ``error_rate_se``.
    """
    for t in tests:
        check_test(t)
    for c in corrections:
        check_correction(c)
    if n_replications < 1 or m_null < 0 or m_alt < 0 or m_null + m_alt < 1:
        raise HeadstatsError("need n_replications >= 1 and at least one head (m_null + m_alt >= 1)")
    m = m_null + m_alt
    rng = np.random.default_rng(seed)
    means = np.r_[np.full(m_null, tau), np.full(m_alt, tau + effect * sd)]
    x = draw(rng, np.tile(means, n_replications), sd=sd, size=(n_replications * m, n_sentences),
             distribution=distribution)
    is_alt = np.r_[np.zeros(m_null, bool), np.ones(m_alt, bool)]
    rows = []
    for test in tests:
        spec = get_test(test)
        fn = spec.fn
        if spec.resampling:
            p = np.empty(n_replications * m)
            for b in range(n_replications):
                block = slice(b * m, (b + 1) * m)
                p[block] = fn(x[block], tau=tau, confidence=0.95, seed=seed + b, n_resamples=n_resamples).p_unc
        else:
            p = fn(x, tau=tau, confidence=0.95, seed=seed, n_resamples=n_resamples).p_unc
        p = p.reshape(n_replications, m)
        for corr in corrections:
            pc = correct_pvalues_rows(p, method=corr)
            rej = reject(pc, alpha)
            v = rej[:, ~is_alt].sum(axis=1)
            s = rej[:, is_alt].sum(axis=1)
            r = v + s
            any_false = (v > 0).astype(float)
            fdp = v / np.maximum(r, 1)
            share = s / m_alt if m_alt else np.full(n_replications, np.nan)
            fwer, fwer_se = _mean_se(any_false)
            fdr, fdr_se = _mean_se(fdp)
            pw, pw_se = _mean_se(share)
            controls = _CONTROLS[get_correction(corr).kind]
            err, err_se = (fdr, fdr_se) if controls == "FDR" else (fwer, fwer_se)
            rows.append({
                "test": test, "correction": corr, "controls": controls, "alpha": alpha,
                "error_rate": err, "error_rate_se": err_se, "fwer": fwer, "fwer_se": fwer_se,
                "fdr": fdr, "fdr_se": fdr_se, "power": pw, "power_se": pw_se,
                "n_replications": n_replications, "m_null": m_null, "m_alt": m_alt,
                "n_sentences": n_sentences, "effect": effect, "sd": sd, "distribution": distribution,
                "seed": seed,
            })
    return pd.DataFrame(rows, columns=list(SIMULATION_COLUMNS))
