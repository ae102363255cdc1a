"""Pretrained against fine-tuned: what changed, head by head (Pande et al. 2021 section 6; Kovaleva et al. 2019).

The roles / comparison layer. It takes the tables of the layers below (scores, tests, role tables) and
the models themselves for the attention maps, and returns tidy tables:

- ``paired_tests``: per (dataset, role, layer, head), a paired test of the per-input change of the sieve
  bias score (:func:`headstats.stats.paired.paired_tests`);
- ``transitions``: per (dataset, layer, role), how many heads kept, gained and lost the role;
- ``role_changes``: per head, the roles held before and after, and which were gained or lost;
- ``heads_per_layer``: heads per role per layer before and after (the paper's figure);
- ``similarity``: per head, the cosine similarity of the two models' attention maps of the same input,
  averaged over inputs (Kovaleva et al. 2019; the collector :class:`..collect.AttentionSimilarity`, run in the
  study's forward passes);
- ``special_mass``: per model and head, the attention mass on [CLS], on [SEP] and on other tokens (the
  paper: after fine-tuning, attention to [SEP] falls and spreads to other tokens; the collector
  :class:`..collect.SpecialMass`);
- ``layer_summary``: which layers changed most.

Models are compared only when their tokenizers are identical (:func:`headstats.model.tokenizers.check_same_tokenizer`,
asked by the engine's runner before two models share a batch): otherwise the
"same input" is not the same sequence of positions, and no map or score can be paired.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from headstats.analyses.finetune_comparison.tables import (HEADS_PER_LAYER, LAYER_SUMMARY, PAIRED_TESTS, ROLE_CHANGES,
                                                           SIMILARITY, SPECIAL_MASS, SPECIAL_MASS_PER_LAYER,
                                                           TRANSITIONS)
from headstats.errors import HeadstatsError
from headstats.stats.paired import paired_tests
from headstats.tables.study_tables import heads_per_role_per_layer as _heads_per_role_per_layer
from headstats.tables.study_tables import role_columns

# ------------------------------------------------------------------------------------------- tokenizers


# ------------------------------------------------------------------------------------------------ roles


def _one_model(roles: pd.DataFrame, which: str) -> str:
    models = roles["model"].unique()
    if len(models) != 1:
        raise HeadstatsError(f"the {which} role table must hold one model, found {list(models)[:4]}")
    return str(models[0])


def _joined_roles(roles_before: pd.DataFrame, roles_after: pd.DataFrame,
                  roles: Sequence[str] | None) -> tuple[pd.DataFrame, list[str], str, str]:
    mb, ma = _one_model(roles_before, "before"), _one_model(roles_after, "after")
    cols = [c for c in role_columns(roles_before) if c in set(role_columns(roles_after))]
    if roles is not None:
        unknown = [r for r in roles if r not in cols]
        if unknown:
            raise HeadstatsError(f"roles {unknown} are not in both role tables (they have {cols})")
        cols = list(roles)
    keys = ["dataset", "layer", "head"]
    joined = roles_before[keys + cols].merge(roles_after[keys + cols], on=keys, suffixes=("_before", "_after"))
    return joined, cols, mb, ma


def role_transitions(roles_before: pd.DataFrame, roles_after: pd.DataFrame, *,
                     roles: Sequence[str] | None = None) -> pd.DataFrame:
    """Per (dataset, layer, role): heads that kept, gained and lost the role from before to after.

    Parameters
    ----------
    roles_before, roles_after : DataFrame
        Role tables (:func:`headstats.assignment.role_assignment.role_table`): ``model, dataset, layer, head``, one boolean
        column per role; one model each. Heads are matched by (dataset, layer, head).
    roles : sequence of str, optional
        The roles to count (default: the role columns the two tables share).

    Returns
    -------
    DataFrame
        ``model_before, model_after, dataset, layer, role, n_heads, before, after, kept, gained, lost,
        net`` where ``before``/``after`` count heads holding the role, ``kept`` both, ``gained`` after
        only, ``lost`` before only, ``net = after - before``.
    """
    joined, cols, mb, ma = _joined_roles(roles_before, roles_after, roles)
    frames = []
    for role in cols:
        tested = joined[f"{role}_before"].notna() | joined[f"{role}_after"].notna()  # NA: not tested there
        sub = joined[tested]
        b = sub[f"{role}_before"].fillna(False).astype(bool)
        a = sub[f"{role}_after"].fillna(False).astype(bool)
        part = pd.DataFrame({"dataset": sub["dataset"], "layer": sub["layer"], "before": b, "after": a,
                             "kept": b & a, "gained": ~b & a, "lost": b & ~a})
        agg = part.groupby(["dataset", "layer"], sort=True).agg(
            n_heads=("before", "size"), before=("before", "sum"), after=("after", "sum"), kept=("kept", "sum"),
            gained=("gained", "sum"), lost=("lost", "sum"),
        ).reset_index()
        agg.insert(2, "role", role)
        frames.append(agg)
    out = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
        columns=["dataset", "layer", "role", "n_heads", "before", "after", "kept", "gained", "lost"])
    for c in ("n_heads", "before", "after", "kept", "gained", "lost"):
        out[c] = out[c].astype(int)
    out["net"] = out["after"] - out["before"]
    out.insert(0, "model_before", mb)
    out.insert(1, "model_after", ma)
    return out.sort_values(["dataset", "role", "layer"], kind="stable").reset_index(drop=True)


def role_changes(roles_before: pd.DataFrame, roles_after: pd.DataFrame, *,
                 roles: Sequence[str] | None = None) -> pd.DataFrame:
    """Per head: the roles held before and after, those gained and lost (``+``-joined names), ``changed``."""
    joined, cols, mb, ma = _joined_roles(roles_before, roles_after, roles)
    before = joined[[f"{r}_before" for r in cols]].fillna(False).to_numpy(bool)
    after = joined[[f"{r}_after" for r in cols]].fillna(False).to_numpy(bool)
    names = np.array(cols, dtype=object)

    def join(mask: np.ndarray) -> list[str]:
        return ["+".join(names[row]) for row in mask]

    out = joined[["dataset", "layer", "head"]].copy()
    out.insert(0, "model_before", mb)
    out.insert(1, "model_after", ma)
    out["roles_before"] = join(before)
    out["roles_after"] = join(after)
    out["gained"] = join(after & ~before)
    out["lost"] = join(before & ~after)
    out["changed"] = (before != after).any(axis=1)
    return out.sort_values(["dataset", "layer", "head"], kind="stable").reset_index(drop=True)


def heads_per_role_per_layer_by_stage(roles_before: pd.DataFrame,
                                      roles_after: pd.DataFrame | None = None) -> pd.DataFrame:
    """Heads per role per layer, before and after (the paper's figure of pretrained vs fine-tuned).

    Returns :func:`headstats.assignment.role_assignment.heads_per_role_per_layer` of each table with a ``stage`` column
    (``before``/``after``): ``model, stage, dataset, layer, role, n_heads, n_total, share``.
    """
    frames = [_heads_per_role_per_layer(roles_before).assign(stage="before")]
    if roles_after is not None:
        frames.append(_heads_per_role_per_layer(roles_after).assign(stage="after"))
    out = pd.concat(frames, ignore_index=True)
    return out[["model", "stage", "dataset", "layer", "role", "n_heads", "n_total", "share"]]


# -------------------------------------------------------------------------------------- attention maps


def special_mass_per_layer(special: pd.DataFrame) -> pd.DataFrame:
    """Mean over the heads of a layer: ``model, dataset, layer, target, mass``."""
    return (special.groupby(["model", "dataset", "layer", "target"], sort=False)["mass_mean"].mean()
            .rename("mass").reset_index())


# ---------------------------------------------------------------------------------------------- summary


def change_direction(paired: pd.DataFrame) -> pd.Series:
    """``"up"``, ``"down"`` or ``""`` per row of a paired-tests table, from the estimate the test is about.

    A significant change (``reject``) is read from ``estimate`` -- the Hodges-Lehmann pseudo-median of the
    differences for ``wilcoxon``, the mean difference for ``t`` -- and its interval ``[ci_low, ci_high]``:
    up when the interval lies above 0 (or, where it does not decide, the estimate is positive), down when it
    lies below. Never from ``median_diff``: the median of the differences can have the other sign than the
    pseudo-median or the mean that the test rejected about.
    """
    est = paired["estimate"].to_numpy(float)
    low = paired["ci_low"].to_numpy(float) if "ci_low" in paired else np.full(len(paired), np.nan)
    high = paired["ci_high"].to_numpy(float) if "ci_high" in paired else np.full(len(paired), np.nan)
    with np.errstate(invalid="ignore"):
        up = (low > 0) | (~(high < 0) & (est > 0))
        down = (high < 0) | (~(low > 0) & (est < 0))
    sig = paired["reject"].fillna(False).astype(bool).to_numpy()
    return pd.Series(np.where(sig & up, "up", np.where(sig & down, "down", "")), index=paired.index)


def layer_change_summary(paired: pd.DataFrame, similarity: pd.DataFrame | None = None) -> pd.DataFrame:
    """Which layers changed most, per (model_after, dataset, layer).

    Columns: ``model_before, model_after, dataset, layer, n_tests, n_significant, share_significant`` (of
    head x role tests with ``reject``), ``n_heads``, ``heads_changed`` and ``share_heads_changed`` (heads
    with a significant change of at least one role), ``mean_abs_estimate`` (mean over tests of the absolute
    ``estimate`` the test is about: Hodges-Lehmann pseudo-median for ``wilcoxon``, mean difference for
    ``t``), ``n_up``/``n_down`` (significant increases/decreases, :func:`change_direction`),
    ``rank_significant`` and ``rank_abs_change`` (1 = changed most, within model and dataset), and
    ``cosine_mean`` (mean over the layer's heads, when ``similarity`` is given).
    """
    keys = ["model_before", "model_after", "dataset", "layer"]
    direction = change_direction(paired)
    p = paired.assign(
        abs_estimate=paired["estimate"].abs(),
        up=(direction == "up").to_numpy(),
        down=(direction == "down").to_numpy(),
    )
    out = p.groupby(keys, sort=True).agg(
        n_tests=("p_unc", lambda s: int(np.isfinite(s).sum())), n_significant=("reject", "sum"),
        mean_abs_estimate=("abs_estimate", "mean"), n_up=("up", "sum"), n_down=("down", "sum"),
    ).reset_index()
    heads = p.groupby([*keys, "head"], sort=True)["reject"].any().reset_index()
    per_layer = heads.groupby(keys, sort=True)["reject"].agg(n_heads="size", heads_changed="sum").reset_index()
    out = out.merge(per_layer, on=keys)
    out["share_significant"] = out["n_significant"] / out["n_tests"].where(out["n_tests"] > 0)
    out["share_heads_changed"] = out["heads_changed"] / out["n_heads"]
    grp = out.groupby(["model_after", "dataset"], sort=False)
    out["rank_significant"] = grp["share_significant"].rank(ascending=False, method="min").astype("Int64")
    out["rank_abs_change"] = grp["mean_abs_estimate"].rank(ascending=False, method="min").astype("Int64")
    if similarity is not None and len(similarity):
        cos = (similarity.groupby(["model_b", "dataset", "layer"])["cosine_mean"].mean().reset_index()
               .rename(columns={"model_b": "model_after"}))
        out = out.merge(cos, on=["model_after", "dataset", "layer"], how="left")
    else:
        out["cosine_mean"] = np.nan
    for c in ("n_significant", "n_up", "n_down", "heads_changed", "n_heads"):
        out[c] = out[c].astype(int)
    return out[[*keys, "n_tests", "n_significant", "share_significant", "n_heads", "heads_changed",
                "share_heads_changed", "mean_abs_estimate", "n_up", "n_down", "rank_significant",
                "rank_abs_change", "cosine_mean"]]


def _roles_by_model(roles_tables: pd.DataFrame | Mapping[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    if isinstance(roles_tables, pd.DataFrame):
        return {str(m): g.reset_index(drop=True) for m, g in roles_tables.groupby("model", sort=False)}
    return {str(k): v for k, v in roles_tables.items()}


def run_comparison(
    base_scores: pd.DataFrame,
    finetuned_scores: Mapping[str, pd.DataFrame],
    roles_tables: pd.DataFrame | Mapping[str, pd.DataFrame] | None,
    *,
    spec: Any,
    alpha: float = 0.05,
    attention: Mapping[str, pd.DataFrame] | None = None,
) -> dict[str, pd.DataFrame]:
    """All comparison tables of one :class:`..options.CompareSpec`.

    Parameters
    ----------
    base_scores : DataFrame
        The base model's scores table (all data sets).
    finetuned_scores : mapping
        Fine-tuned model name -> its scores table on the same inputs.
    roles_tables : DataFrame or mapping, optional
        Role tables (:func:`headstats.assignment.role_assignment.role_table`) of the base and fine-tuned models: one frame with a
        ``model`` column, or name -> frame. Without them there are no transition tables.
    spec : CompareSpec
        ``base``, ``finetuned``, ``datasets`` (None: every data set the base was scored on), ``test``,
        ``alternative``, ``correction``, ``family``, ``confidence``.
    alpha : float
        ``reject = p_corr <= alpha`` (the protocol's ``statistics.alpha``).
    attention : mapping, optional
        Tables of the similarity and special-mass collectors (``similarity``, ``special_mass``), concatenated
        over data sets and models, to include and summarise.

    Returns
    -------
    dict of str to DataFrame
        ``paired_tests``, ``layer_summary``, and when role tables are given ``transitions``,
        ``role_changes``, ``heads_per_layer``; with ``attention``: ``similarity``, ``special_mass``,
        ``special_mass_per_layer``.
    """
    datasets = list(spec.datasets) if spec.datasets else list(dict.fromkeys(base_scores["dataset"]))
    base = base_scores[base_scores["dataset"].isin(datasets)]
    paired, transitions, changes, per_layer = [], [], [], []
    roles = _roles_by_model(roles_tables) if roles_tables is not None else {}
    for name in spec.finetuned:
        if name not in finetuned_scores:
            raise HeadstatsError(f"no scores for fine-tuned model {name!r}; score it before comparing")
        after = finetuned_scores[name]
        after = after[after["dataset"].isin(datasets)]
        paired.append(paired_tests(base, after, test=spec.test, alternative=spec.alternative,
                                   correction=spec.correction, family=tuple(spec.family),
                                   confidence=spec.confidence, alpha=alpha))
        if spec.base in roles and name in roles:
            rb = roles[spec.base][roles[spec.base]["dataset"].isin(datasets)]
            ra = roles[name][roles[name]["dataset"].isin(datasets)]
            transitions.append(role_transitions(rb, ra))
            changes.append(role_changes(rb, ra))
            per_layer.append(heads_per_role_per_layer_by_stage(ra).assign(stage="after"))
    tables: dict[str, pd.DataFrame] = {PAIRED_TESTS.key: pd.concat(paired, ignore_index=True)}
    if transitions:
        rb = roles[spec.base][roles[spec.base]["dataset"].isin(datasets)]
        tables[TRANSITIONS.key] = pd.concat(transitions, ignore_index=True)
        tables[ROLE_CHANGES.key] = pd.concat(changes, ignore_index=True)
        tables[HEADS_PER_LAYER.key] = pd.concat([heads_per_role_per_layer_by_stage(rb), *per_layer], ignore_index=True)
    similarity = None
    if attention is not None:
        similarity = attention.get(SIMILARITY.key)
        if similarity is not None:
            similarity = similarity[similarity["dataset"].isin(datasets)
                                    & similarity["model_b"].isin(list(spec.finetuned))].reset_index(drop=True)
            tables[SIMILARITY.key] = similarity
        special = attention.get(SPECIAL_MASS.key)
        if special is not None:
            special = special[special["dataset"].isin(datasets)
                              & special["model"].isin([spec.base, *spec.finetuned])].drop_duplicates(
                ["model", "dataset", "layer", "head", "target"]).reset_index(drop=True)
            tables[SPECIAL_MASS.key] = special
            tables[SPECIAL_MASS_PER_LAYER.key] = special_mass_per_layer(special)
    tables[LAYER_SUMMARY.key] = layer_change_summary(tables[PAIRED_TESTS.key], similarity)
    return tables
