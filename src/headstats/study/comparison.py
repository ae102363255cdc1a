"""The comparison step of a study: for each ``compare:`` entry of a protocol, the paired per-head tests of
the change in scores (from the scores already computed), role transitions, and the per-head cosine
similarity and [CLS]/[SEP] mass, which the engine collects in the study's one pass over every model.

Sits between the study runner and the comparison layer (:mod:`headstats.assignment.changes`); refuses to compare
models whose tokenizers differ before any model is loaded.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import pandas as pd

from headstats.model.tokenizers import check_same_tokenizer
from headstats.stats.seeds import seed_pairs


def check_comparable(protocol, sources: dict[str, str], *, cache=None) -> None:
    """Refuse, before any scoring, to compare models whose tokenizers split text differently.

    The tokenizers' fingerprints are those of the models' descriptions
    (:func:`headstats.study.memo.memoised_description`), taken from the state cache ``cache`` (a folder, or
    None) when an earlier run described the same model folders.
    """
    if not protocol.compare:
        return
    from headstats.engine.cache import StateCache
    from headstats.study.memo import memoised_description

    store = StateCache(cache) if cache is not None else None
    specs = {m.name: m for m in protocol.models}
    fingerprints: dict[str, str] = {}

    def fingerprint(name: str) -> str:
        if name not in fingerprints:
            described, _ = memoised_description(sources[name], revision=specs[name].revision, device=protocol.device,
                                                dtype=protocol.dtype, cache=store)
            fingerprints[name] = described["vocab_sha256"]
        return fingerprints[name]

    for spec in protocol.compare:
        for name in spec.finetuned:
            check_same_tokenizer(fingerprint(spec.base), fingerprint(name), names=[spec.base, name])


def comparison_jobs(protocol, datasets: Sequence[str], measure: dict | None = None) -> list:
    """The engine jobs of a protocol's comparisons: the [CLS]/[SEP] mass of every compared model and the
    attention similarity of every (base, fine-tuned) pair, on each compared data set; ``measure``: what every
    job adds to its options for the scoring's attention measure (:func:`headstats.measures.measure_options`).

    They run in the same forward passes as the scores (:class:`headstats.engine.runner.Runner`): a
    comparison costs no pass of its own.
    """
    if not protocol.compare:
        return []
    from headstats.analyses.similarity.collect import AttentionSimilarity
    from headstats.analyses.special_mass.collect import SpecialMass
    from headstats.engine.runner import Job

    mass: dict[tuple[str, str], None] = {}
    pairs: dict[tuple[str, str, str], None] = {}
    for spec in protocol.compare:
        for dataset in spec.datasets or list(datasets):
            for name in (spec.base, *spec.finetuned):
                mass[(name, dataset)] = None
            for name in spec.finetuned:
                pairs[(spec.base, name, dataset)] = None
            for members in replicate_members(protocol, spec).values():  # seed-to-seed distance
                for a, b in seed_pairs(members):
                    pairs[(a, b, dataset)] = None
    measure = dict(measure or {})
    jobs = [Job(SpecialMass, (model,), dataset, dict(measure), name="special_mass") for model, dataset in mass]
    jobs += [Job(AttentionSimilarity, (base, name), dataset, dict(measure), name="similarity")
             for base, name, dataset in pairs]
    return jobs


def replicate_members(protocol, spec) -> dict[str, list[str]]:
    """The replicate groups among a comparison's fine-tuned models: group -> members (two or more seeds)."""
    groups: dict[str, list[str]] = {}
    by_name = {m.name: m for m in protocol.models}
    for name in spec.finetuned:
        group = by_name[name].replicate_of if name in by_name else None
        if group is not None:
            groups.setdefault(group, []).append(name)
    return {g: members for g, members in groups.items() if len(members) >= 2}


