"""The comparison's finish step: for each ``compare:`` entry of a protocol, the paired per-head tests of the change
in scores (from the scores the study computed), role transitions, the per-head cosine similarity and [CLS]/[SEP]
mass the engine collected in the study's one pass (:mod:`headstats.analyses.finetune_comparison.collect`), and the
seed-level tables of a replicate group.

Modules: :mod:`.changes` (one comparison's per-input tables), :mod:`.replicates` (seeds as replicates) and
:mod:`.seed_evidence` (the evidence of the seed claims). Tables in, tables out: no torch, no matplotlib.
"""

from __future__ import annotations

from typing import Any, Mapping

import pandas as pd

from headstats.analyses.finetune_comparison.tables import SIMILARITY, SPECIAL_MASS
from headstats.tables.study_tables import MODELS, ROLES, SCORES


def finish_comparisons(tables: Mapping[str, pd.DataFrame], statistics: Any, options: Any,
                       seed: int = 0) -> dict[str, pd.DataFrame]:
    """The finish step of the analysis (:data:`headstats.analyses.Finish`): :func:`run_comparisons` of the
    ``compare:`` entries ``options`` on the tables the study hands it (its spec's ``reads``: the role table, the
    scores of the primary measure, the models) and the collected similarity and special mass; returns its tables
    by their keys (``PAIRED_TESTS.key`` ...), the collected ones replaced by the compared ones.
    ``statistics.alpha``: ``reject = p_corr <= alpha``."""
    models = tables[MODELS]
    replicate_of = {str(m): (None if pd.isna(g) else str(g)) for m, g in zip(models["model"], models["replicate_of"])}
    seeds = {str(m): s for m, s in zip(models["model"], models["finetune_seed"]) if s is not None and not pd.isna(s)}
    provenance = {str(m): p for m, p in zip(models["model"], models["provenance"])}
    attention = {spec.key: tables[spec] for spec in (SIMILARITY, SPECIAL_MASS) if spec in tables}
    out = run_comparisons(list(options or ()), tables[SCORES], tables[ROLES], attention or None,
                          alpha=statistics.alpha, replicate_of=replicate_of, seeds=seeds, provenance=provenance)
    return {**{key: None for key in attention}, **out}


def run_comparisons(
    compare: list,
    scores: pd.DataFrame,
    roles: pd.DataFrame,
    attention: Mapping[str, pd.DataFrame] | None = None,
    *,
    alpha: float = 0.05,
    replicate_of: Mapping[str, str | None] | None = None,
    seeds: Mapping[str, int] | None = None,
    provenance: Mapping[str, dict] | None = None,
) -> dict[str, pd.DataFrame]:
    """All comparison tables of a protocol, concatenated over its ``compare:`` entries.

    Parameters
    ----------
    compare : list of CompareSpec
        The protocol's ``compare:`` entries.
    scores : DataFrame
        The long scores table (:func:`headstats.study.scoring.long_frame`) of one attention measure (a ``measure``
        column, if any, is dropped); the compared models' rows are taken, with categories of theirs alone.
    roles : DataFrame
        The role table (:func:`headstats.assignment.role_assignment.role_table`) of every model and data set.
    attention : mapping, optional
        ``similarity`` and ``special_mass`` tables of the engine's jobs (:func:`..collect.plan`), concatenated.
    alpha : float
        ``reject = p_corr <= alpha`` (the protocol's ``statistics.alpha``).
    replicate_of : mapping, optional
        Model name -> its replicate group (None: none).
    seeds : mapping, optional
        Model name -> the seed of the fine-tuning that made it (models headstats fine-tuned).
    provenance : mapping, optional
        Model name -> provenance (``finetune.metrics``: the dev metrics of each seed).

    Returns
    -------
    dict
        Table name -> DataFrame (``paired_tests``, ``transitions``, ``role_changes``, ``heads_per_layer``,
        ``similarity``, ``special_mass``, ``special_mass_per_layer``, ``layer_summary``); empty when the
        protocol compares nothing. A comparison whose fine-tuned models include a replicate group (a recipe
        with ``seeds``) adds the seed-level tables of
        :func:`.replicate_comparison` (``seed_changes``, ``seed_per_seed``,
        ``seed_metrics``, ``seed_distance``, ``seed_layer_change``, ``seed_special_mass``,
        ``seed_transitions``, ``claims``).
    """
    if not compare:
        return {}
    from headstats.analyses.finetune_comparison.finish.changes import run_comparison

    replicate_of = replicate_of or {}
    scores = compared_scores(scores, {name for spec in compare for name in (spec.base, *spec.finetuned)})
    collected: dict[str, list[pd.DataFrame]] = {}
    for spec in compare:
        by_model = {name: scores[scores["model"] == name] for name in spec.finetuned}
        base_scores = scores[scores["model"] == spec.base]
        tables = run_comparison(
            base_scores, by_model, roles, spec=spec, alpha=alpha, attention=_to_base(attention, spec.base),
        )
        for group, members in spec.replicate_members(replicate_of).items():
            tables.update(_replicate_tables(spec, group, members, base_scores, by_model, roles, attention,
                                            seeds or {}, provenance, alpha=alpha))
        for key, table in tables.items():
            collected.setdefault(key, []).append(table)
    return {key: pd.concat(frames, ignore_index=True) for key, frames in collected.items()}


