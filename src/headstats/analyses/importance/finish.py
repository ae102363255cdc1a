r"""The importance analysis' finish step: tests over seeds, the pruning curve, the share of heads removable.

The ``importance`` analysis (:mod:`headstats.analyses.importance.collect`) gives, per model, data set, input and head,
the loss change under ablation (``delta_loss``) and Michel et al.'s gradient; its declared hypothesis is tested
per head over inputs by the study (``importance_tests``: the protocol's one-sided test of H0 mean delta_loss
<= 0, corrected over heads). :func:`finish_importance` adds:

- ``importance_seeds``: with fine-tuning seeds as replicates (a replicate group of the protocol), per head the
  k per-seed mean loss changes :math:`m_s` tested one-sided (H1: mean over seeds > 0) with limma's moderated t
  (:func:`headstats.stats.seeds.moderated_t_over_seeds`, the seed test of the fine-tuning comparison), corrected
  over the group's heads with the protocol's correction;
- ``importance_pruning``: per model, data set and share s of heads removed (cross-fitted order; see the analysis),
  the mean accuracy, loss and accuracy drop :math:`d_i(s) = c_i(0) - c_i(s)` over inputs with t intervals
  (``unit = inputs``), and for replicate groups the same over the seeds' means (``unit = seeds``);
- ``importance_removable``: Michel et al.'s question, the largest share removable within the stated loss
  (``prune_tolerance``): the largest s such that every share up to it has mean drop <= tolerance
  (``removable_share``), and the same with the upper confidence bound of the drop (``removable_share_confident``),
  with a percentile bootstrap interval over inputs (``analysis_options.importance.n_bootstrap`` resamples, the
  run's seed); for replicate groups the mean over seeds with a two-stage percentile bootstrap over seeds and
  inputs (:func:`removable_table`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

import numpy as np
import pandas as pd
from scipy import stats as sps

from headstats.analyses.importance.options import ImportanceOptions
from headstats.analyses.importance.tables import (IMPORTANCE, IMPORTANCE_PRUNING, IMPORTANCE_PRUNING_INPUTS,
                                                  IMPORTANCE_REMOVABLE, IMPORTANCE_SEEDS)
from headstats.stats.corrections import correct_pvalues, reject
from headstats.stats.options import TestOptions
from headstats.stats.seeds import moderated_t_over_seeds
from headstats.tables import RunTables

__all__ = ["PRUNING_COLUMNS", "REMOVABLE_COLUMNS", "SEED_COLUMNS", "finish_importance", "pruning_curve",
           "removable_share", "seed_tests"]

SEED_COLUMNS = ["model", "dataset", "layer", "head", "n_seeds", "mean", "sd", "ci_low", "ci_high", "confidence",
                "statistic", "dof", "test", "alternative", "p_unc", "p_corr", "correction", "alpha", "reject",
                "members"]
PRUNING_COLUMNS = ["model", "dataset", "unit", "share", "n_removed", "n", "accuracy", "accuracy_ci_low",
                   "accuracy_ci_high", "loss", "loss_ci_low", "loss_ci_high", "drop", "drop_ci_low",
                   "drop_ci_high", "confidence", "ablation", "prune_by"]
REMOVABLE_COLUMNS = ["model", "dataset", "unit", "n", "tolerance", "removable_share", "ci_low", "ci_high",
                     "removable_share_confident", "confidence", "interval", "ablation", "prune_by"]


def _t_interval(values: np.ndarray, confidence: float) -> tuple[float, float, float, int]:
    """Mean and two-sided t interval over axis 0 (ddof 1); NaN interval below two values."""
    v = np.asarray(values, float)
    v = v[np.isfinite(v)]
    n = v.size
    if n == 0:
        return math.nan, math.nan, math.nan, 0
    mean = float(v.mean())
    if n < 2:
        return mean, math.nan, math.nan, n
    half = float(sps.t.ppf(0.5 + confidence / 2, n - 1) * v.std(ddof=1) / math.sqrt(n))
    return mean, mean - half, mean + half, n


def seed_tests(heads: pd.DataFrame, groups: Mapping[str, list[str]], *, correction: str = "holm",
               alpha: float = 0.05, confidence: float = 0.95) -> pd.DataFrame:
    """Per replicate group, data set and head: is the mean loss change under ablation > 0 over seeds?

    The moderated t of limma over the k members' per-head means ``mean_delta_loss`` (one-sided, greater),
    corrected over the group's heads per data set. Columns :data:`SEED_COLUMNS`.
    """
    rows = []
    task = heads[heads["importance_measure"] == "delta_loss"]
    for group, members in groups.items():
        part = task[task["model"].isin(members)]
        for dataset, sub in part.groupby("dataset", sort=False):
            wide = sub.pivot_table(index="model", columns=["layer", "head"], values="mean_delta_loss")
            if len(wide) < 2:
                continue
            res = moderated_t_over_seeds(wide.to_numpy(float), mu=0.0, alternative="greater",
                                         confidence=confidence)
            p = np.asarray(res["p"], float)
            p_corr = correct_pvalues(p, correction, alpha)
            for j, (layer, head) in enumerate(wide.columns):
                rows.append({"model": group, "dataset": dataset, "layer": int(layer), "head": int(head),
                             "n_seeds": int(res["n_seeds"][j]), "mean": res["mean"][j], "sd": res["sd"][j],
                             "ci_low": res["ci_low"][j], "ci_high": res["ci_high"][j], "confidence": confidence,
                             "statistic": res["statistic"][j], "dof": res["dof"][j], "test": "moderated_t",
                             "alternative": "greater", "p_unc": p[j], "p_corr": p_corr[j],
                             "correction": correction, "alpha": alpha,
                             "reject": bool(reject(p_corr[j], alpha)),
                             "members": "+".join(wide.index.astype(str))})
    return pd.DataFrame(rows, columns=SEED_COLUMNS)


def pruning_curve(inputs: pd.DataFrame, groups: Mapping[str, list[str]] | None = None, *,
                  confidence: float = 0.95) -> pd.DataFrame:
    """The pruning curve with intervals over inputs (per model) and over seeds (per replicate group).

    ``inputs``: ``importance_pruning_inputs`` (``model, dataset, sentence_id, share, n_removed, loss, correct``,
    ``ablation, prune_by``). The drop is paired per input, :math:`d_i(s) = c_i(0) - c_i(s)`. Over seeds, each
    member's mean over inputs is one replicate. Columns :data:`PRUNING_COLUMNS`.
    """
    rows = []
    for (model, dataset), part in inputs.groupby(["model", "dataset"], sort=False):
        wide_c = part.pivot_table(index="sentence_id", columns="share", values="correct")
        wide_l = part.pivot_table(index="sentence_id", columns="share", values="loss")
        removed = part.groupby("share")["n_removed"].first()
        for share in wide_c.columns:
            acc = _t_interval(wide_c[share].to_numpy(), confidence)
            loss = _t_interval(wide_l[share].to_numpy(), confidence)
            drop = _t_interval((wide_c[0.0] - wide_c[share]).to_numpy(), confidence)
            rows.append({"model": model, "dataset": dataset, "unit": "inputs", "share": float(share),
                         "n_removed": int(removed[share]), "n": acc[3], "accuracy": acc[0],
                         "accuracy_ci_low": acc[1], "accuracy_ci_high": acc[2], "loss": loss[0],
                         "loss_ci_low": loss[1], "loss_ci_high": loss[2], "drop": drop[0], "drop_ci_low": drop[1],
                         "drop_ci_high": drop[2], "confidence": confidence, "ablation": part["ablation"].iat[0],
                         "prune_by": part["prune_by"].iat[0]})
    curve = pd.DataFrame(rows, columns=PRUNING_COLUMNS)
    seeds = []
    for group, members in (groups or {}).items():
        part = curve[curve["model"].isin(members)]
        for (dataset, share), sub in part.groupby(["dataset", "share"], sort=False):
            if len(sub) < 2:
                continue
            acc, loss, drop = (_t_interval(sub[c].to_numpy(), confidence) for c in ("accuracy", "loss", "drop"))
            acc = (acc[0], *np.clip(acc[1:3], 0.0, 1.0), acc[3])  # an accuracy lies in [0, 1]: cut the t interval
            seeds.append({"model": group, "dataset": dataset, "unit": "seeds", "share": share,
                          "n_removed": int(sub["n_removed"].iat[0]), "n": acc[3], "accuracy": acc[0],
                          "accuracy_ci_low": acc[1], "accuracy_ci_high": acc[2], "loss": loss[0],
                          "loss_ci_low": loss[1], "loss_ci_high": loss[2], "drop": drop[0], "drop_ci_low": drop[1],
                          "drop_ci_high": drop[2], "confidence": confidence, "ablation": sub["ablation"].iat[0],
                          "prune_by": sub["prune_by"].iat[0]})
    return pd.concat([curve, pd.DataFrame(seeds, columns=PRUNING_COLUMNS)], ignore_index=True) if seeds else curve


def removable_share(shares: np.ndarray, drops: np.ndarray, tolerance: float) -> float:
    """The largest share s such that every share <= s has ``drop <= tolerance`` (0 when the first fails;
    shares sorted ascending, the first being 0)."""
    best = 0.0
    for share, drop in sorted(zip(np.asarray(shares, float), np.asarray(drops, float))):
        if not (np.isfinite(drop) and drop <= tolerance + 1e-12):
            break
        best = share
    return float(best)


def _removable_rows(shares: np.ndarray, drops: np.ndarray, tolerance: float) -> np.ndarray:
    """:func:`removable_share` of every row of ``drops`` (replicates x shares, ``shares`` ascending)."""
    within = np.isfinite(drops) & (drops <= tolerance + 1e-12)
    leading = np.cumprod(within, axis=1).sum(axis=1)  # how many shares, from the first, stay within
    return np.where(leading > 0, np.asarray(shares, float)[np.maximum(leading - 1, 0)], 0.0)


def drop_matrix(inputs: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """``(shares, drops)`` of one model and data set: the shares tried (ascending) and the per-input accuracy drop
    :math:`c_i(0) - c_i(s)` (inputs x shares), inputs missing a share left out."""
    wide = inputs.pivot_table(index="sentence_id", columns="share", values="correct").sort_index(axis=1)
    drops = (wide[[0.0]].to_numpy(float) - wide.to_numpy(float))
    return wide.columns.to_numpy(float), drops[np.isfinite(drops).all(axis=1)]


def removable_draws(shares: np.ndarray, drops: np.ndarray, tolerance: float, *, n_resamples: int,
                    rng: np.random.Generator) -> np.ndarray:
    """``n_resamples`` bootstrap replicates of the removable share over inputs: the inputs (rows of ``drops``)
    drawn with replacement (multinomial counts), the mean drop per share recomputed, then
    :func:`removable_share` of that curve."""
    n = drops.shape[0]
    counts = rng.multinomial(n, np.full(n, 1.0 / n), size=int(n_resamples))
    return _removable_rows(shares, counts @ drops / n, tolerance)


def percentile_interval(draws: np.ndarray, confidence: float) -> tuple[float, float]:
    """The percentile interval of bootstrap replicates (the inverse of their empirical CDF at (1 - confidence) / 2
    and (1 + confidence) / 2; a discrete statistic's interval ends on values it takes)."""
    tail = (1 - confidence) / 2
    low, high = np.quantile(draws, [tail, 1 - tail], method="inverted_cdf")
    return float(low), float(high)


def removable_table(inputs: pd.DataFrame, groups: Mapping[str, list[str]] | None, *, tolerance: float,
                    curve: pd.DataFrame | None = None, confidence: float = 0.95, n_resamples: int = 1999,
                    seed: int = 0) -> pd.DataFrame:
    r"""The largest share of heads removable within ``tolerance``, with a percentile bootstrap interval.

    Per model and data set: :func:`removable_share` of the mean drop per share (and, ``removable_share_confident``,
    of the drop's upper t bound from ``curve``, :func:`pruning_curve` of ``inputs``), with the percentile interval
    of ``n_resamples`` bootstrap replicates over inputs (:func:`removable_draws`; the inputs are the unit: each
    keeps its drops at every share). Per replicate group: the mean of the members' shares, with a two-stage
    percentile bootstrap over seeds and inputs: each replicate draws k members with replacement and, for each,
    one of its bootstrap replicates over inputs (independent draws for a member drawn twice), so that seeds that
    agree still carry their inputs' uncertainty (a t interval over k equal shares had zero width). Seeded with
    ``seed``. Columns :data:`REMOVABLE_COLUMNS`; ``interval`` names the method.
    """
    curve = pruning_curve(inputs, confidence=confidence) if curve is None else curve
    per_model = curve[curve["unit"] == "inputs"]
    rng = np.random.default_rng([int(seed), 25])
    draws: dict[tuple[str, str], np.ndarray] = {}
    rows = []
    for (model, dataset), part in inputs.groupby(["model", "dataset"], sort=False):
        shares, drops = drop_matrix(part)
        line = per_model[(per_model["model"] == model) & (per_model["dataset"] == dataset)]
        draws[(model, dataset)] = reps = removable_draws(shares, drops, tolerance, n_resamples=n_resamples, rng=rng)
        low, high = percentile_interval(reps, confidence)
        rows.append({"model": model, "dataset": dataset, "unit": "inputs", "n": int(drops.shape[0]),
                     "tolerance": tolerance, "removable_share": removable_share(shares, drops.mean(axis=0), tolerance),
                     "ci_low": low, "ci_high": high,
                     "removable_share_confident": removable_share(line["share"], line["drop_ci_high"], tolerance),
                     "confidence": confidence,
                     "interval": f"percentile bootstrap over inputs ({n_resamples} resamples)",
                     "ablation": part["ablation"].iat[0], "prune_by": part["prune_by"].iat[0]})
    table = pd.DataFrame(rows, columns=REMOVABLE_COLUMNS)
    extra = []
    for group, members in (groups or {}).items():
        for dataset, sub in table[table["model"].isin(members)].groupby("dataset", sort=False):
            if len(sub) < 2:
                continue
            reps = np.stack([draws[(m, dataset)] for m in sub["model"]])  # members x resamples
            k = reps.shape[0]
            pick = rng.integers(0, k, size=(n_resamples, k)), rng.integers(0, n_resamples, size=(n_resamples, k))
            low, high = percentile_interval(reps[pick].mean(axis=1), confidence)
            extra.append({"model": group, "dataset": dataset, "unit": "seeds", "n": k, "tolerance": tolerance,
                          "removable_share": float(sub["removable_share"].mean()), "ci_low": low, "ci_high": high,
                          "removable_share_confident": float(sub["removable_share_confident"].mean()),
                          "confidence": confidence,
                          "interval": f"two-stage percentile bootstrap over seeds and inputs ({n_resamples} "
                                      "resamples)",
                          "ablation": sub["ablation"].iat[0], "prune_by": sub["prune_by"].iat[0]})
    return pd.concat([table, pd.DataFrame(extra, columns=REMOVABLE_COLUMNS)], ignore_index=True) if extra else table


def replicate_groups(models) -> dict[str, list[str]]:
    """Replicate group -> its members, from the models' names ``<group>@seed<s>`` (the protocol's ``seeds:``)."""
    groups: dict[str, list[str]] = {}
    for model in dict.fromkeys(str(m) for m in models):
        match = re.fullmatch(r"(.+)@seed\d+", model)
        if match:
            groups.setdefault(match.group(1), []).append(model)
    return {g: members for g, members in groups.items() if len(members) >= 2}


def finish_importance(tables: RunTables, statistics: TestOptions,
                      options: ImportanceOptions | Mapping | None, seed: int) -> dict[str, pd.DataFrame]:
    """The ``importance`` analysis' finish step: ``importance_seeds``, ``importance_pruning`` and
    ``importance_removable`` (module docstring). ``options``: the analysis' ImportanceOptions (or a mapping)."""
    from headstats.analyses import analysis_options

    options = analysis_options("importance", options, schema=ImportanceOptions)
    alpha = getattr(statistics, "alpha", 0.05)
    correction = getattr(statistics, "correction", "holm")
    confidence = getattr(statistics, "confidence", 0.95)
    out: dict[str, pd.DataFrame] = {}
    heads = tables.get(IMPORTANCE)
    if heads is not None and len(heads):  # the role claims read their permutations and seed here
        out[IMPORTANCE.name] = heads.assign(n_permutations=int(options.n_permutations), permutation_seed=int(seed))
    groups = replicate_groups(heads["model"]) if heads is not None and len(heads) else {}
    if groups:
        out[IMPORTANCE_SEEDS.name] = seed_tests(heads, groups, correction=correction, alpha=alpha,
                                                confidence=confidence)
    inputs = tables.get(IMPORTANCE_PRUNING_INPUTS)
    if inputs is not None and len(inputs):
        curve = pruning_curve(inputs, groups, confidence=confidence)
        out[IMPORTANCE_PRUNING.name] = curve
        out[IMPORTANCE_REMOVABLE.name] = removable_table(inputs, groups, curve=curve,
                                                         tolerance=options.prune_tolerance, confidence=confidence,
                                                         n_resamples=options.n_bootstrap, seed=seed)
    return out


# ---------------------------------------------------------------------------------------------- claims