def run_comparisons(
    protocol,
    scores: pd.DataFrame | list,
    roles: pd.DataFrame,
    attention: Mapping[str, pd.DataFrame] | None = None,
    provenance: Mapping[str, dict] | None = None,
) -> dict[str, pd.DataFrame]:
    """All comparison tables of a protocol, concatenated over its ``compare:`` entries.

    Parameters
    ----------
    protocol : Protocol
    scores : DataFrame or list of MeasureArray
        The scores of every model and data set (the long table is made only for the compared models).
    roles : DataFrame
        The role table (:func:`headstats.assignment.role_assignment.role_table`) of every model and data set.
    attention : mapping, optional
        ``similarity`` and ``special_mass`` tables of the engine's :func:`comparison_jobs`, concatenated.
    provenance : mapping, optional
        Model name -> provenance (``finetune.metrics``: the dev metrics of each seed).

    Returns
    -------
    dict
        Table name -> DataFrame (``paired_tests``, ``transitions``, ``role_changes``, ``heads_per_layer``,
        ``similarity``, ``special_mass``, ``special_mass_per_layer``, ``layer_summary``); empty when the
        protocol compares nothing. A comparison whose fine-tuned models include a replicate group (a recipe
        with ``seeds``) adds the seed-level tables of
        :func:`headstats.assignment.replicates.replicate_comparison` (``seed_changes``, ``seed_per_seed``,
        ``seed_metrics``, ``seed_distance``, ``seed_layer_change``, ``seed_special_mass``,
        ``seed_transitions``, ``claims``).
    """
    if not protocol.compare:
        return {}
    from headstats.assignment.changes import run_comparison

    if not isinstance(scores, pd.DataFrame):
        from headstats.study.scoring import long_frame

        compared = {name for spec in protocol.compare for name in (spec.base, *spec.finetuned)}
        scores = long_frame([array for array in scores if array.model in compared])
    if "measure" in scores.columns:  # the comparisons are of one measure, the primary (the study hands it those)
        from headstats.measures import attention_measures, on_measure

        scores = on_measure(scores, attention_measures(scores)[0]).drop(columns="measure")

    collected: dict[str, list[pd.DataFrame]] = {}
    for spec in protocol.compare:
        by_model = {name: scores[scores["model"] == name] for name in spec.finetuned}
        base_scores = scores[scores["model"] == spec.base]
        tables = run_comparison(
            base_scores, by_model, roles, spec=spec, alpha=protocol.statistics.alpha,
            attention=_to_base(attention, spec.base),
        )
        for group, members in replicate_members(protocol, spec).items():
            tables.update(_replicate_tables(protocol, spec, group, members, base_scores, by_model, roles,
                                            attention, provenance))
        for key, table in tables.items():
            collected.setdefault(key, []).append(table)
    return {key: pd.concat(frames, ignore_index=True) for key, frames in collected.items()}


def _to_base(attention: Mapping[str, pd.DataFrame] | None, base: str) -> Mapping[str, pd.DataFrame] | None:
    """The attention tables without the seed-to-seed similarity pairs (those are not base vs fine-tuned)."""
    if attention is None or "similarity" not in attention:
        return attention
    sim = attention["similarity"]
    return {**attention, "similarity": sim[sim["model_a"] == base].reset_index(drop=True)}


def _replicate_tables(protocol, spec, group, members, base_scores, by_model, roles, attention, provenance):
    """:func:`headstats.assignment.replicates.replicate_comparison` of one group, on the comparison's data sets."""
    from headstats.assignment.replicates import replicate_comparison

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
    specs = {m.name: m for m in protocol.models}
    seeds = {m: specs[m].finetune.seed for m in members if m in specs and specs[m].finetune is not None}
    metrics = None
    if provenance is not None:
        metrics = {m: (provenance.get(m, {}).get("finetune") or {}).get("metrics") for m in members}
    return replicate_comparison(base, seeds_scores, spec=spec, base=spec.base, group=group, roles=role_frames,
                                attention=att, metrics=metrics, seeds=seeds, alpha=protocol.statistics.alpha)