def compared_scores(scores: pd.DataFrame, models: set[str]) -> pd.DataFrame:
    """The rows of ``models`` of a long scores table of one measure (a ``measure`` column dropped), each categorical
    key column with only the categories left: the table :func:`headstats.study.scoring.long_frame` makes of those
    models' arrays alone."""
    if "measure" in scores.columns:  # the comparisons are of one measure, the primary (the study hands it those)
        from headstats.measures import attention_measures, on_measure

        scores = on_measure(scores, attention_measures(scores)[0]).drop(columns="measure")
    part = scores[scores["model"].isin(models)].reset_index(drop=True)
    for column in part.columns:
        if isinstance(part[column].dtype, pd.CategoricalDtype):
            part[column] = part[column].cat.remove_unused_categories()
    return part


def _to_base(attention: Mapping[str, pd.DataFrame] | None, base: str) -> Mapping[str, pd.DataFrame] | None:
    """The attention tables without the seed-to-seed similarity pairs (those are not base vs fine-tuned)."""
    if attention is None or SIMILARITY.key not in attention:
        return attention
    sim = attention[SIMILARITY.key]
    return {**attention, SIMILARITY.key: sim[sim["model_a"] == base].reset_index(drop=True)}


def _replicate_tables(spec, group, members, base_scores, by_model, roles, attention, seeds, provenance, *, alpha):
    """:func:`.replicates.replicate_comparison` of one group, on the comparison's data sets."""
    from headstats.analyses.finetune_comparison.finish.replicates import replicate_comparison

    datasets = list(spec.datasets) if spec.datasets else list(dict.fromkeys(base_scores["dataset"]))
    base = base_scores[base_scores["dataset"].isin(datasets)]
    seeds_scores = {m: by_model[m][by_model[m]["dataset"].isin(datasets)] for m in members}
    role_frames = None
    if roles is not None and len(roles):
        role_frames = {str(m): g[g["dataset"].isin(datasets)].reset_index(drop=True)
                       for m, g in roles.groupby("model", sort=False) if m in (spec.base, *members)}
    att = None
    if attention is not None:
        att = {k: v[v["dataset"].isin(datasets)] for k, v in attention.items()}
    seeds = {m: seeds[m] for m in members if m in seeds}
    metrics = None
    if provenance is not None:
        metrics = {m: (provenance.get(m, {}).get("finetune") or {}).get("metrics") for m in members}
    return replicate_comparison(base, seeds_scores, spec=spec, base=spec.base, group=group, roles=role_frames,
                                attention=att, metrics=metrics, seeds=seeds, alpha=alpha)
